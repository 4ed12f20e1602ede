"""The columnar evaluator: a pipeline's commands up to its first STATS, column by column.

The row evaluator (``execution.py``) runs every command over rows, one dict
per record, in Python. A query's STATS over its WHERE and EVAL is most of
its time, and maps onto arrays: here WHERE, EVAL and the STATS that follows
them run over typed columns (``storage/columns.py``) with numpy, and the
groups the STATS makes go to the row evaluator's own stages for the rest of
the pipe (``Folding.finish``: the STATS's output expressions, then SORT,
LIMIT, ...); a SORT then LIMIT right after the STATS is done here on arrays
too, and only the groups it keeps go on, in its order. Anything else runs on
the row path: ``prepare`` says None for a query it does not take, and
``Unsupported`` raised while evaluating (a column of values it does not take:
booleans, multi-valued fields, an integer past int64) makes the caller run
the row path instead, from the start.

Exactness is the contract: each operation here is the row evaluator's over
the same values (``scalars``: numbers written as strings are numbers in
arithmetic and numeric aggregations, a string and a number compare as
numbers when the string writes one, groups key "443", 443 and 443.0 as one;
a sum of decimals exact, rounded once, as ``aggregates`` keeps it); where an
array operation could differ (an int64 sum that could overflow, an integer
past 2**53 compared with a double) the exact computation is done for those
values or the row path runs. tests/analytics/test_columnar.py runs the golden
set both ways and compares the two on random records and queries.

Why by hand over numpy, not an SQL engine over the columns (DuckDB, Arrow's
compute): the semantics are seclake's (fields without a mapping, numbers
written as strings, kinds that do not compare giving null, exact distinct
counts and percentiles, the row evaluator's group keys and order), and must
equal the row path's value for value; numpy does the array work.

Taken: WHERE and EVAL over comparisons, AND/OR/NOT, IS [NOT] NULL, IN, LIKE,
RLIKE, CIDR_MATCH, TO_LOWER, TO_UPPER, COALESCE,
``+ - * / %`` and unary minus, fields, literals, BUCKET/DATE_TRUNC of a date by a
fixed span or weeks; STATS with COUNT(*), COUNT, COUNT_DISTINCT, SUM, AVG,
MIN/MAX (of integers and dates), MEDIAN, PERCENTILE, each with an optional
WHERE, BY any expression taken.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from typing import Any

import numpy as np

from seclake.analytics import aggregates as ag
from seclake.analytics import execution, expressions
from seclake.analytics import scalars as s
from seclake.analytics import tree as t
from seclake.analytics.execution import AnalyticsLimits, Result
from seclake.errors import LimitExceeded
from seclake.query.pattern import full_matcher, translate
from seclake.record.value import as_ip, ip_in_network
from seclake.analytics.projection import decoder
from seclake.storage.columns import FLOAT, INT, MISSING, STR, Column, Reading

# What a stored value means to analytics, for the split's columns (storage/columns.py).
READING = Reading(decoder, s.number)
_EXACT_IN_DOUBLE = 2**53  # integers a float64 holds exactly
_WRAP_GUARD = float(2**62)  # an int64 sum whose absolute values add up past this is summed in Python


class Unsupported(Exception):
    """The query, or the values it reads, are not for this evaluator: the row path runs it."""


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass
class Bools:
    """A three-valued condition over rows: ``true`` and ``false`` masks (neither: null)."""

    true: np.ndarray
    false: np.ndarray

    def take(self, index: np.ndarray) -> Bools:
        return Bools(self.true[index], self.false[index])


Value = Column | Bools | Const
Fn = Callable[["Rows"], Value]


class Rows:
    """The rows of one batch as the commands narrow them: the batch's record columns, taken
    on first use at the rows kept so far, and the columns EVAL made."""

    def __init__(self, source: dict[str, Column], index: np.ndarray):
        self.source = source
        self.index = index
        self.env: dict[str, Value] = {}
        self.made: set[str] = set()  # the keys of env EVAL made (the others are source columns taken)

    def set(self, key: str, value: Value) -> None:
        """A column EVAL made."""
        self.env[key] = value
        self.made.add(key)

    def __len__(self) -> int:
        return len(self.index)

    def get(self, key: str) -> Value:
        v = self.env.get(key)
        if v is None:
            column = self.source.get(key)
            if column is None:
                raise Unsupported(f"no column {key}")
            # Every row (positions are ascending and distinct): the column itself, not a copy
            # (its arrays are read-only where mapped: nothing here writes into a column).
            v = self.env[key] = column if len(self.index) == len(column) else column.take(self.index)
        return v

    def keep(self, mask: np.ndarray) -> None:
        self.index = self.index[mask]
        # A source column is taken again if it is used again, not now: a WHERE over a computed
        # value (A4 of the bench) used the two columns it added up no more.
        self.env = {k: (v if isinstance(v, Const) else v.take(mask)) for k, v in self.env.items() if k in self.made}


# -- preparing --------------------------------------------------------------------------------


@dataclass
class Prepared:
    """A query this evaluator takes: what it reads, and how."""

    plan: execution.Plan
    stats_at: int  # the index of the STATS stage in plan.stages
    folding: execution.Folding
    steps: list[tuple[str, Any]]  # ("where", fn) or ("eval", [(key, fn)])
    groups: list[Fn]
    aggregates: list[tuple[str, Fn | None, Fn | None, float | None]]  # (kind, argument, condition, percentile)
    paths: list[str]  # record paths read
    # A SORT then LIMIT n right after the STATS over its columns: ((("group"|"aggregate", index),
    # descending, nulls first) per key, n); None otherwise.
    top: tuple[list[tuple[tuple[str, int], bool, bool]], int] | None = None


def prepare(commands: Iterable[t.Command], dataset: Any, now: int, limits: AnalyticsLimits) -> Prepared | None:
    """How to run ``commands`` column by column, or None when this evaluator does not take them
    (no STATS, a command before it other than WHERE and EVAL, an expression not taken)."""
    commands = list(commands)
    at = next((i for i, c in enumerate(commands) if isinstance(c, t.Stats)), None)
    if at is None or not all(isinstance(c, t.Where | t.Eval) for c in commands[:at]):
        return None
    p = execution.plan(commands, dataset, now, limits)
    if len(p.stages) <= at or getattr(p.stages[at], "folding", None) is None:
        return None  # a stage before STATS that is no command of ours (rows stamped with their time)
    folding: execution.Folding = p.stages[at].folding  # type: ignore[attr-defined]
    scope = execution.Scope(dataset, now)
    compiler = _Compiler(scope)
    try:
        steps: list[tuple[str, Any]] = []
        for command in commands[:at]:
            if isinstance(command, t.Where):
                steps.append(("where", compiler.condition(command.condition)))
            else:
                made = []
                for named in command.columns:
                    fn, kind = compiler.expr(named.expr)
                    if kind == "span":
                        return None
                    made.append((named.name, fn))
                    scope.add(named.name, kind)
                steps.append(("eval", made))
        groups = [compiler.value(expr) for expr in folding.groups]
        compiler.memo = {}  # the STATS's arguments: one function for one expression (MEDIAN and PERCENTILE of x)
        aggregates = []
        for node, where in folding.aggregates:
            condition = compiler.condition(where) if where is not None else None
            aggregates.append(compiler.aggregate(node, condition))
    except Unsupported:
        return None
    return Prepared(p, at, folding, steps, groups, aggregates, sorted(scope.fields), _sorted_top(commands, at, folding))


def _sorted_top(commands: list[t.Command], at: int, folding: execution.Folding) -> Any:
    """``Prepared.top`` of a STATS followed by SORT over its columns by name, then LIMIT."""
    if len(commands) < at + 3 or not isinstance(commands[at + 1], t.Sort) or not isinstance(commands[at + 2], t.Limit):
        return None
    stats = folding.command
    groups = {named.name: j for j, named in enumerate(stats.groups)}  # the last of a name stays
    aggregates: dict[str, Any] = {}
    for named in stats.aggregates:
        if named.name in groups:
            continue  # a BY column of the same name wins
        # The rightmost of a name stays; only a bare aggregation's result is sorted here.
        slot = next((i for i, (node, where) in enumerate(folding.aggregates) if node is named.expr and where is named.where), None)
        aggregates[named.name] = slot
    keys = []
    for key in commands[at + 1].keys:
        if not isinstance(key.expr, t.Field):
            return None
        name = key.expr.name
        if name in groups:
            source = ("group", groups[name])
        elif aggregates.get(name) is not None:
            source = ("aggregate", aggregates[name])
        else:
            return None
        keys.append((source, key.descending, key.nulls_first))
    return keys, commands[at + 2].count


# -- compiling expressions --------------------------------------------------------------------


class _Compiler:
    def __init__(self, scope: execution.Scope):
        self.scope = scope
        self.memo: dict | None = None  # expression shape -> (fn, kind), when on

    def shared(self, node: t.Expr) -> tuple[Fn, str | None]:
        if self.memo is None:
            return self.expr(node)
        key = _shape(node)
        if key not in self.memo:
            self.memo[key] = self.expr(node)
        return self.memo[key]

    def expr(self, node: t.Expr) -> tuple[Fn, str | None]:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise Unsupported(type(node).__name__)
        return method(node)

    def value(self, node: t.Expr) -> Fn:
        """An expression whose rows are values (a column), not a condition."""
        fn, kind = self.shared(node)
        if kind in ("span", "boolean"):
            raise Unsupported("a boolean or span column")
        return fn

    def condition(self, node: t.Expr) -> Fn:
        fn, kind = self.shared(node)
        if kind != "boolean":
            raise Unsupported("a condition that is not a comparison or logic")
        return fn

    def aggregate(self, node: t.Call, condition: Fn | None) -> tuple[str, Fn | None, Fn | None, float | None]:
        name = node.name
        if node.star or (name == "COUNT" and not node.args):
            return ("rows", None, condition, None)
        if name not in ("COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX", "MEDIAN", "PERCENTILE"):
            raise Unsupported(name)
        arg = self.value(node.args[0])
        p = None
        if name == "MEDIAN":
            p = 50.0
        elif name == "PERCENTILE":
            p = float(expressions.constant(node.args[1], "PERCENTILE's percentile"))  # type: ignore[arg-type]
        return (name, arg, condition, p)

    # leaves
    def _Literal(self, node: t.Literal):
        v = node.value
        if isinstance(v, t.Duration):
            return (lambda rows: Const(v)), "span"
        if type(v) is bool:
            raise Unsupported("a boolean literal")
        kind = {str: "keyword", int: "long", float: "double"}.get(type(v))
        c = Const(v)
        return (lambda rows: c), kind

    def _Field(self, node: t.Field):
        key, kind = self.scope.resolve(node.name, node.pos)
        if kind == "raw_date":
            return (lambda rows: _dates(rows.get(key))), "date"
        if kind == "boolean":
            return (lambda rows: rows.get(key)), "boolean"
        if kind in ("span",):
            raise Unsupported("a span column")
        return (lambda rows: rows.get(key)), kind

    # operators
    def _Unary(self, node: t.Unary):
        fn, kind = self.expr(node.operand)
        if node.op == "NOT":
            if kind != "boolean":
                raise Unsupported("NOT of a value")

            def not_(rows):
                b = fn(rows)
                return Bools(b.false, b.true)

            return not_, "boolean"
        if kind in ("span", "boolean", "date"):
            raise Unsupported("minus of a span, a date or a condition")
        return (lambda rows: _negate(_column(fn(rows), len(rows)))), None

    def _Binary(self, node: t.Binary):
        if node.op in ("AND", "OR"):
            left, right = self.condition(node.left), self.condition(node.right)
            if node.op == "AND":
                def and_(rows):
                    a, b = left(rows), right(rows)
                    return Bools(a.true & b.true, a.false | b.false)
                return and_, "boolean"

            def or_(rows):
                a, b = left(rows), right(rows)
                return Bools(a.true | b.true, a.false & b.false)
            return or_, "boolean"
        left, lk = self.expr(node.left)
        right, rk = self.expr(node.right)
        if "boolean" in (lk, rk) or "span" in (lk, rk):
            raise Unsupported("a condition or a span as an operand")
        if node.op in ("==", "!=", "<", "<=", ">", ">="):
            if lk == "date" and rk != "date":
                right = self._as_date(node.right, right)
            elif rk == "date" and lk != "date":
                left = self._as_date(node.left, left)
            op = node.op
            return (lambda rows: _compare(op, left(rows), right(rows), len(rows))), "boolean"
        if node.op not in ("+", "-", "*", "/", "%") or "date" in (lk, rk):
            raise Unsupported(f"arithmetic {node.op}")
        op = node.op
        return (lambda rows: _arith(op, _column(left(rows), len(rows)), _column(right(rows), len(rows)))), None

    def _as_date(self, node: t.Expr, fn: Fn) -> Fn:
        if isinstance(node, t.Literal) and isinstance(node.value, str):
            ms = s.to_ms(node.value)
            if ms is None:
                raise Unsupported("not a date")  # the planner has refused it already
            c = Const(ms)
            return lambda rows: c
        return lambda rows: _dates(_column(fn(rows), len(rows)))

    def _IsNull(self, node: t.IsNull):
        fn, kind = self.expr(node.operand)
        negated = node.negated

        def is_null(rows):
            v = fn(rows)
            if isinstance(v, Bools):
                missing = ~(v.true | v.false)
            elif isinstance(v, Const):
                missing = np.full(len(rows), v.value is None)
            else:
                missing = v.kinds == MISSING
            return Bools(~missing, missing) if negated else Bools(missing, ~missing)

        return is_null, "boolean"

    def _In(self, node: t.In):
        fn, kind = self.expr(node.operand)
        if kind in ("boolean", "span"):
            raise Unsupported("IN over a condition")
        items = []
        for item in node.items:
            if not isinstance(item, t.Literal) or type(item.value) is bool or isinstance(item.value, t.Duration):
                raise Unsupported("IN over a non-literal")
            f, k = self.expr(item)
            if kind == "date" and k != "date":
                f = self._as_date(item, f)
            items.append(f)
        negated = node.negated

        def in_(rows):
            v = fn(rows)
            n = len(rows)
            equal = np.zeros(n, dtype=bool)
            unknown = np.zeros(n, dtype=bool)
            for f in items:
                c = _compare("==", v, f(rows), n)
                equal |= c.true
                unknown |= ~(c.true | c.false)
            # The first equal item answers; else any item that did not compare makes it null.
            hit = equal
            rest = ~equal & ~unknown
            return Bools(rest, hit) if negated else Bools(hit, rest)

        return in_, "boolean"

    def _Like(self, node: t.Like):
        fn, kind = self.expr(node.operand)
        if kind in ("boolean", "span"):
            raise Unsupported("LIKE of a condition")
        if node.regex:
            test = full_matcher(translate(node.pattern, node.pattern_pos), node.pattern_pos, cased=True)
        else:
            test = expressions._like_test(node.pattern, node.pattern_pos)
        negated = node.negated
        # A string's answer once per distinct string (RE2, linear); any other value is null.
        return (lambda rows: _per_string(_column(fn(rows), len(rows)), lambda v: test(v) != negated)), "boolean"

    def _cidr_match(self, node: t.Call):
        fn, kind = self.expr(node.args[0])
        if kind in ("boolean", "span"):
            raise Unsupported("CIDR_MATCH of a condition")
        networks = [ipaddress.ip_network(str(expressions.constant(a, "a CIDR_MATCH block")), strict=False)
                    for a in node.args[1:]]  # the planner refused what is no block

        def inside(v: str) -> bool | None:
            if as_ip(v) is None:
                return None
            return any(ip_in_network(v, n) for n in networks)

        return (lambda rows: _per_string(_column(fn(rows), len(rows)), inside)), "boolean"

    def _Call(self, node: t.Call):
        if node.name == "CIDR_MATCH" and len(node.args) >= 2:
            return self._cidr_match(node)
        if node.name in ("TO_LOWER", "TO_UPPER") and len(node.args) == 1:
            fn, kind = self.expr(node.args[0])
            if kind in ("boolean", "span"):
                raise Unsupported(f"{node.name} of a condition")
            f = str.lower if node.name == "TO_LOWER" else str.upper
            return (lambda rows: _map_strings(_column(fn(rows), len(rows)), f)), "keyword"
        if node.name == "COALESCE" and node.args:
            compiled = [self.expr(a) for a in node.args]
            if any(k in ("boolean", "span") for _, k in compiled):
                raise Unsupported("COALESCE of a condition")
            fns = [f for f, _ in compiled]
            kind = "date" if {k for _, k in compiled} == {"date"} else None
            return (lambda rows: _first_present([_column(f(rows), len(rows)) for f in fns])), kind
        if node.name in ("BUCKET", "DATE_TRUNC") and len(node.args) == 2:
            date, span_node = (node.args[0], node.args[1]) if node.name == "BUCKET" else (node.args[1], node.args[0])
            try:
                span = expressions.constant(span_node, "span")
            except Exception:
                raise Unsupported("a span that is no constant") from None
            if not isinstance(span, t.Duration) or span.months or span.ms <= 0:
                raise Unsupported("a bucket of months or numbers")
            fn, kind = self.expr(date)
            if kind in ("boolean", "span"):
                raise Unsupported("a bucket of a condition")
            if kind != "date":
                fn = self._as_date(date, fn)
            return (lambda rows: _truncate(_column(fn(rows), len(rows)), span)), "date"
        raise Unsupported(node.name)


def _shape(node: Any) -> Any:
    """An expression without its positions: equal for two expressions that compute the same."""
    if isinstance(node, t.Expr):
        return (type(node).__name__, *(_shape(getattr(node, f.name)) for f in dataclass_fields(node)
                                       if f.name not in ("pos", "end", "pattern_pos")))
    if isinstance(node, tuple):
        return tuple(_shape(x) for x in node)
    return (type(node).__name__, node)  # 1, 1.0 and True are equal in Python, not here


# -- values -----------------------------------------------------------------------------------


def _column(v: Value, n: int) -> Column:
    if isinstance(v, Column):
        return v
    if isinstance(v, Bools):
        raise Unsupported("a condition as a value")
    return _constant_column(v.value, n)


def _constant_column(value: Any, n: int) -> Column:
    if value is None:
        return Column(np.zeros(n, np.uint8), None, None, None, [])
    if type(value) is int and s.I64_MIN <= value <= s.I64_MAX:
        return Column(np.full(n, INT, np.uint8), np.full(n, value, np.int64), None, None, [])
    if type(value) is float and math.isfinite(value):
        return Column(np.full(n, FLOAT, np.uint8), None, np.full(n, value, np.float64), None, [])
    if type(value) is str:
        x = s.number(value)
        numbers = None
        ints = floats = None
        if type(x) is int:
            numbers, ints = np.full(n, INT, np.uint8), np.full(n, x, np.int64)
        elif x is not None:
            numbers, floats = np.full(n, FLOAT, np.uint8), np.full(n, x, np.float64)
        return Column(np.full(n, STR, np.uint8), ints, floats, np.zeros(n, np.int32), [value],
                      None if numbers is None else numbers)
    raise Unsupported("a constant of another kind")


def _beyond(a: np.ndarray, limit: int) -> np.ndarray:
    """Where an integer's magnitude passes ``limit`` (np.abs of -2**63 is itself: not used)."""
    return (a > limit) | (a < -limit)


