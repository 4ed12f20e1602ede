"""Expressions compiled to Python closures over one row (a dict).

``compile_expr(node, scope)`` returns ``(fn, kind)``: ``fn(row)`` is the
value, ``kind`` is ``"date"``, ``"span"`` (a time span literal) or None;
whether a value is a date is a property of the expression (a date field,
DATE_TRUNC, NOW()...), so dates travel as plain epoch milliseconds.

Null semantics are ES|QL's: a missing field is null; arithmetic, comparison
and single-value functions of null are null, and so are single-value
functions of a multi-valued field (a list); AND/OR are three-valued; WHERE
keeps a row only when its condition is true. LIKE and RLIKE match in
linear time (RE2, seclake.query.pattern), never with Python's ``re``.
"""

from __future__ import annotations

import ipaddress
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Protocol

from seclake.analytics import scalars as s
from seclake.analytics import tree as t
from seclake.errors import LimitExceeded, QueryError
from seclake.query import ast as lucene_ast
from seclake.query.pattern import full_matcher, translate
from seclake.record.value import as_ip, ip_in_network

Fn = Callable[[dict], Any]

MAX_STRING = 1 << 20  # characters of a string an expression makes
MAX_PATTERNS = 128  # LIKE/RLIKE patterns in one query

AGGREGATES = frozenset(
    {"COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX", "MEDIAN", "PERCENTILE", "VALUES", "TOP"}
)


class Scope(Protocol):
    now: int
    patterns: int  # LIKE/RLIKE patterns compiled so far

    def resolve(self, name: str, pos: int) -> tuple[str, str | None]:
        """The row key a name reads and its kind; QueryError for an unknown column."""


def compile_expr(node: t.Expr, scope: Scope) -> tuple[Fn, str | None]:
    """``(fn, kind)``: kind is "date", "span", a column type known from the
    expression ("keyword", "long", "double", "boolean"), or None (the values say)."""
    return _Compiler(scope).expr(node)


def is_aggregate(node: t.Expr) -> bool:
    return isinstance(node, t.Call) and node.name in AGGREGATES


def constant(node: t.Expr, what: str) -> object:
    """The value of a literal argument (``-5`` included); QueryError otherwise."""
    if isinstance(node, t.Literal):
        return node.value
    if isinstance(node, t.Unary) and node.op == "-" and isinstance(node.operand, t.Literal):
        v = node.operand.value
        if type(v) in (int, float):
            return -v
    raise QueryError(f"{what} must be a constant", node.pos, "a literal value")


