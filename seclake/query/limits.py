"""How costly a query may be (query-semantics.md, "Errors").

Parsing checks length, clause count, nesting and pattern length; nothing
depends on the data searched (patterns and string ranges run as automata
with no expansion limit, so no limit can tell a restricted caller about
values it may not see). Past a limit the query fails with
``LimitExceeded``; nothing runs partially.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from seclake.errors import LimitExceeded

if TYPE_CHECKING:
    from seclake.settings import Settings


@dataclass(frozen=True)
class QueryLimits:
    max_query_length: int = 8192
    max_clauses: int = 1024
    max_pattern_length: int = 256
    # Not a setting: deeper trees are never written by people, and every
    # consumer of the tree recurses; this keeps them far from Python's limit.
    max_depth: int = 64

    @classmethod
    def from_settings(cls, settings: Settings) -> QueryLimits:
        return cls(
            max_query_length=settings.max_query_length,
            max_clauses=settings.max_clauses,
            max_pattern_length=settings.max_pattern_length,
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

    def check_pattern(self, kind: str, pattern: str) -> None:
        if len(pattern) > self.max_pattern_length:
            raise LimitExceeded(f"{kind} pattern length", len(pattern), self.max_pattern_length)