def _refuse_other(c: Column) -> None:
    if c.other:
        raise Unsupported("a column of booleans, several values or integers past int64")


def _numbers(c: Column) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(is an integer, its value, is a float, its value) per row: ``scalars.number``."""
    _refuse_other(c)
    nk = c.numeric()
    n = len(c)
    ints = c.ints if c.ints is not None else np.zeros(n, np.int64)
    floats = c.floats if c.floats is not None else np.zeros(n, np.float64)
    return nk == INT, np.asarray(ints), nk == FLOAT, np.asarray(floats)


def _dates(c: Value) -> Column:
    """A record's date field as epoch ms (``scalars.to_ms``): a number, or text of epoch ms or ISO 8601."""
    if not isinstance(c, Column):
        raise Unsupported("a constant or a condition as a date")
    _refuse_other(c)
    n = len(c)
    kinds = np.zeros(n, np.uint8)
    out = np.zeros(n, np.int64)
    if c.ints is not None:
        at = c.kinds == INT
        kinds[at] = INT
        out[at] = c.ints[at]
    if c.floats is not None:
        at = c.kinds == FLOAT
        f = np.asarray(c.floats)[at]
        if (np.abs(f) >= 2.0**63).any():
            raise Unsupported("a date past int64")
        kinds[at] = INT
        out[at] = f.astype(np.int64)  # int(v): toward zero
    if c.codes is not None:
        at = np.flatnonzero(c.kinds == STR)
        if len(at):
            codes = np.asarray(c.codes)[at]
            used = np.unique(codes)
            ms = [s.to_ms(c.strings[i]) for i in used.tolist()]
            found = np.array([m is not None for m in ms], dtype=bool)
            values = np.array([m if m is not None else 0 for m in ms], dtype=np.int64)
            pos = np.searchsorted(used, codes)
            kinds[at] = np.where(found[pos], INT, MISSING)
            out[at] = values[pos]
    return Column(kinds, out, None, None, [])