@dataclass
class _Compiler:
    scope: Scope

    def expr(self, node: t.Expr) -> tuple[Fn, str | None]:
        method = getattr(self, "_" + type(node).__name__)
        return method(node)

    # leaves -------------------------------------------------------------------
    def _Literal(self, node: t.Literal):
        v = node.value
        if isinstance(v, t.Duration):
            return (lambda row: v), "span"
        # A literal's type is what it is written as: "443" is a keyword (in a column).
        kind = {str: "keyword", bool: "boolean", int: "long", float: "double"}.get(type(v))
        return (lambda row: v), kind

    def _Field(self, node: t.Field):
        key, kind = self.scope.resolve(node.name, node.pos)
        if kind == "raw_date":  # a record's date field: ISO text or epoch ms -> ms

            def read_date(row):
                v = row.get(key)
                if type(v) is list:
                    return [s.to_ms(x) for x in v]
                return s.to_ms(v)

            return read_date, "date"

        def read(row):
            return row.get(key)  # records are flat: a value is a scalar or a list

        return read, kind

    # operators ----------------------------------------------------------------
    def _Unary(self, node: t.Unary):
        fn, kind = self.expr(node.operand)
        if node.op == "NOT":

            def not_(row):
                v = fn(row)
                return (not v) if type(v) is bool else None

            return not_, "boolean"
        if kind == "span":
            raise QueryError("a time span cannot be negated", node.pos, "a number")

        def neg(row):
            v = fn(row)
            x = None if type(v) is list else s.number(v)
            return None if x is None else s.checked(-x)

        return neg, None

    def _Binary(self, node: t.Binary):
        if node.op in ("AND", "OR"):
            return self._logic(node)
        left, lk = self.expr(node.left)
        right, rk = self.expr(node.right)
        if node.op in ("==", "!=", "<", "<=", ">", ">="):
            left, right = self._dates_alike(node, left, lk, right, rk)
            return _comparison(node.op, left, right), "boolean"
        return self._arithmetic(node, left, lk, right, rk)

    def _dates_alike(self, node, left, lk, right, rk):
        if "span" in (lk, rk):
            raise QueryError("a time span can only be added to or subtracted from a date", node.pos, "a date or a number")
        if lk == "date" and rk != "date":
            right = _as_date(node.right, right)
        elif rk == "date" and lk != "date":
            left = _as_date(node.left, left)
        return left, right

    def _logic(self, node: t.Binary):
        left, _ = self.expr(node.left)
        right, _ = self.expr(node.right)
        if node.op == "AND":

            def and_(row):
                a = left(row)
                if a is False:
                    return False
                b = right(row)
                if b is False:
                    return False
                return True if a is True and b is True else None

            return and_, "boolean"

        def or_(row):
            a = left(row)
            if a is True:
                return True
            b = right(row)
            if b is True:
                return True
            return False if a is False and b is False else None

        return or_, "boolean"

    def _arithmetic(self, node: t.Binary, left, lk, right, rk):
        op = node.op
        if lk == "span" or rk == "span":
            date_side = "left" if rk == "span" else "right"
            other = lk if date_side == "left" else rk
            if other != "date" or op not in ("+", "-") or (date_side == "right" and op == "-"):
                raise QueryError(
                    "a time span can only be added to a date or subtracted from one", node.pos, "date + 1 hour, date - 1 day"
                )
            span_fn, date_fn = (right, left) if date_side == "left" else (left, right)
            sign = 1 if op == "+" else -1

            def shift(row):
                d = date_fn(row)
                if type(d) is not int:
                    return None
                return add_span(d, span_fn(row), sign)

            return shift, "date"
        if lk == "date" or rk == "date":
            raise QueryError("dates take only '+' or '-' a time span", node.pos, "date + 1 hour")
        f = _ARITH[op]

        number = s.number

        def arith(row):
            a, b = left(row), right(row)
            if type(a) is int and type(b) is int:  # the common case first
                return f(a, b)
            if a is None or b is None or type(a) is list or type(b) is list:
                return None
            x, y = number(a), number(b)
            if x is None or y is None:
                return None
            return f(x, y)

        return arith, None

    def _IsNull(self, node: t.IsNull):
        fn, _ = self.expr(node.operand)
        if node.negated:
            return (lambda row: _present(fn(row))), "boolean"
        return (lambda row: not _present(fn(row))), "boolean"

    def _In(self, node: t.In):
        fn, kind = self.expr(node.operand)
        items = []
        for item in node.items:
            f, k = self.expr(item)
            if kind == "date" and k != "date":
                f = _as_date(item, f)
            items.append(f)
        negated = node.negated

        def in_(row):
            v = fn(row)
            if v is None or type(v) is list:
                return None
            unknown = False
            for f in items:
                c = s.compare(v, f(row))
                if c == 0:
                    return not negated
                if c is None:
                    unknown = True
            return None if unknown else negated

        return in_, "boolean"

    def _Like(self, node: t.Like):
        # Each pattern is an RE2 program with its own bounded memory: their number is bounded too.
        self.scope.patterns += 1
        if self.scope.patterns > MAX_PATTERNS:
            raise LimitExceeded("LIKE and RLIKE patterns in a query", self.scope.patterns, MAX_PATTERNS)
        fn, _ = self.expr(node.operand)
        if node.regex:
            test = full_matcher(translate(node.pattern, node.pattern_pos), node.pattern_pos, cased=True)
        else:
            test = _like_test(node.pattern, node.pattern_pos)
        negated = node.negated

        def like(row):
            v = fn(row)
            if type(v) is not str:
                return None
            return test(v) != negated

        return like, "boolean"

    # functions ----------------------------------------------------------------
    def _Call(self, node: t.Call):
        if node.name in AGGREGATES:
            raise QueryError(f"{node.name} is an aggregation: it may only stand in STATS", node.pos, "a STATS command")
        spec = _FUNCTIONS.get(node.name)
        if spec is None:
            raise QueryError(f"unknown function {node.name}", node.pos, "a function of docs/analytics.md")
        if node.star:
            raise QueryError(f"{node.name}(*) is not a function call", node.pos, "arguments")
        lo, hi, build = spec
        n = len(node.args)
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi is not None else f"at least {lo}"
            raise QueryError(f"{node.name} takes {want} arguments, not {n}", node.pos, None)
        return build(self, node)


