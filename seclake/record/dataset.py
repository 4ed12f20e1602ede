"""The datasets seclake stores, and how field names resolve in each.

A query names fields as users write them; ``Dataset.resolve`` turns a name
into the record path it means (query-semantics.md, "Fields").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Dataset:
    name: str
    time_field: str
    # Fields analyzed as text (tokenized); every other string is a keyword.
    text_fields: frozenset[str]
    # Fields that hold epoch milliseconds and accept dates and date math.
    date_fields: frozenset[str]
    default_sort: str
    # Names that stand at the top of a record; any other bare name gets
    # ``implicit_prefix`` (events and flows: "@fields.").
    top_level: frozenset[str] = frozenset()
    implicit_prefix: str = ""
    # Alternative spellings of a path prefix (flows: "@metaflow.flow.").
    aliases: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def resolve(self, name: str) -> str:
        for alias, target in self.aliases:
            if name == alias.rstrip(".") :
                return target.rstrip(".")
            if name.startswith(alias):
                return target + name[len(alias):]
        if not self.implicit_prefix:
            return name
        head = name.split(".", 1)[0]
        if name.startswith("@") or head in self.top_level:
            return name
        return self.implicit_prefix + name

    def is_text(self, path: str) -> bool:
        return path in self.text_fields

    def is_date(self, path: str) -> bool:
        return path in self.date_fields


_EVENT_TOP = frozenset(
    {"@message", "@timestamp", "@sender", "@source", "@facility", "@customer", "@type", "@tags", "@fields"}
)

EVENTS = Dataset(
    name="event",
    time_field="@timestamp",
    text_fields=frozenset({"@message"}),
    date_fields=frozenset({"@timestamp"}),
    default_sort="@timestamp",
    top_level=_EVENT_TOP,
    implicit_prefix="@fields.",
)

FLOWS = Dataset(
    name="flow",
    time_field="@timestamp",
    text_fields=frozenset({"@message"}),
    date_fields=frozenset({"@timestamp"}),
    default_sort="@timestamp",
    top_level=_EVENT_TOP,
    implicit_prefix="@fields.",
    aliases=(("@metaflow.flow.", "@fields."),),
)

BEHAVIORS = Dataset(
    name="behavior",
    time_field="timestamp",
    text_fields=frozenset({"description"}),
    date_fields=frozenset({"timestamp"}),
    default_sort="timestamp",
)

SUMMARIES = Dataset(
    name="summary",
    time_field="from",
    text_fields=frozenset(),
    date_fields=frozenset({"from", "to", "updatedOn", "comments.createdOn"}),
    default_sort="riskScore",
)

# Audit records (ds/audit_search): createdOn (epoch ms), kind, username,
# call, client, outcome, status, durationMs, detail. ``user`` names username.
AUDIT = Dataset(
    name="audit",
    time_field="createdOn",
    # action_info and error repeat detail under the clients' names.
    text_fields=frozenset({"detail", "action_info", "error"}),
    date_fields=frozenset({"createdOn"}),
    default_sort="createdOn",
    aliases=(("user.", "username."),),
)

DATASETS: dict[str, Dataset] = {d.name: d for d in (EVENTS, FLOWS, BEHAVIORS, SUMMARIES, AUDIT)}


def time_of(source: dict[str, Any], dataset: Dataset) -> int:
    """A record's time for the index's ``ts`` (a 64-bit integer): 0 where it
    is not a number that fits (NaN, infinite, past 2**63), as where it is
    missing; a record the index cannot take would fail its whole split.
    Here, not with the splits: the parse workers place records by day too."""
    value = source.get(dataset.time_field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -_I64 <= value < _I64:
        return 0
    return int(value)


_I64 = 2**63