def _map_strings(c: Column, f: Callable[[str], str]) -> Column:
    """``f`` of each string value (once per distinct string), a column of strings; null for a row
    without a string, as the row evaluator's string functions."""
    _refuse_other(c)
    n = len(c)
    kinds = np.zeros(n, np.uint8)
    codes = np.full(n, -1, np.int32)
    strings: list[str] = []
    if c.codes is not None:
        at = np.flatnonzero(c.kinds == STR)
        if len(at):
            used, inverse = _dense(np.asarray(c.codes)[at], len(c.strings))
            made: dict[str, int] = {}
            mapping = np.array([made.setdefault(f(c.strings[i]), len(made)) for i in used.tolist()], dtype=np.int32)
            strings = list(made)
            kinds[at] = STR
            codes[at] = mapping[inverse]
    return _with_numbers(Column(kinds, None, None, codes, strings))


def _with_numbers(c: Column) -> Column:
    """A column of strings with the numbers its strings write (``Column.numbers``)."""
    if not c.strings:
        return c
    per = [s.number(x) for x in c.strings]
    if all(x is None for x in per):
        return c
    kind = np.array([INT if type(x) is int else (FLOAT if x is not None else MISSING) for x in per], dtype=np.uint8)
    whole = np.array([x if type(x) is int else 0 for x in per], dtype=np.int64)
    part = np.array([x if type(x) is float else 0.0 for x in per], dtype=np.float64)
    at = c.kinds == STR
    codes = np.where(at, c.codes, 0)
    numbers = np.where(at, kind[codes], MISSING).astype(np.uint8)
    return Column(c.kinds, np.where(at, whole[codes], 0), np.where(at, part[codes], 0.0), c.codes, c.strings, numbers)


def _first_present(columns: list[Column]) -> Column:
    """COALESCE: each row's value from the first column that has one (no value: null)."""
    for c in columns:
        _refuse_other(c)
    n = len(columns[0])
    chosen = np.full(n, -1, np.int64)
    for j, c in enumerate(columns):
        chosen[(chosen < 0) & (c.kinds != MISSING)] = j
    kinds = np.zeros(n, np.uint8)
    ints = np.zeros(n, np.int64)
    floats = np.zeros(n, np.float64)
    codes = np.full(n, -1, np.int64)
    numbers = np.zeros(n, np.uint8)
    strings: list[str] = []
    for j, c in enumerate(columns):
        rows = chosen == j
        if not rows.any():
            continue
        kinds[rows] = np.asarray(c.kinds)[rows]
        numbers[rows] = c.numeric()[rows]
        if c.ints is not None:
            ints[rows] = np.asarray(c.ints)[rows]
        if c.floats is not None:
            floats[rows] = np.asarray(c.floats)[rows]
        if c.codes is not None:
            codes[rows] = np.where(np.asarray(c.codes)[rows] >= 0, np.asarray(c.codes)[rows] + len(strings), -1)
            strings.extend(c.strings)
    return Column(kinds, ints, floats, codes, strings, numbers)


def _per_string(c: Column, test: Callable[[str], bool | None]) -> Bools:
    """A condition of a string value, asked once per distinct string of the rows; null for a
    row without a string (a number, no value), as the row evaluator's functions of strings."""
    _refuse_other(c)
    n = len(c)
    true = np.zeros(n, dtype=bool)
    false = np.zeros(n, dtype=bool)
    if c.codes is not None:
        at = np.flatnonzero(c.kinds == STR)
        if len(at):
            used, inverse = _dense(np.asarray(c.codes)[at], len(c.strings))
            answers = [test(c.strings[i]) for i in used.tolist()]
            true[at] = np.array([a is True for a in answers], dtype=bool)[inverse]
            false[at] = np.array([a is False for a in answers], dtype=bool)[inverse]
    return Bools(true, false)