def _present(v) -> bool:
    return v is not None and v != []


def _as_date(node: t.Expr, fn: Fn) -> Fn:
    """The other side of a comparison with a date, read as a date."""
    if isinstance(node, t.Literal) and isinstance(node.value, str):
        ms = s.to_ms(node.value)
        if ms is None:
            raise QueryError(f"{node.value!r} is not a date", node.pos, "epoch ms or ISO 8601, like \"2026-01-31T12:00:00Z\"")
        return lambda row: ms

    def date(row):
        v = fn(row)
        return [s.to_ms(x) for x in v] if type(v) is list else s.to_ms(v)

    return date


def _comparison(op: str, left: Fn, right: Fn) -> Fn:
    test = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]
    compare = s.compare

    def cmp(row):
        c = compare(left(row), right(row))
        return None if c is None else test(c, 0)

    return cmp


def _div(x, y):
    if y == 0:
        return None
    if type(x) is int and type(y) is int:
        q = abs(x) // abs(y)  # Java's long division truncates toward zero
        return s.checked(q if (x >= 0) == (y >= 0) else -q)
    return s.checked(x / y)


def _mod(x, y):
    if y == 0:
        return None
    if type(x) is int and type(y) is int:
        r = abs(x) % abs(y)  # the sign of the dividend, as Java's %
        return r if x >= 0 else -r
    return s.checked(math.fmod(x, y))


_ARITH = {
    "+": lambda x, y: s.checked(x + y),
    "-": lambda x, y: s.checked(x - y),
    "*": lambda x, y: s.checked(x * y),
    "/": _div,
    "%": _mod,
}


def _like_test(pattern: str, pos: int) -> Callable[[str], bool]:
    """ES|QL's LIKE: ``*`` any run, ``?`` one character, ``\\`` escapes; whole value, case kept."""
    # The string's unquoting left '\*' and '\?' escaped; any other backslash
    # pair was unescaped already, so what is left is seclake's wildcard syntax.
    cleaned = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "*?":
            cleaned.append(pattern[i : i + 2])
            i += 2
            continue
        cleaned.append("\\\\" if c == "\\" else c)
        i += 1
    node = lucene_ast.Wildcard(None, "".join(cleaned), cased=True)
    return full_matcher(node.regex(), pos, cased=True)


# -- dates --------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MONDAY = 4 * 86_400_000  # 1970-01-05 was a Monday


def add_span(ms: int, span: object, sign: int) -> int | None:
    if not isinstance(span, t.Duration):
        return None
    if span.months:
        try:
            d = _EPOCH + timedelta(milliseconds=ms)
            months = d.year * 12 + d.month - 1 + sign * span.months
            y, m = divmod(months, 12)
            day = min(d.day, _days_in(y, m + 1))
            moved = d.replace(year=y, month=m + 1, day=day)
        except (ValueError, OverflowError):
            return None
        return (moved - _EPOCH) // timedelta(milliseconds=1)
    return s.checked(ms + sign * span.ms)  # type: ignore[return-value]


def _days_in(year: int, month: int) -> int:
    if month == 12:
        return 31
    return (datetime(year, month + 1, 1) - datetime(year, month, 1)).days


def truncate(ms: int, span: t.Duration) -> int | None:
    """The start of the ``span`` bucket holding ``ms``: fixed spans aligned on
    the epoch (UTC), weeks on Monday, months, quarters and years on the calendar."""
    if span.months:
        try:
            d = _EPOCH + timedelta(milliseconds=ms)
        except OverflowError:
            return None
        months = (d.year * 12 + d.month - 1) // span.months * span.months
        y, m = divmod(months, 12)
        try:
            start = datetime(y, m + 1, 1, tzinfo=UTC)
        except ValueError:
            return None
        return (start - _EPOCH) // timedelta(milliseconds=1)
    if span.week:
        return (ms - _MONDAY) // span.ms * span.ms + _MONDAY
    return ms // span.ms * span.ms


