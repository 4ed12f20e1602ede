"""The piped query as a tree: expressions and commands, with their positions.

Every node keeps ``pos`` and ``end``, offsets into the whole query string
(head included), so an error names the place, and an unnamed aggregation or
BY expression takes its own text as its column name (ES|QL's rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Duration:
    """A time span literal (``1 hour``, ``15 minutes``, ``1 month``).

    Months and years are calendar units (``months``); the others are a fixed
    number of milliseconds (``ms``). ``week`` is 7 days, aligned on Monday
    where it truncates a date (as Elasticsearch's calendar week)."""

    ms: int = 0
    months: int = 0
    week: bool = False


# -- expressions ----------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    pos: int = field(kw_only=True)
    end: int = field(kw_only=True)


@dataclass(frozen=True)
class Literal(Expr):
    value: object  # str, int, float, bool, None or Duration


@dataclass(frozen=True)
class Field(Expr):
    """A name: a column made by an earlier command, or a record field."""

    name: str


@dataclass(frozen=True)
class Call(Expr):
    name: str  # upper case
    args: tuple[Expr, ...]
    star: bool = False  # COUNT(*)


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # "-" or "NOT"
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    op: str  # + - * / % == != < <= > >= AND OR
    left: Expr
    right: Expr


@dataclass(frozen=True)
class IsNull(Expr):
    operand: Expr
    negated: bool


@dataclass(frozen=True)
class In(Expr):
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool


@dataclass(frozen=True)
class Like(Expr):
    operand: Expr
    pattern: str
    pattern_pos: int
    negated: bool
    regex: bool  # RLIKE: a Lucene regular expression


# -- commands -------------------------------------------------------------


@dataclass(frozen=True)
class Named:
    """``name = expr``, or an expression named by its own text."""

    name: str
    expr: Expr
    pos: int
    where: Expr | None = None  # STATS x = agg WHERE cond: the rows the aggregations of x count


@dataclass(frozen=True)
class Command:
    pos: int = field(kw_only=True)


@dataclass(frozen=True)
class Where(Command):
    condition: Expr


@dataclass(frozen=True)
class Eval(Command):
    columns: tuple[Named, ...]


@dataclass(frozen=True)
class Stats(Command):
    aggregates: tuple[Named, ...]
    groups: tuple[Named, ...]


@dataclass(frozen=True)
class SortKey:
    expr: Expr
    descending: bool
    nulls_first: bool


@dataclass(frozen=True)
class Sort(Command):
    keys: tuple[SortKey, ...]


@dataclass(frozen=True)
class Limit(Command):
    count: int


@dataclass(frozen=True)
class NamePattern:
    """A column name in KEEP/DROP/RENAME; ``*`` in it is a wildcard."""

    text: str
    pos: int


@dataclass(frozen=True)
class Keep(Command):
    names: tuple[NamePattern, ...]


@dataclass(frozen=True)
class Drop(Command):
    names: tuple[NamePattern, ...]


@dataclass(frozen=True)
class Rename(Command):
    pairs: tuple[tuple[NamePattern, NamePattern], ...]


def children(node: Expr) -> tuple[Expr, ...]:
    """The sub-expressions of ``node``, for walks that need no recursion by type."""
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, IsNull | Like):
        return (node.operand,)
    if isinstance(node, In):
        return (node.operand, *node.items)
    return ()