def _truncate(c: Column, span: t.Duration) -> Column:
    ints = c.ints if c.ints is not None else np.zeros(len(c), np.int64)
    at = c.kinds == INT
    if at.any() and _beyond(ints[at], 2**62).any():
        raise Unsupported("a date past what int64 arithmetic keeps exact")  # never a real date
    if span.week:
        monday = 4 * 86_400_000
        out = (ints - monday) // span.ms * span.ms + monday
    else:
        out = ints // span.ms * span.ms
    return Column(np.where(at, INT, MISSING).astype(np.uint8), np.where(at, out, 0), None, None, [])


def _negate(c: Column) -> Column:
    isint, ints, isflt, floats = _numbers(c)
    kinds = np.zeros(len(c), np.uint8)
    ok = isint & (ints != s.I64_MIN)  # -(-2**63) is past a long: null
    kinds[ok] = INT
    kinds[isflt] = FLOAT
    return Column(kinds, np.where(ok, -ints, 0), np.where(isflt, -floats, 0.0), None, [])


def _arith(op: str, a: Column, b: Column) -> Column:
    """``a op b`` as ``expressions._arithmetic``: integers exact (null past a long), else doubles
    (null when not finite); null where a side is no number. Computed over the rows where both
    sides are numbers when those are fewer than half (a sum of two byte counters most records
    lack: 110,897 of the 2M bench's 378,202)."""
    ai, av, af, aw = _numbers(a)
    bi, bv, bf, bw = _numbers(b)
    n = len(a)
    at = np.flatnonzero((ai | af) & (bi | bf))
    if len(at) * 2 >= n:
        return _arith_rows(op, ai, av, af, aw, bi, bv, bf, bw)
    some = _arith_rows(op, ai[at], av[at], af[at], aw[at], bi[at], bv[at], bf[at], bw[at])
    kinds = np.zeros(n, np.uint8)
    ints = np.zeros(n, np.int64)
    kinds[at], ints[at] = some.kinds, some.ints
    floats = None
    if some.floats is not None:
        floats = np.zeros(n, np.float64)
        floats[at] = some.floats
    return Column(kinds, ints, floats, None, [])


def _arith_rows(op: str, ai: np.ndarray, av: np.ndarray, af: np.ndarray, aw: np.ndarray,
                bi: np.ndarray, bv: np.ndarray, bf: np.ndarray, bw: np.ndarray) -> Column:
    """``_arith`` over the sides' numbers (``_numbers``)."""
    n = len(ai)
    kinds = np.zeros(n, np.uint8)
    both = ai & bi
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if op == "+":
            r = av + bv
            over = ((av >= 0) == (bv >= 0)) & ((r >= 0) != (av >= 0))
        elif op == "-":
            r = av - bv
            over = ((av >= 0) != (bv >= 0)) & ((r >= 0) != (av >= 0))
        elif op == "*":
            r = av * bv
            # A product whose doubles pass 2**62 is done again exactly (Python's ints).
            over = np.abs(av.astype(np.float64) * bv.astype(np.float64)) >= _WRAP_GUARD
        else:
            # Java's long / and %: toward zero, the dividend's sign; by zero null (never a row's value);
            # -2**63 (whose magnitude no long holds) done again in Python.
            zero = bv == 0
            over = (av == s.I64_MIN) | (bv == s.I64_MIN)
            safe = both & ~zero & ~over
            x, y = np.abs(np.where(safe, av, 0)), np.abs(np.where(safe, bv, 1))
            if op == "/":
                q = x // y
                r = np.where((av >= 0) == (bv >= 0), q, -q)
            else:
                m = x % y
                r = np.where(av >= 0, m, -m)
            over = over & ~zero
            both = both & ~zero
        ints = np.where(both, r, 0)
        kinds[both & ~over] = INT
        redo = np.flatnonzero(both & over)
        for i in redo.tolist():
            x = expressions._ARITH[op](int(av[i]), int(bv[i]))
            if x is not None:
                kinds[i] = INT
                ints[i] = x
        # A double where a side is one: an integer side becomes a double (Python's int + float).
        mixed = (ai | af) & (bi | bf) & ~both
        if not mixed.any():  # integers only (two counters): no double to make
            return Column(kinds, ints, None, None, [])
        x = np.where(af, aw, av.astype(np.float64))
        y = np.where(bf, bw, bv.astype(np.float64))
        big = mixed & ((ai & (_beyond(av, _EXACT_IN_DOUBLE))) | (bi & (_beyond(bv, _EXACT_IN_DOUBLE))))
        if big.any():
            raise Unsupported("an integer past 2**53 with a double")
        if op in ("/", "%"):
            mixed = mixed & (y != 0)  # by zero (0.0 or -0.0 too): null
            f = x / y if op == "/" else np.fmod(x, y)
        else:
            f = x + y if op == "+" else (x - y if op == "-" else x * y)
        finite = mixed & np.isfinite(f)
        kinds[finite] = FLOAT
        floats = np.where(finite, f, 0.0)
    return Column(kinds, ints, floats, None, [])


_TESTS = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _compare(op: str, left: Value, right: Value, n: int) -> Bools:
    """``scalars.compare`` row by row, then ``op`` against 0 (null where it gives None)."""
    if isinstance(left, Const) and isinstance(right, Column):
        return _compare(_FLIP[op], right, left, n)
    if isinstance(left, Const):
        left = _constant_column(left.value, n)
    if isinstance(right, Const):
        return _compare_constant(op, left, right.value)
    if isinstance(left, Bools) or isinstance(right, Bools):
        raise Unsupported("a condition compared")
    # Two columns: numbers against numbers only (two strings compare as strings).
    _refuse_other(left)
    _refuse_other(right)
    if (left.kinds == STR).any() or (right.kinds == STR).any():
        raise Unsupported("two columns of strings compared")
    ai, av, af, aw = _numbers(left)
    bi, bv, bf, bw = _numbers(right)
    test = _TESTS[op]
    both_int = ai & bi
    mixed = (ai | af) & (bi | bf) & ~both_int
    if (mixed & ((ai & (_beyond(av, _EXACT_IN_DOUBLE))) | (bi & (_beyond(bv, _EXACT_IN_DOUBLE))))).any():
        raise Unsupported("an integer past 2**53 compared with a double")
    x = np.where(af, aw, av.astype(np.float64))
    y = np.where(bf, bw, bv.astype(np.float64))
    result = np.where(both_int, test(av, bv), test(x, y))
    known = both_int | mixed
    return Bools(known & result, known & ~result)


def _compare_constant(op: str, c: Column, value: Any) -> Bools:
    n = len(c)
    if value is None or type(value) is bool:
        none = np.zeros(n, dtype=bool)
        return Bools(none, none.copy())
    _refuse_other(c)
    test = _TESTS[op]
    if type(value) is int and c.floats is None and c.codes is None and c.numbers is None and \
            s.I64_MIN <= value <= s.I64_MAX:
        # Integers and nulls against an integer (a sum of two counters > 10000): one test.
        isint = c.kinds == INT
        true = isint & test(c.ints, np.int64(value)) if c.ints is not None else np.zeros(n, dtype=bool)
        return Bools(true, isint & ~true)
    true = np.zeros(n, dtype=bool)
    known = np.zeros(n, dtype=bool)
    if type(value) is str:
        # Strings against the string (code point order, case kept), per dictionary entry.
        if c.codes is not None:
            at = c.kinds == STR
            if at.any():
                per_code = np.array([(x > value) - (x < value) for x in c.strings], dtype=np.int8)
                r = per_code[np.asarray(c.codes)[at]]
                known[at] = True
                true[at] = test(r, 0)
        number = s.number(value)
        if number is None:
            return Bools(true, known & ~true)
        numeric = (c.kinds == INT) | (c.kinds == FLOAT)
    else:
        number = value
        numeric = c.numeric() != MISSING  # a string that writes a number compares as that number
    isint, ints, isflt, floats = _numbers(c)
    ri = isint & numeric
    rf = isflt & numeric
    if type(number) is int:
        if ri.any():
            if s.I64_MIN <= number <= s.I64_MAX:
                known |= ri
                true |= ri & test(ints, np.int64(number))
            else:  # past int64: every integer is below it, or above
                known |= ri
                true |= ri & test(np.zeros(n, np.int8), np.int8(-1 if number < 0 else 1))
        if rf.any():
            if abs(number) > _EXACT_IN_DOUBLE:
                raise Unsupported("an integer past 2**53 compared with a double")
            known |= rf
            true |= rf & test(floats, float(number))
    else:
        if ri.any() and (_beyond(ints[ri], _EXACT_IN_DOUBLE)).any():
            raise Unsupported("an integer past 2**53 compared with a double")
        known |= ri | rf
        true |= ri & test(ints.astype(np.float64), number)
        true |= rf & test(floats, number)
    return Bools(true, known & ~true)