# -- the function table -------------------------------------------------------------------------


def _one(fn: Fn, f: Callable[[Any], Any]) -> Fn:
    """A single-value function: null in, null out; a multi-valued input is null."""

    def call(row):
        v = fn(row)
        if v is None or type(v) is list:
            return None
        return f(v)

    return call


def _string_fn(f):
    def build(c: _Compiler, node: t.Call):
        fn, _ = c.expr(node.args[0])
        return _one(fn, lambda v: f(v) if type(v) is str else None), "keyword"

    return build


def _length(c, node):
    fn, _ = c.expr(node.args[0])
    return _one(fn, lambda v: len(v) if type(v) is str else None), "long"


def _concat(c, node):
    parts = [(f, k) for f, k in (c.expr(a) for a in node.args)]

    def concat(row):
        out = []
        for f, k in parts:
            v = f(row)
            if v is None or type(v) is list:
                return None
            out.append(s.text(v, k == "date"))
        joined = "".join(out)
        if len(joined) > MAX_STRING:
            # EVAL a = CONCAT(a, a) repeated doubles a string per step: bounded here, not by memory.
            raise LimitExceeded("characters of a string CONCAT makes", len(joined), MAX_STRING)
        return joined

    return concat, "keyword"


def _substring(c, node):
    fn, _ = c.expr(node.args[0])
    start_fn, _ = c.expr(node.args[1])
    length_fn = c.expr(node.args[2])[0] if len(node.args) > 2 else None

    def substring(row):
        v = fn(row)
        start = start_fn(row)
        if type(v) is not str or type(start) is not int:
            return None
        n = len(v)
        # 1-based; a negative start counts from the end (ES|QL).
        begin = n + start if start < 0 else max(start - 1, 0)
        begin = max(begin, 0)
        if length_fn is None:
            return v[begin:]
        length = length_fn(row)
        if type(length) is not int:
            return None
        return v[begin : begin + max(length, 0)]

    return substring, "keyword"


def _coalesce(c, node):
    compiled = [c.expr(a) for a in node.args]
    kinds = {k for _, k in compiled}
    fns = [f for f, _ in compiled]

    def coalesce(row):
        for f in fns:
            v = f(row)
            if v is not None and v != []:
                return v
        return None

    return coalesce, ("date" if kinds == {"date"} else None)


def _case(c, node):
    args = [c.expr(a) for a in node.args]
    pairs = [(args[i][0], args[i + 1][0]) for i in range(0, len(args) - 1, 2)]
    otherwise = args[-1][0] if len(args) % 2 == 1 else (lambda row: None)
    value_kinds = {args[i + 1][1] for i in range(0, len(args) - 1, 2)}
    if len(args) % 2 == 1:
        value_kinds.add(args[-1][1])

    def case(row):
        for cond, value in pairs:
            if cond(row) is True:
                return value(row)
        return otherwise(row)

    return case, ("date" if value_kinds == {"date"} else None)


def _round(c, node):
    fn, _ = c.expr(node.args[0])
    digits_fn = c.expr(node.args[1])[0] if len(node.args) > 1 else (lambda row: 0)

    def round_(row):
        v = fn(row)
        d = digits_fn(row)
        if v is None or type(v) is list or type(d) is not int:
            return None
        x = s.number(v)
        if x is None:
            return None
        if not -30 <= d <= 30:
            return x if d > 0 else 0
        # Half away from zero, in decimal: ROUND(2.675, 2) is 2.68 as written.
        dec = Decimal(repr(x)) if type(x) is float else Decimal(x)
        r = dec.scaleb(d).quantize(Decimal(1), rounding=ROUND_HALF_UP).scaleb(-d)
        return s.checked(int(r)) if type(x) is int else s.checked(float(r))

    return round_, None


