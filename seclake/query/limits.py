"""How costly a query may be (query-semantics.md, "Errors").

Parsing checks length, clause count, nesting, pattern length and the
memory the patterns compile to (``cost``, estimated from the text); nothing
depends on the data searched (patterns and string ranges run as automata
with no expansion limit, so no limit can tell a restricted caller about
values it may not see). Past a limit the query fails with
``LimitExceeded``; nothing runs partially.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from seclake.errors import LimitExceeded
from seclake.query import ast
from seclake.query.cost import query_bytes

if TYPE_CHECKING:
    from seclake.settings import Settings


@dataclass(frozen=True)
class QueryLimits:
    max_query_length: int = 8192
    max_clauses: int = 1024
    max_pattern_length: int = 256
    # What the query's patterns may take compiled (``cost.query_bytes``): an
    # OR of hundreds of leading wildcards compiles to gigabytes of automata.
    max_query_memory_mb: int = 64
    # Not a setting: deeper trees are never written by people, and every
    # consumer of the tree recurses; this keeps them far from Python's limit.
    max_depth: int = 64

    @classmethod
    def from_settings(cls, settings: Settings) -> QueryLimits:
        return cls(
            max_query_length=settings.max_query_length,
            max_clauses=settings.max_clauses,
            max_pattern_length=settings.max_pattern_length,
            max_query_memory_mb=settings.max_query_memory_mb,
        )

    def check_length(self, search_str: str) -> None:
        if len(search_str) > self.max_query_length:
            raise LimitExceeded("searchStr length", len(search_str), self.max_query_length)

    def check_clauses(self, count: int) -> None:
        if count > self.max_clauses:
            raise LimitExceeded("number of query clauses", count, self.max_clauses)

    def check_depth(self, depth: int) -> None:
        if depth > self.max_depth:
            raise LimitExceeded("query nesting depth", depth, self.max_depth)

    def check_memory(self, node: ast.Node) -> None:
        estimate = query_bytes(node)
        if estimate > self.max_query_memory_mb << 20:
            raise LimitExceeded(
                "estimated MB the query's wildcards, regexes and string ranges compile to", -(-estimate >> 20), self.max_query_memory_mb
            )

    def check_pattern(self, kind: str, pattern: str) -> None:
        if len(pattern) > self.max_pattern_length:
            raise LimitExceeded(f"{kind} pattern length", len(pattern), self.max_pattern_length)