# -- evaluating -------------------------------------------------------------------------------


@dataclass
class Batch:
    """The records one split gives: its columns (``columns.SplitColumns``' of the paths
    ``Prepared.paths``), and the positions of the records selected, ascending."""

    columns: dict[str, Column]
    index: np.ndarray


def evaluate(prepared: Prepared, batches: Iterable[Batch], limits: AnalyticsLimits) -> Result:
    """The query's answer over ``batches`` (in the order the row path reads the records);
    ``Unsupported`` when a column holds what is not taken here (the caller runs the row path)."""
    group_parts: list[list[Column]] = [[] for _ in prepared.groups]
    arg_parts: list[list[Column | None]] = [[] for _ in prepared.aggregates]
    cond_parts: list[list[np.ndarray | None]] = [[] for _ in prepared.aggregates]
    total = 0
    for batch in batches:
        for path in prepared.paths:
            column = batch.columns.get(path)
            if column is None or column.other:
                raise Unsupported(f"the column {path}")
        rows = Rows(batch.columns, batch.index)
        for kind, step in prepared.steps:
            if not len(rows):
                break
            if kind == "where":
                rows.keep(step(rows).true)
            else:
                for key, fn in step:
                    v = fn(rows)
                    rows.set(key, v if not isinstance(v, Const) else _constant_column(v.value, len(rows)))
        n = len(rows)
        if not n:
            continue
        total += n
        for parts, fn in zip(group_parts, prepared.groups):
            parts.append(_column(fn(rows), n))
        for i, (_, arg, condition, _) in enumerate(prepared.aggregates):
            arg_parts[i].append(_column(arg(rows), n) if arg is not None else None)
            cond_parts[i].append(condition(rows).true if condition is not None else None)
    groups, results = _fold(prepared, total, group_parts, arg_parts, cond_parts, limits)
    if prepared.top is not None and groups.size:
        try:
            chosen = _top(prepared, groups, results)
        except Unsupported:
            pass  # a result sorted here that is no number: every group to the SORT
        else:
            # The groups the SORT then LIMIT keep, in the SORT's order: the SORT stage is not run.
            if len(prepared.plan.stages) == prepared.stats_at + 3:  # nothing after but that LIMIT
                direct = _direct(prepared, groups, results, chosen)
                if direct is not None:
                    return direct
            table = {groups.combo(i): [r[i] for r in results] for i in chosen}
            return execution.run(prepared.plan, prepared.folding.finish(table, in_order=True),
                                 start=prepared.stats_at + 2)
    if len(prepared.plan.stages) == prepared.stats_at + 1:  # the STATS is the last command
        # The STATS's own order (execution's finish).
        order = sorted(range(groups.size), key=lambda i: execution.group_order(groups.combo(i)))
        direct = _direct(prepared, groups, results, order)
        if direct is not None:
            return direct
    table = {groups.combo(i): [r[i] for r in results] for i in range(groups.size)}
    return execution.run(prepared.plan, prepared.folding.finish(table), start=prepared.stats_at + 1)


def _direct(prepared: Prepared, groups: Groups, results: list[list], order: list[int]) -> Result | None:
    """The answer of the groups ``order`` lists, in that order, a column at a time, when the
    STATS's outputs are its bare aggregations and BY columns and no command follows (but the
    LIMIT the SORT done on arrays already applied); None otherwise (the row stages answer).
    The same answer as the STATS's rows through ``execution.run``, without a dict per group
    (a timechart's 1,000 rows, 591 groups of a WHERE over a computed value)."""
    folding = prepared.folding
    if folding.direct is None:
        return None
    by = {name: j for j, name in enumerate(folding.group_names)}  # the last BY of a name stays

    def column(name: str, n: int) -> list:
        taken = order[:n]
        if not taken:
            return []
        if name in by:
            ids, keys = groups.by[by[name]]
            unkey = s.unkey
            return [unkey(keys[k]) for k in ids[taken].tolist()]
        values = results[folding.direct[name]]
        return [values[i] for i in taken]

    if not folding.group_names and not groups.size:
        return None  # no group and no BY: the row stages make the one row of empty aggregations
    return execution.answer_of_columns(prepared.plan, column, len(order))


def _top(prepared: Prepared, groups: Groups, results: list[list]) -> Any:
    """The groups a ``SORT ... | LIMIT n`` right after the STATS keeps, in its order: the first
    ``n`` by the SORT's keys (each key's direction and nulls as ``execution._sort_key`` orders
    them), ties in the order the STATS gives its groups (by their BY values, nulls last), as
    the row evaluator's stable sort of every group would; only those go through the row
    evaluator's STATS output, and no SORT after (over thousands of groups, those were most of
    the time). Over more than ``2n`` groups the first key alone picks the candidates (those it
    puts among the first ``n``, ties at the cut included: no other can be), and only those
    are ranked by the other keys (the 2M bench's timechart: 41,827 groups, ~1,000 ranked by
    address)."""
    keys, n = prepared.top
    chosen = np.arange(groups.size)
    if groups.size > 2 * n:
        (source, descending, _), first = keys[0], None
        if source[0] != "group" and isinstance(results[source[1]], _Totals):
            totals = results[source[1]]
            if not totals.null.any() and totals.array.min() > s.I64_MIN:
                first = -totals.array if descending else totals.array  # the sums are their own order
        if first is None:
            rank, flag = _sort_key_ranks(keys[0], groups, results, chosen)
            first = flag * (int(np.abs(rank).max()) + 1) + rank  # the flag first, then the rank
        chosen = np.flatnonzero(first <= np.partition(first, n - 1)[n - 1])
    arrays: list[np.ndarray] = []  # np.lexsort's: the least significant first
    for j in reversed(range(len(groups.by))):  # the STATS's own order: by BY values, nulls last
        null, rank = _by_ranks(groups.by[j], chosen)
        arrays.append(rank)
        arrays.append(null.astype(np.int8))
    for key in reversed(keys):
        arrays.extend(_sort_key_ranks(key, groups, results, chosen))
    return chosen[np.lexsort(arrays)[:n]].tolist()


