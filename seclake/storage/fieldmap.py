"""Which tantivy field holds which record path, in one split.

Every split shares a few fixed fields, and gets typed per-path fields for the
paths its records actually hold (numbers, IP addresses, text). Splits are
immutable, so the map is decided once when a split is written and stored
beside it; queries compile against each split's own map.

Fixed fields:
    docid  u64   fast, indexed: the record id (ties in sorting, fetch by id)
    ts     i64   fast, indexed: the dataset's time field, epoch ms
    src    bytes stored: the record as JSON, returned as _source
    kw     raw terms "<path>\\0<keyword>": term, wildcard, regex, string range
    fr     raw terms "<path>\\0<keyword>\\0<spelling>": facets (one per
           distinct keyword per record, so counts are exact)
    ex     raw terms "<path>": existence, for every leaf path and its parents
    all    text: the default field (message and every scalar value)
Per-path fields: t<i> text, n<i> f64 (fast, indexed), ip<i> IP address.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEP = "\x00"
# Keyword terms longer than this are cut; queries cut their values the same
# way, so very long values still match themselves.
MAX_TERM_CHARS = 2048
# A split keeps typed fields for at most this many paths of each kind; values
# of further paths are still found by term, wildcard and existence queries.
MAX_TYPED_PATHS = 1024

TOKENIZER = "seclake_tokens"


def cut(term: str) -> str:
    return term[:MAX_TERM_CHARS]


@dataclass
class FieldMap:
    numbers: dict[str, str] = field(default_factory=dict)
    ips: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def add_number(self, path: str) -> None:
        if path not in self.numbers and len(self.numbers) < MAX_TYPED_PATHS:
            self.numbers[path] = f"n{len(self.numbers)}"

    def add_ip(self, path: str) -> None:
        if path not in self.ips and len(self.ips) < MAX_TYPED_PATHS:
            self.ips[path] = f"ip{len(self.ips)}"

    def add_text(self, path: str) -> None:
        if path not in self.texts and len(self.texts) < MAX_TYPED_PATHS:
            self.texts[path] = f"t{len(self.texts)}"

    def to_json(self) -> dict:
        return {"numbers": self.numbers, "ips": self.ips, "texts": self.texts}

    @classmethod
    def from_json(cls, data: dict) -> "FieldMap":
        return cls(numbers=dict(data["numbers"]), ips=dict(data["ips"]), texts=dict(data["texts"]))
