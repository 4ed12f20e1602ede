"""The query classes of the benchmark, and the one result shape every engine answers in.

A *bundle* is what a search screen asks for: the exact total, the top 20 by
``@timestamp`` desc (ties by docId desc) at offset 0 and at offset 1000, and
three terms facets of 10 buckets. The issue names the facets ``@sender``,
``@fields.action`` and ``@fields.dip``; in the event data the destination
address of a firewall session is ``@fields.dstip`` (``dip`` is the flow
field), so the third facet is ``@fields.dstip`` and Q4 reads
``action:deny AND NOT dstport:443`` (docs/benchmarks.md has the mapping).

Every class names, besides its Lucene string for seclake, what the raw
tantivy floor and the SQL peers run for it (seclake/bench/raw.py,
seclake/bench/peers.py): the same records, the same semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seclake.bench.data import DAY_MS, END_MS
from seclake.demo.vocabulary import world

FACETS = ("@sender", "@fields.action", "@fields.dstip")
FACET_SIZE = 10
PAGE = 20
OFFSETS = (0, 1000)

# The busiest workstation of the first tenant (the first value of its Zipf draw).
_ACME = world().tenants[0]
HOT_IP = _ACME.workstation_ips[_ACME.ws.values[0]]


@dataclass(frozen=True)
class QueryClass:
    name: str
    title: str
    lucene: str
    days: int = 7  # the window ends at the data's end
    kind: str = "bundle"  # bundle | histogram | timeline | summary
    needle: bool = False
    # What the peers and the floor run (keys understood by peers.py and raw.py).
    spec: dict = field(default_factory=dict)

    def window(self, end_ms: int = END_MS) -> tuple[int, int]:
        """Inclusive [from, to] of the class's time range."""
        return end_ms - self.days * DAY_MS, end_ms - 1

    @property
    def engines(self) -> tuple[str, ...]:
        if self.kind == "summary":
            return ("http", "engine")
        if self.kind == "timeline":
            return ("http", "engine", "raw")
        return ("http", "engine", "raw", "duckdb", "sqlite")


CLASSES: tuple[QueryClass, ...] = (
    QueryClass("Q1", "match all", "", spec={"op": "all"}),
    QueryClass("Q2", "rare word (needle)", "7Q2M1ZK", needle=True, spec={"op": "word", "word": "7q2m1zk"}),
    QueryClass("Q3", "field term (one IP)", f"srcip:{HOT_IP}", spec={"op": "kw", "column": "srcip", "value": HOT_IP}),
    QueryClass("Q4", "action:deny AND NOT dstport:443", "action:deny AND NOT dstport:443",
               spec={"op": "deny_not_443"}),
    QueryClass("Q5", "phrase", '"failed password"', spec={"op": "phrase", "words": ["failed", "password"]}),
    QueryClass("Q6", "wildcard on a keyword", "query:*.microsoft.com",
               spec={"op": "suffix", "column": "query", "suffix": ".microsoft.com"}),
    QueryClass("Q7", "numeric range (numbers stored as strings)", "sentbyte:[100000 TO *]",
               spec={"op": "ge", "column": "sentbyte", "value": 100000}),
    QueryClass("Q8", "rare word over 30 days (needle)", "sekurlsa", days=30, needle=True,
               spec={"op": "word", "word": "sekurlsa"}),
    QueryClass("CIDR", "CIDR block", 'dstip:"10.0.0.0/8"',
               spec={"op": "cidr", "column": "dstip", "lo": (10 << 24), "hi": (10 << 24) | 0xFFFFFF,
                     "network": "10.0.0.0/8"}),
    QueryClass("HIST", "date histogram (hourly, 7 days)", "", kind="histogram", spec={"op": "all"}),
    QueryClass("TIME", "timeline search (ds/fsm_behavior_search)", "", days=30, kind="timeline"),
    QueryClass("SUMM", "summary search (ds/behavior_summary_search)", "NOT status:resolved", days=30,
               kind="summary"),
)

BY_NAME = {c.name: c for c in CLASSES}
TIMELINE_FACETS = ("behavior", "key")
SUMMARY_FACETS = ("scoreLevel", "behaviors")


@dataclass
class Answer:
    """What one engine answered for one class: compared across engines."""

    total: int
    pages: dict[int, list] = field(default_factory=dict)  # offset -> ids, best first
    facets: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # field -> [(key, count)]
    histogram: list[tuple[int, int]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"total": self.total, "pages": {str(k): v for k, v in self.pages.items()},
                "facets": {k: [list(b) for b in v] for k, v in self.facets.items()},
                "histogram": [list(b) for b in self.histogram]}