def _sort_key_ranks(key: tuple, groups: Groups, results: list[list], chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``chosen`` groups' (rank, null flag) by one SORT key, signed for np.lexsort: both
    ascending in the key's order (its direction and where its nulls go)."""
    source, descending, nulls_first = key
    if source[0] == "group":
        null, rank = _by_ranks(groups.by[source[1]], chosen)
    else:
        null, rank = _ranks(_subset(results[source[1]], chosen), _order)
    null_flag = (0 if nulls_first else 1) if not descending else (1 if nulls_first else 0)
    flag = np.where(null, null_flag, 1 - null_flag).astype(np.int64)
    rank = np.where(null, 0, rank)
    if descending:
        flag, rank = -flag, -rank
    return rank, flag


def _by_ranks(by: tuple[np.ndarray, list], chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``chosen`` groups' (null, rank) by one BY's values: the keys they use ranked once."""
    ids, keys = by
    used, inverse = _dense(ids[chosen], len(keys))
    null, rank = _key_ranks([keys[k] for k in used.tolist()])
    return null[inverse], rank[inverse]


def _subset(values: list, chosen: np.ndarray) -> list:
    """An aggregation's results of the ``chosen`` groups (all of them: the list itself)."""
    if len(chosen) == len(values):
        return values
    picked = [values[i] for i in chosen.tolist()]
    if isinstance(values, _Totals):
        return _Totals(picked, values.array[chosen], values.null[chosen])
    return picked


def _key_ranks(keys: list) -> tuple[np.ndarray, np.ndarray]:
    """``_ranks`` of a BY's keys (``scalars.key``: a key is its value's order): numbers
    (``(1, x)``) by value, then words (``(2, w)``) by code point as Python compares them, by
    numpy (a timechart's thousands of groups sorted as tuples in Python took milliseconds);
    keys of other kinds, integers a double does not hold exactly, or a word ending in NUL
    (numpy's strings drop trailing NULs) ranked by ``_ranks``."""
    tags = np.array([-1 if k is None else k[0] for k in keys], dtype=np.int64)
    numbers = [k[1] for k in keys if k is not None and k[0] == 1]
    words = [k[1] for k in keys if k is not None and k[0] == 2]
    if not np.isin(tags, (-1, 1, 2)).all() or not _exact_numbers(numbers) or \
            any(w.endswith("\x00") for w in words):
        return _ranks(keys, lambda k: k)
    rank = np.zeros(len(keys), np.int64)
    distinct = 0
    if numbers:
        uniques, inverse = np.unique(np.array(numbers, dtype=np.float64), return_inverse=True)
        rank[tags == 1] = inverse.reshape(-1)
        distinct = len(uniques)
    if words:
        rank[tags == 2] = distinct + np.unique(np.array(words, dtype=str), return_inverse=True)[1].reshape(-1)
    return tags == -1, rank


def _order(v: Any) -> Any:
    if type(v) is list or type(v) is bool:
        raise Unsupported("a multi-valued or boolean result sorted")
    return s.order(v)


class _Totals(list):
    """A SUM's results (a list, as every aggregation's) that are int64 totals, with those totals as
    an array and which are null: ranked by numpy without a Python object per group (a
    timechart's 41,827 sums took ~15 ms to rank from the list at 2M events)."""

    def __init__(self, values: list, array: np.ndarray, null: np.ndarray):
        super().__init__(values)
        self.array = array
        self.null = null


def _ranks(values: list, order: Callable[[Any], Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per value: whether it is null, and the rank of its order among the values' distinct orders."""
    if order is _order and isinstance(values, _Totals):
        rank = np.zeros(len(values), np.int64)
        rank[~values.null] = np.unique(values.array[~values.null], return_inverse=True)[1].reshape(-1)
        return values.null, rank
    if order is _order and _exact_numbers(values):
        # Numbers a double holds exactly (an aggregation's results): ranked by numpy, as by (1, v).
        as_array = np.array(values, dtype=object)
        null = as_array == None  # noqa: E711 (elementwise)
        as_array[null] = 0.0
        numbers = as_array.astype(np.float64)
        rank = np.zeros(len(values), np.int64)
        rank[~null] = np.unique(numbers[~null], return_inverse=True)[1].reshape(-1)
        return null, rank
    orders = [None if v is None else order(v) for v in values]
    ranking = {o: i for i, o in enumerate(sorted({o for o in orders if o is not None}))}
    return (np.array([o is None for o in orders], dtype=bool),
            np.array([0 if o is None else ranking[o] for o in orders], dtype=np.int64))


def _exact_numbers(values: list) -> bool:
    """Whether every value is null, a double, or an integer a double holds exactly (|v| < 2**53),
    looked at a kind at a time: an integer past 2**53 is a double of 2**53 or more."""
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if not kinds <= {int, float}:
        return False
    if int not in kinds:
        return True
    ints = [v for v in values if type(v) is int] if float in kinds else [v for v in values if v is not None]
    try:
        return not ints or bool((np.abs(np.array(ints, dtype=np.float64)) < _EXACT_IN_DOUBLE).all())
    except OverflowError:  # past a double's range
        return False


def _concat(parts: list[Column]) -> Column:
    if len(parts) == 1:
        return parts[0]
    n = sum(len(c) for c in parts)

    def joined(attr: str, dtype, fill) -> np.ndarray | None:
        if all(getattr(c, attr) is None for c in parts):
            return None
        return np.concatenate([np.asarray(getattr(c, attr)) if getattr(c, attr) is not None else np.full(len(c), fill, dtype)
                               for c in parts])

    codes = None
    strings: list[str] = []
    if any(c.codes is not None for c in parts):
        pieces = []
        for c in parts:
            if c.codes is None:
                pieces.append(np.full(len(c), -1, np.int32))
            else:
                pieces.append(np.where(np.asarray(c.codes) >= 0, np.asarray(c.codes) + len(strings), -1).astype(np.int64))
                strings.extend(c.strings)
        codes = np.concatenate(pieces)
    numbers = None
    if any(c.numbers is not None for c in parts):
        numbers = np.concatenate([c.numeric() for c in parts])
    kinds = np.concatenate([np.asarray(c.kinds) for c in parts])
    assert len(kinds) == n
    return Column(kinds, joined("ints", np.int64, 0), joined("floats", np.float64, 0.0), codes, strings, numbers)


def _dense(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of non-negative integers below ``bound``: by
    a table of ``bound`` entries, without sorting, when that is small; else by sorting. The
    table (int32: 4 bytes an entry, at most 8 per value) was faster up to ~8 entries a value
    (a timechart's 504,000 (address, hour) pairs for 110,897 records: 0.9 ms, sorting 1.2-5 ms)."""
    if bound <= max(8 * len(values), 1 << 16):
        present = np.zeros(bound, dtype=bool)
        present[values] = True
        uniques = np.flatnonzero(present)
        table = np.zeros(bound, dtype=np.int32)
        table[uniques] = np.arange(len(uniques), dtype=np.int32)
        return uniques, table[values].astype(np.int64)
    if len(values) and bound <= 1 << 48:
        # Sorted by a radix sort of 16-bit digits (numpy's stable sort of uint16 is one): a
        # timechart's 110,897 (address, hour) numbers below 2**23 in ~1 ms, np.unique's
        # comparison sort ~9 ms.
        order: np.ndarray | None = None
        shift = 0
        while (1 << shift) < bound:
            digits = (((values if order is None else values[order]) >> shift) & 0xFFFF).astype(np.uint16)
            step = np.argsort(digits, kind="stable")
            order = step if order is None else order[step]
            shift += 16
        assert order is not None
        ordered = values[order]
        first = np.empty(len(values), dtype=bool)
        first[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        inverse = np.empty(len(values), dtype=np.int64)
        # int32's cumsum is ~10x a bool's (which goes through int64 a value at a time).
        inverse[order] = np.cumsum(first, dtype=np.int32 if len(values) < 2**31 else np.int64) - 1
        return ordered[first], inverse
    uniques, inverse = np.unique(values, return_inverse=True)
    return uniques, inverse.reshape(-1)


def _numbered(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(v, return_inverse=True)`` of integers (at least one)."""
    lo = int(v.min())
    span = int(v.max()) - lo + 1
    if span >= 2**62:
        uniques, inverse = np.unique(v, return_inverse=True)
        return uniques, inverse.reshape(-1)
    # Values a common step apart (a timechart's hours: 3,600,000 ms) numbered by their
    # steps from the least: a table of 168 entries for a week, not a sort of 110,897.
    step = int(np.gcd.reduce(v - lo)) or 1
    uniques, inverse = _dense((v - lo) // step if step > 1 else v - lo, (span - 1) // step + 1)
    return uniques * step + lo, inverse


def _factorize(c: Column) -> tuple[np.ndarray, list]:
    """Each row's group id and the keys (``scalars.key``) of the ids: numbers by value (an
    integral double is its integer, a string writing a number is the number), other
    strings by their text, no value one key (None)."""
    n = len(c)
    if c.codes is None and c.floats is None and c.ints is not None and c.numbers is None:
        # Integers and nulls only (a BUCKET of dates, a port): no double, no word to look for.
        isint = c.kinds == INT
        if not isint.any():
            return np.zeros(n, np.int64), [None] if n else []
        whole = bool(isint.all())
        uniques, inverse = _numbered(np.asarray(c.ints) if whole else np.asarray(c.ints)[isint])
        keys: list = [(1, x) for x in uniques.tolist()]
        if whole:
            return inverse, keys
        out = np.full(n, len(keys), np.int64)
        out[isint] = inverse
        return out, keys + [None]
    out = np.zeros(n, np.int64)
    keys = []
    nk = c.numeric()
    isint = nk == INT
    isflt = nk == FLOAT
    ints = np.asarray(c.ints) if c.ints is not None else np.zeros(n, np.int64)
    if isflt.any():
        f = np.asarray(c.floats)
        integral = isflt & (np.floor(f) == f) & (f >= -(2.0**63)) & (f < 2.0**63)
        if integral.any():
            ints = ints.copy()
            with np.errstate(invalid="ignore"):
                ints[integral] = f[integral].astype(np.int64)
            isint = isint | integral
        frac = isflt & ~integral
        if frac.any():
            uniques, inverse = np.unique(f[frac], return_inverse=True)
            out[frac] = len(keys) + inverse.reshape(-1)
            keys.extend((1, x) for x in uniques.tolist())
    if isint.any():
        uniques, inverse = _numbered(ints[isint])
        out[isint] = len(keys) + inverse
        keys.extend((1, x) for x in uniques.tolist())
    words = (c.kinds == STR) & (nk == MISSING)
    if words.any():
        codes = np.asarray(c.codes)[words]
        used, inverse = _dense(codes, len(c.strings))
        # One id per distinct text: the same word in two splits' dictionaries is one key.
        ids: dict[str, int] = {}
        mapping = np.array([ids.setdefault(c.strings[i], len(ids)) for i in used.tolist()], dtype=np.int64)
        out[words] = len(keys) + mapping[inverse]
        keys.extend((2, w) for w in ids)
    missing = (c.kinds == MISSING) | ((c.kinds != STR) & (nk == MISSING))
    if missing.any():
        out[missing] = len(keys)
        keys.append(None)
    return out, keys


def _words_only(parts: list[Column]) -> bool:
    """Whether every part holds words and nulls only (no number, no text writing one)."""
    return all(c.codes is not None and c.ints is None and c.floats is None and c.numbers is None for c in parts)


def _word_ids(parts: list[Column]) -> tuple[dict[str, int], list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """One dictionary of the words ``parts`` (words-only: ``_words_only``) use, ids by first use
    split by split, and per part: its codes shifted by one (a null, -1, is 0), the rows of each
    shifted code (a bincount: which words it uses), and each shifted code's id (-1: a null or
    a word no row uses). Each split's dictionary is read through once, not joined first."""
    ids: dict[str, int] = {}
    out = []
    for c in parts:
        shifted = np.asarray(c.codes) + 1
        per_code = np.bincount(shifted, minlength=len(c.strings) + 1)
        used = np.flatnonzero(per_code[1:]).tolist()
        lookup = np.full(len(c.strings) + 1, -1, np.int64)
        lookup[[i + 1 for i in used]] = [ids.setdefault(c.strings[i], len(ids)) for i in used]
        out.append((shifted, per_code, lookup))
    return ids, out


def _counted_words(parts: list[Column]) -> tuple[list, list[int]]:
    """The keys of words-only parts (``_factorized``'s, in its order) and the rows of each."""
    ids, numbered = _word_ids(parts)
    counts = np.zeros(len(ids) + 1, np.int64)  # the last: the nulls
    for _, per_code, lookup in numbered:
        np.add.at(counts, lookup, per_code)  # a null's or an unused word's -1 adds to the last
    keys: list = [(2, w) for w in ids]
    if counts[-1]:
        keys.append(None)
        return keys, counts.tolist()
    return keys, counts[:-1].tolist()


def _factorized(parts: list[Column]) -> tuple[np.ndarray, list]:
    """``_factorize`` of the parts joined (a BY's values over the batches), a part at a time
    when every part holds words only (no number, no text writing one): each part's codes
    mapped through its own dictionary's used words, not joined into one dictionary first
    (A1 of the 2M bench: one BY over 378,202 records of 7 splits, ~2x faster). The same ids
    and keys: words by first use, split by split, then the null key."""
    if len(parts) == 1 or not _words_only(parts):
        return _factorize(_concat(parts))
    ids, numbered = _word_ids(parts)
    out = np.concatenate([lookup[shifted] for shifted, _, lookup in numbered])
    keys: list = [(2, w) for w in ids]
    missing = out < 0
    if missing.any():
        out[missing] = len(keys)
        keys.append(None)
    return out, keys


def _fold(prepared: Prepared, total: int, group_parts, arg_parts, cond_parts,
          limits: AnalyticsLimits) -> tuple[Groups, list[list]]:
    """The groups and each aggregation's result per group."""
    budget = prepared.folding.budget
    if prepared.groups:
        if not total:
            return Groups([], 0), []
        if len(group_parts) == 1 and all(a == ("rows", None, None, None) for a in prepared.aggregates) and \
                _words_only(group_parts[0]):
            # Only COUNT(*) BY one field of words (the commonest question: count by user, by
            # host...): each split's counts per code, added per word; no group id per record.
            keys, counts = _counted_words(group_parts[0])
            if len(keys) > limits.max_groups:
                raise LimitExceeded("number of STATS groups", limits.max_groups + 1, limits.max_groups)
            return Groups([(np.arange(len(keys)), keys)], len(keys)), [list(counts) for _ in prepared.aggregates]
        ids_keys = [_factorized(parts) for parts in group_parts]
        if len(ids_keys) == 1:
            g, keys = ids_keys[0]
            groups = Groups([(np.arange(len(keys)), keys)], len(keys))
        else:
            combined = np.zeros(total, np.int64)
            width = 1
            for ids, keys in ids_keys:
                if width * len(keys) >= 2**62:
                    raise Unsupported("more combinations of BY values than an int64 numbers")
                combined = combined * len(keys) + ids
                width *= len(keys)
            uniques, g = _dense(combined, width)
            by = []
            for _, keys in reversed(ids_keys):  # each group's key of each BY, from its combined number
                by.append((uniques % len(keys), keys))
                uniques = uniques // len(keys)
            groups = Groups(by[::-1], len(by[0][0]))
        if groups.size > limits.max_groups:
            raise LimitExceeded("number of STATS groups", limits.max_groups + 1, limits.max_groups)
        size = groups.size
    else:
        g = np.zeros(total, np.int64)
        groups = Groups([], 1)
        size = 1
    results: list[list] = []
    ordered: dict = {}  # (argument, condition) -> its values sorted per group, for every percentile of them
    # An argument's batches joined once for every aggregation of it (MEDIAN and two PERCENTILEs
    # of one field): the same column objects (``Rows.get`` keeps each), so known by their ids.
    joined: dict[tuple[int, ...], Column] = {}
    sames = [(tuple(map(id, args)), tuple(map(id, conds))) for args, conds in zip(arg_parts, cond_parts)]
    percentiles: dict[tuple, list] = {}  # the percentiles asked of each (argument, condition)
    for (kind, _, _, p), same in zip(prepared.aggregates, sames):
        if kind in ("MEDIAN", "PERCENTILE"):
            percentiles.setdefault(same, []).append(p)
    for (kind, _, _, p), args, conds, same in zip(prepared.aggregates, arg_parts, cond_parts, sames):
        cond = np.concatenate(conds) if conds and conds[0] is not None else None
        if kind == "COUNT_DISTINCT" and args and args[0] is not None:
            results.append(_count_distinct(args, cond, g, size, budget))
            continue
        arg = None
        if args and args[0] is not None:
            arg = joined.get(same[0])
            if arg is None:
                arg = joined[same[0]] = _concat(args)  # type: ignore[arg-type]
        results.append(_aggregate(kind, arg, cond, p, g, size, budget, ordered, same, percentiles.get(same)))
    return groups, results


@dataclass
class Groups:
    """The STATS's groups: per BY, each group's key id and the keys (``scalars.key``)."""

    by: list[tuple[np.ndarray, list]]
    size: int

    def combo(self, i: int) -> tuple:
        return tuple(keys[ids[i]] for ids, keys in self.by)


def _extreme_of_numbers(kind: str, isint: np.ndarray, ints: np.ndarray, isflt: np.ndarray, floats: np.ndarray,
                        g: np.ndarray, size: int) -> list:
    """MIN/MAX over integers and doubles (``aggregates.Extreme``): the least or greatest number,
    and of equal ones (3 and 3.0, 0.0 and -0.0) the first in the records' order, as it is kept."""
    if _beyond(ints[isint], _EXACT_IN_DOUBLE).any():
        raise Unsupported("MIN/MAX of integers past 2**53 beside doubles")
    taken = np.flatnonzero(isint | isflt)
    values = np.where(isint, ints.astype(np.float64), floats)[taken]
    groups = g[taken]
    acc = np.full(size, np.inf if kind == "MIN" else -np.inf)
    (np.minimum if kind == "MIN" else np.maximum).at(acc, groups, values)
    at = values == acc[groups]  # the rows holding their group's extreme
    first = np.full(size, len(g), np.int64)
    np.minimum.at(first, groups[at], taken[at])
    out = []
    for i in first.tolist():
        if i == len(g):
            out.append(None)
        else:
            out.append(int(ints[i]) if isint[i] else float(floats[i]))
    return out


def _units_by_group(g: np.ndarray, floats: np.ndarray, size: int) -> list[int]:
    """Each group's exact sum of ``floats`` in 2**-1074 (``aggregates._units`` added up, as the
    row evaluator's SUM and AVG keep decimals): a double is a 53-bit integer times a power of
    two; per group and exponent the integers are added in int64 halves of 26 and 27 bits (no
    wrap below 2**36 values), and the few (group, exponent) totals are shifted into place in
    Python's integers."""
    units = [0] * size
    if not len(floats):
        return units
    mantissa, exponent = np.frexp(floats)
    whole = np.ldexp(mantissa, 53).astype(np.int64)  # exact: 53 bits
    pairs, at = np.unique(g.astype(np.int64) * 4096 + (exponent.astype(np.int64) + 2048), return_inverse=True)
    at = at.reshape(-1)
    high = np.zeros(len(pairs), np.int64)
    low = np.zeros(len(pairs), np.int64)
    np.add.at(high, at, whole >> 26)
    np.add.at(low, at, whole & ((1 << 26) - 1))
    for pair, h, lo in zip(pairs.tolist(), high.tolist(), low.tolist()):
        group, e = divmod(pair, 4096)
        total = (h << 26) + lo
        shift = e - 2048 - 53 + 1074
        units[group] += total << shift if shift >= 0 else total >> -shift  # exact: those low bits are zeros
    return units


def _count_distinct(parts: list[Column], cond: np.ndarray | None, g: np.ndarray, size: int, budget) -> list:
    """COUNT_DISTINCT per group of the values ``parts`` hold (a batch each), numbered as a BY's
    (``_factorized``: split by split for words), where ``cond`` holds; no value is none."""
    ids, keys = _factorized(parts)
    keep = ids != len(keys) - 1 if keys and keys[-1] is None else np.ones(len(ids), dtype=bool)  # the null key is last
    if cond is not None:
        keep &= cond
    rows = np.flatnonzero(keep)
    width = max(len(keys), 1)
    pairs, _ = _dense(g[rows] * width + ids[rows], size * width)
    budget.take(len(pairs))
    return np.bincount(pairs // width, minlength=size).tolist()


def _aggregate(kind: str, arg: Column | None, cond: np.ndarray | None, p: float | None, g: np.ndarray,
               size: int, budget, ordered: dict | None = None, same: Any = None, ps: list | None = None) -> list:
    """One aggregation's result per group. ``ordered``: values sorted per group, kept by
    ``same`` (the argument and condition) for every percentile of them, ``ps`` their percentiles."""
    if kind == "rows":
        gg = g if cond is None else g[cond]
        return np.bincount(gg, minlength=size).tolist()
    if arg is None:  # no rows at all (no BY: one empty group)
        arg = Column(np.zeros(0, np.uint8), None, None, None, [])
    keep = arg.kinds != MISSING
    if cond is not None:
        keep &= cond
    if kind == "COUNT":
        return np.bincount(g[keep], minlength=size).tolist()
    if kind == "COUNT_DISTINCT":
        return _count_distinct([arg], cond, g, size, budget)
    if ordered is not None and same in ordered:  # a percentile of values another one sorted
        vv, starts, ends, held = ordered[same]
        if held:
            budget.take(held)  # each percentile holds its values, as the row evaluator's
        return _percentiles(vv, starts, ends, p)  # type: ignore[arg-type]
    isint, ints, isflt, floats = _numbers(arg)
    isint &= keep
    isflt &= keep
    if kind in ("SUM", "AVG"):
        gi, vi = g[isint], ints[isint]
        int_totals = np.zeros(size, np.int64)
        np.add.at(int_totals, gi, vi)
        totals: list = int_totals.tolist()
        if not len(vi) or float(max(-int(vi.min()), int(vi.max()))) * len(vi) < _WRAP_GUARD:
            wrapped = []  # no total of these values can come near a wrap (byte counters)
        else:
            wide = np.bincount(gi, weights=np.abs(vi.astype(np.float64)), minlength=size)
            wrapped = np.flatnonzero(wide >= _WRAP_GUARD).tolist()
        for j in wrapped:  # an int64 total that may have wrapped
            totals[j] = sum(vi[gi == j].tolist())
        if kind == "SUM" and not isflt.any():
            # Integers only: each group's total as it is (a wrapped one's exact total checked),
            # no value where the group has none; not a Python step per group for every group.
            for j in wrapped:
                totals[j] = s.checked(totals[j])
            empty = np.bincount(gi, minlength=size) == 0
            for j in np.flatnonzero(empty).tolist():
                totals[j] = None
            # None wrapped: the int64 totals are the values, kept for a SORT over them (``_ranks``).
            return totals if wrapped else _Totals(totals, int_totals, empty)
        units = _units_by_group(g[isflt], floats[isflt], size)
        n_int = np.bincount(gi, minlength=size).tolist()
        n_float = np.bincount(g[isflt], minlength=size).tolist()
        out = []
        for it, ut, ni, nf in zip(totals, units, n_int, n_float):
            if not ni and not nf:
                out.append(None)
            elif kind == "SUM":
                out.append(s.checked(it) if not nf else ag._ratio(it * ag._SCALE + ut, ag._SCALE))
            else:
                out.append(ag._ratio(it * ag._SCALE + ut, (ni + nf) * ag._SCALE))
        return out
    if kind in ("MIN", "MAX"):
        if ((arg.kinds == STR) & keep & ~isint & ~isflt).any():
            raise Unsupported("MIN/MAX of words")
        if isflt.any():
            return _extreme_of_numbers(kind, isint, ints, isflt, floats, g, size)
        gi, vi = g[isint], ints[isint]
        if kind == "MIN":
            acc = np.full(size, s.I64_MAX, np.int64)
            np.minimum.at(acc, gi, vi)
        else:
            acc = np.full(size, s.I64_MIN, np.int64)
            np.maximum.at(acc, gi, vi)
        present = np.bincount(gi, minlength=size)
        return [v if c else None for v, c in zip(acc.tolist(), present.tolist())]
    # MEDIAN, PERCENTILE: every value kept, sorted per group (stable), numpy's "linear".
    if (_beyond(ints[isint], _EXACT_IN_DOUBLE)).any():
        raise Unsupported("percentiles of integers past 2**53")
    taken = isint | isflt
    held = int(taken.sum())
    if held:
        budget.take(held)  # each percentile holds its values, as the row evaluator's
    gv = g[taken]
    vi = ints[taken]
    lo = int(vi.min()) if held else 0
    width = (int(vi.max()) - lo).bit_length() if held else 0
    if held and not (isflt & taken).any() and size - 1 < 1 << (62 - width):
        # Integers only: each (group, value) one int64, the group above the value's offset
        # from the least, ordered as numbers (no positions: np.sort took half the time of the
        # two argsorts below over the bench's 110,897 byte counts, np.partition half again).
        packed = (gv << width) | (vi - lo)
        counts = np.bincount(gv, minlength=size)
        if ps:
            # Only the ranks the percentiles of these values read put in place (np.partition:
            # each is the whole array's order statistic there, so its group's), not every value.
            firsts = np.cumsum(counts) - counts
            packed = np.partition(packed, sorted({a + r for a, m in zip(firsts.tolist(), counts.tolist()) if m
                                                  for q in ps for r in _percentile_ranks(q, m)}))
        else:
            packed = np.sort(packed)
        vv = ((packed & ((1 << width) - 1)) + lo).astype(np.float64)
        ends = np.cumsum(counts)
        starts = ends - counts
    else:
        values = np.where(isint, ints.astype(np.float64), floats)
        vv = values[taken]
        # Sorted by group, each group's values ascending (equal values are alike: any order
        # of them will do): the values sorted, then their groups by a stable sort, a radix
        # sort when the group numbers fit 16 bits (half of np.lexsort's time).
        order = np.argsort(vv)
        order = order[np.argsort(gv[order].astype(np.uint16) if size <= 1 << 16 else gv[order], kind="stable")]
        gv, vv = gv[order], vv[order]
        starts = np.searchsorted(gv, np.arange(size), side="left")
        ends = np.searchsorted(gv, np.arange(size), side="right")
    if ordered is not None:
        ordered[same] = (vv, starts, ends, held)
    return _percentiles(vv, starts, ends, p)  # type: ignore[arg-type]


def _percentiles(vv: np.ndarray, starts: np.ndarray, ends: np.ndarray, p: float) -> list:
    """Each group's percentile ``p`` (numpy's "linear") of its values, ``vv[starts[i]:ends[i]]`` ascending."""
    out = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        m = b - a
        if not m:
            out.append(None)
            continue
        lo, hi = _percentile_ranks(p, m)
        x, y = float(vv[a + lo]), float(vv[a + hi])
        out.append(s.checked(x + (y - x) * (p / 100 * (m - 1) - lo)))
    return out


def _percentile_ranks(p: float, m: int) -> tuple[int, int]:
    """The two ranks (from 0) among ``m`` ascending values that percentile ``p`` interpolates between."""
    lo = math.floor(p / 100 * (m - 1))
    return lo, min(lo + 1, m - 1)
