"""What a query costs in memory once compiled: the estimate behind the
per-query limit and the byte-bounded caches of parsed and compiled queries.

Measured with tantivy-py 0.27 (tantivy-fst builds a DFA per pattern, eagerly):
a case-insensitive ``.*word.*`` costs about 170 KB plus 9 KB per character
of its regex, and tantivy refuses an automaton past 1000 states (about
2.5 MB). A string range's regex is long and costs the same way. Anchored
prefixes and exact patterns cost next to nothing, but the estimate does not
tell them apart: it errs high, never low. RE2 programs (the in-memory
matcher) are far smaller than tantivy's automata, so the same figure bounds
them too.

The estimate reads the query tree only, never the data, so the limit it
feeds answers the same whatever any customer's splits hold.
"""

from __future__ import annotations

from seclake.query import ast
from seclake.query.pattern import range_regex

PATTERN_BASE = 200_000
PATTERN_PER_CHAR = 10_000
PATTERN_MAX = 2_600_000
NODE_BYTES = 1_000
# luqum's tree of a query text: measured 54 bytes per character on an
# OR of 830 wildcards; rounded up.
PARSED_PER_CHAR = 64


def pattern_bytes(regex: str) -> int:
    """Memory one compiled pattern may take, by the length of its regex."""
    return min(PATTERN_BASE + PATTERN_PER_CHAR * len(regex), PATTERN_MAX)


def query_bytes(node: ast.Node) -> int:
    """Memory the whole tree may take compiled (its patterns' automata and one
    object per node); iterative, so a deep tree costs no recursion."""
    total = 0
    stack: list[ast.Node] = [node]
    while stack:
        current = stack.pop()
        total += NODE_BYTES
        if isinstance(current, ast.Wildcard):
            total += pattern_bytes(current.regex())
        elif isinstance(current, ast.Regex):
            total += pattern_bytes(current.pattern)
        elif isinstance(current, ast.Contains):
            # An automaton per wildcard it compiles to (tantivy_compiler): at
            # most a leading and a trailing one, each no longer than the value.
            total += 2 * pattern_bytes(current.value)
        elif isinstance(current, ast.Range) and current.kind == "string":
            regex = range_regex(current.lo, current.hi, current.include_lo, current.include_hi)  # type: ignore[arg-type]
            total += pattern_bytes(regex or "")
        elif isinstance(current, (ast.And, ast.Or)):
            stack.extend(current.children)
        elif isinstance(current, ast.Not):
            stack.append(current.child)
    return total


def parsed_bytes(search_str: str) -> int:
    """Memory luqum's tree of a query text may take."""
    return NODE_BYTES + PARSED_PER_CHAR * len(search_str)