def _abs(c, node):
    fn, _ = c.expr(node.args[0])

    def abs_(row):
        v = fn(row)
        x = s.number(v) if type(v) is not list else None
        return None if x is None else s.checked(abs(x))

    return abs_, None


def _to_string(c, node):
    fn, kind = c.expr(node.args[0])
    date = kind == "date"

    def to_string(row):
        v = fn(row)
        if type(v) is list:
            return [s.text(x, date) for x in v]
        return s.text(v, date)

    return to_string, "keyword"


def _to_long_one(v):
    if type(v) is bool:
        return int(v)
    x = s.number(v)
    if x is None:
        return None
    return x if type(x) is int else s.integral(x)


def _to_double_one(v):
    if type(v) is bool:
        return float(v)
    x = s.number(v)
    return None if x is None else float(x)


def _converter(f, kind):
    def build(c, node):
        fn, _ = c.expr(node.args[0])

        def convert(row):
            v = fn(row)
            if type(v) is list:
                return [f(x) for x in v]
            return None if v is None else f(v)

        return convert, kind

    return build


def _cidr_match(c, node):
    fn, _ = c.expr(node.args[0])
    networks = []
    for arg in node.args[1:]:
        block = constant(arg, "a CIDR_MATCH block")
        try:
            networks.append(ipaddress.ip_network(str(block), strict=False))
        except ValueError:
            raise QueryError(f"{block!r} is not a CIDR block", arg.pos, 'a block like "10.0.0.0/8"') from None

    def cidr_match(row):
        v = fn(row)
        if v is None or type(v) is list:
            return None
        if as_ip(v) is None:
            return None
        return any(ip_in_network(v, n) for n in networks)

    return cidr_match, "boolean"


def _date_trunc(c, node):
    span = constant(node.args[0], "DATE_TRUNC's interval")
    if not isinstance(span, t.Duration):
        raise QueryError("DATE_TRUNC takes a time span first", node.args[0].pos, "1 hour, 1 day...")
    fn, kind = c.expr(node.args[1])
    if kind != "date":
        fn = _as_date(node.args[1], fn)
    return _one(fn, lambda v: truncate(v, span) if type(v) is int else None), "date"


def _bucket(c, node):
    fn, kind = c.expr(node.args[0])
    span = constant(node.args[1], "BUCKET's span")
    if isinstance(span, t.Duration):
        if kind != "date":
            fn = _as_date(node.args[0], fn)
        return _one(fn, lambda v: truncate(v, span) if type(v) is int else None), "date"
    if type(span) not in (int, float) or span <= 0:
        raise QueryError("BUCKET takes a time span or a positive number as its span", node.args[1].pos, "1 hour, or 100")

    def bucket(v):
        x = s.number(v)
        if x is None:
            return None
        b = math.floor(x / span) * span
        return s.checked(int(b) if type(span) is int else float(b))

    return _one(fn, bucket), None


def _now(c, node):
    now = c.scope.now
    return (lambda row: now), "date"


def _to_lower(v: str) -> str:
    return v.lower()


def _to_upper(v: str) -> str:
    return v.upper()


_FUNCTIONS: dict[str, tuple[int, int | None, Callable[[_Compiler, t.Call], tuple[Fn, str | None]]]] = {
    "TO_LOWER": (1, 1, _string_fn(_to_lower)),
    "TO_UPPER": (1, 1, _string_fn(_to_upper)),
    "LENGTH": (1, 1, _length),
    "CONCAT": (2, None, _concat),
    "SUBSTRING": (2, 3, _substring),
    "COALESCE": (1, None, _coalesce),
    "CASE": (2, None, _case),
    "ROUND": (1, 2, _round),
    "ABS": (1, 1, _abs),
    "TO_STRING": (1, 1, _to_string),
    "TO_LONG": (1, 1, _converter(_to_long_one, "long")),
    "TO_DOUBLE": (1, 1, _converter(_to_double_one, "double")),
    "CIDR_MATCH": (2, None, _cidr_match),
    "DATE_TRUNC": (2, 2, _date_trunc),
    "BUCKET": (2, 2, _bucket),
    "NOW": (0, 0, _now),
}

FUNCTIONS = frozenset(_FUNCTIONS)
