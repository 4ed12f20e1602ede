"""The aggregations of STATS: one state per group, every value counted.

All are exact (no sketches, no sampling): COUNT_DISTINCT keeps the distinct
values, MEDIAN and PERCENTILE keep every value and interpolate between the
two nearest ranks (numpy's default, "linear"). What they hold is counted
against the query's budget (``Budget``), so a query past it fails with a
clear error instead of exhausting the server. A multi-valued field (a list)
gives each of its values; nulls are skipped.

Every state can be sent to another process (``portable``: plain lists of
numbers, strings and the tuples ``scalars.key`` makes) and merged into
another state exactly (``merge``): a state merged from the states of
consecutive runs of rows equals the state of one pass over all of them
(cluster mode folds each split on its searcher and merges on the API node:
analytics/partial.py). That is why sums of decimals are kept exactly, as an
integer count of 2**-1074 (the least double), and rounded once at the end:
a float total rounded at every addition would depend on where the rows
were cut.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seclake.analytics import scalars as s
from seclake.analytics import tree as t
from seclake.analytics.expressions import constant
from seclake.errors import LimitExceeded, QueryError


@dataclass
class Budget:
    """Values held by aggregations across all groups of one query, and the
    query's memo of string keys (``key``)."""

    max_values: int
    held: int = 0
    warnings: list[str] = field(default_factory=list)
    memo: dict = field(default_factory=dict)

    def key(self, v):
        """``scalars.key``, remembered for strings: a string's key reads it as a
        number or not (a regex match) and a few thousand distinct values come
        millions of times. Bounded: past 100,000 strings it computes."""
        if type(v) is str:
            k = self.memo.get(v)
            if k is None:
                k = s.key(v)
                if len(self.memo) < 100_000:
                    self.memo[v] = k
            return k
        return s.key(v)

    def take(self, n: int = 1) -> None:
        self.held += n
        if self.held > self.max_values:
            raise LimitExceeded("number of values the query's aggregations hold (distinct values, values for percentiles)",
                                self.held, self.max_values)


def _each(v):
    if type(v) is list:
        return [x for x in v if x is not None]
    return () if v is None else (v,)


def _numbers(v):
    for x in _each(v):
        n = s.number(x)
        if n is not None:
            yield n


def _ordered(x):
    """A value for MIN/MAX/TOP: a numeric string is its number."""
    if type(x) is str:
        n = s.number(x)
        if n is not None:
            return n
    return x


# Every double is an integer multiple of 2**-1074: a sum of doubles held as that integer is exact.
_SCALE = 1 << 1074


def _units(x: float) -> int:
    """``x`` as a whole number of 2**-1074."""
    n, d = x.as_integer_ratio()  # d is a power of two, at most 2**1074
    return n << (1075 - d.bit_length())


def _ratio(numerator: int, denominator: int) -> float | None:
    """The double nearest ``numerator / denominator`` (Python's int division rounds correctly), None past a double."""
    try:
        return s.checked(numerator / denominator)
    except OverflowError:
        return None


class Aggregate:
    """One aggregation over a compiled argument; states are plain lists."""

    def __init__(self, arg: Callable[[dict], Any] | None, budget: Budget):
        self.arg = arg
        self.budget = budget

    def new(self) -> list:
        raise NotImplementedError

    def add(self, state: list, row: dict) -> None:
        raise NotImplementedError

    def result(self, state: list) -> Any:
        raise NotImplementedError

    def portable(self, state: list) -> list:
        """The state as plain data for another process (``merge`` takes it)."""
        return list(state)

    def merge(self, state: list, other: list) -> None:
        """Fold another part's ``portable`` state into ``state``, as if its rows came after this one's."""
        state[0] += other[0]


class Filtered(Aggregate):
    """An aggregation over the rows where a condition is true (``STATS n = COUNT(*) WHERE x > 1``)."""

    def __init__(self, inner: Aggregate, condition: Callable[[dict], Any]):
        super().__init__(inner.arg, inner.budget)
        self.inner = inner
        self.condition = condition

    def new(self):
        return self.inner.new()

    def add(self, state, row):
        if self.condition(row) is True:
            self.inner.add(state, row)

    def result(self, state):
        return self.inner.result(state)

    def portable(self, state):
        return self.inner.portable(state)

    def merge(self, state, other):
        self.inner.merge(state, other)


class CountRows(Aggregate):
    def new(self):
        return [0]

    def add(self, state, row):
        state[0] += 1

    def result(self, state):
        return state[0]


class Count(Aggregate):
    def new(self):
        return [0]

    def add(self, state, row):
        v = self.arg(row)
        if v is not None:
            state[0] += sum(1 for x in v if x is not None) if type(v) is list else 1

    def result(self, state):
        return state[0]


class CountDistinct(Aggregate):
    def new(self):
        return [set()]

    def add(self, state, row):
        v = self.arg(row)
        if v is None:
            return
        seen = state[0]
        key = self.budget.key
        for x in v if type(v) is list else (v,):
            if x is None:
                continue
            k = key(x)
            if k not in seen:
                seen.add(k)
                self.budget.take()

    def result(self, state):
        return len(state[0])

    def portable(self, state):
        return [list(state[0])]

    def merge(self, state, other):
        seen = state[0]
        for k in other[0]:
            if k not in seen:
                seen.add(k)
                self.budget.take()


class Sum(Aggregate):
    def new(self):
        return [0, 0, False, True]  # int total, decimals' total in 2**-1074 (exact), any value, all ints

    def add(self, state, row):
        v = self.arg(row)
        t = type(v)
        if t is int:  # the common case first: one integer
            state[0] += v
            state[2] = True
            return
        if v is None:
            return
        for n in _numbers(v):
            state[2] = True
            if type(n) is int:
                state[0] += n
            else:
                state[1] += _units(n)
                state[3] = False

    def result(self, state):
        if not state[2]:
            return None
        if state[3]:
            return s.checked(state[0])
        return _ratio(state[0] * _SCALE + state[1], _SCALE)

    def merge(self, state, other):
        state[0] += other[0]
        state[1] += other[1]
        state[2] = state[2] or other[2]
        state[3] = state[3] and other[3]


class Avg(Aggregate):
    def new(self):
        return [0, 0, 0]  # int total, decimals' total in 2**-1074 (exact), values

    def add(self, state, row):
        v = self.arg(row)
        if type(v) is int:
            state[0] += v
            state[2] += 1
            return
        if v is None:
            return
        for n in _numbers(v):
            state[2] += 1
            if type(n) is int:
                state[0] += n
            else:
                state[1] += _units(n)

    def result(self, state):
        if not state[2]:
            return None
        return _ratio(state[0] * _SCALE + state[1], state[2] * _SCALE)

    def merge(self, state, other):
        state[0] += other[0]
        state[1] += other[1]
        state[2] += other[2]


class Extreme(Aggregate):
    """MIN or MAX: numbers (numeric strings too) by value, then strings; booleans below numbers."""

    def __init__(self, arg, budget, largest: bool):
        super().__init__(arg, budget)
        self.largest = largest

    def new(self):
        return [None, None]  # order key, value

    def add(self, state, row):
        for x in _each(self.arg(row)):
            v = _ordered(x)
            k = s.order(v)
            if state[0] is None or (k > state[0] if self.largest else k < state[0]):
                state[0], state[1] = k, v

    def result(self, state):
        return state[1]

    def merge(self, state, other):
        k = other[0]
        if k is not None and (state[0] is None or (k > state[0] if self.largest else k < state[0])):
            state[0], state[1] = k, other[1]


class Percentile(Aggregate):
    def __init__(self, arg, budget, p: float):
        super().__init__(arg, budget)
        self.p = p

    def new(self):
        return [[]]

    def add(self, state, row):
        v = self.arg(row)
        if v is None:
            return
        if type(v) is int or type(v) is float:
            n = s.number(v)  # a float may be infinite or NaN: not a number here
            if n is not None:
                state[0].append(n)
                self.budget.take()
            return
        for n in _numbers(v):
            state[0].append(n)
            self.budget.take()

    def result(self, state):
        return percentile(state[0], self.p)

    def portable(self, state):
        return [list(state[0])]

    def merge(self, state, other):
        state[0].extend(other[0])
        self.budget.take(len(other[0]))


def percentile(values: list, p: float) -> float | None:
    """numpy's default ("linear"): rank p/100*(n-1), interpolated between its neighbours."""
    if not values:
        return None
    ordered = sorted(values)
    rank = p / 100 * (len(ordered) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    a, b = float(ordered[lo]), float(ordered[hi])
    return s.checked(a + (b - a) * (rank - lo))


class Values(Aggregate):
    def __init__(self, arg, budget, cap: int):
        super().__init__(arg, budget)
        self.cap = cap

    def new(self):
        return [{}, False]

    def add(self, state, row):
        seen = state[0]
        for x in _each(self.arg(row)):
            k = self.budget.key(x)
            if k in seen:
                continue
            if len(seen) >= self.cap:
                self._capped(state)
                continue
            seen[k] = x
            self.budget.take()

    def _capped(self, state):
        if not state[1]:
            state[1] = True
            self.budget.warnings.append(f"VALUES kept the first {self.cap} distinct values of a group")

    def portable(self, state):
        return [list(state[0]), state[1]]  # the keys in the order first seen: the first ``cap`` stay first

    def merge(self, state, other):
        seen = state[0]
        for k in other[0]:
            if k in seen:
                continue
            if len(seen) >= self.cap:
                self._capped(state)
                continue
            seen[k] = s.unkey(k)
            self.budget.take()
        if other[1]:
            self._capped(state)

    def result(self, state):
        values = sorted((s.unkey(k) for k in state[0]), key=s.order)
        if not values:
            return None
        return values[0] if len(values) == 1 else values


class Top(Aggregate):
    def __init__(self, arg, budget, n: int, descending: bool):
        super().__init__(arg, budget)
        self.n = n
        self.descending = descending

    def new(self):
        return [[], 0]  # heap of (key, seq, value), sequence for ties

    def add(self, state, row):
        for x in _each(self.arg(row)):
            self._push(state, _ordered(x))

    def _push(self, state, v):
        heap = state[0]
        k = s.order(v)
        # Keep the n best: a min-heap of the largest (descending), or of the
        # smallest through an inverted key (ascending); of equal ones the first seen.
        item = (k, state[1], v) if self.descending else (_Inverted(k), state[1], v)
        state[1] += 1
        if len(heap) < self.n:
            heapq.heappush(heap, item)
            self.budget.take()
        elif item[0] > heap[0][0]:
            heapq.heapreplace(heap, item)

    def portable(self, state):
        return [[v for _, _, v in sorted(state[0], key=lambda it: it[1])]]  # the kept values, in the order seen

    def merge(self, state, other):
        for v in other[0]:
            self._push(state, v)

    def result(self, state):
        # In the order seen, then by value (a stable sort): equal values (443 and 443.0) in a fixed order.
        seen = sorted(state[0], key=lambda it: it[1])
        values = [v for _, _, v in sorted(seen, key=lambda it: s.order(it[2]), reverse=self.descending)]
        if not values:
            return None
        return values[0] if len(values) == 1 else values


class _Inverted:
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __lt__(self, other):
        return other.k < self.k

    def __gt__(self, other):
        return other.k > self.k

    def __eq__(self, other):
        return self.k == other.k


ARGS = {
    "COUNT": (0, 1), "COUNT_DISTINCT": (1, 1), "SUM": (1, 1), "AVG": (1, 1), "MIN": (1, 1), "MAX": (1, 1),
    "MEDIAN": (1, 1), "PERCENTILE": (2, 2), "VALUES": (1, 1), "TOP": (2, 3),
}


def build(node: t.Call, arg: Callable[[dict], Any] | None, budget: Budget, max_values: int, max_top: int) -> Aggregate:
    """The aggregation ``node`` names, its argument compiled already (None for COUNT(*))."""
    lo, hi = ARGS[node.name]
    n = len(node.args)
    if node.star:
        if node.name != "COUNT":
            raise QueryError(f"{node.name}(*) is not an aggregation", node.pos, f"{node.name}(expression)")
        return CountRows(None, budget)
    if not lo <= n <= hi:
        want = f"{lo}" if lo == hi else f"{lo} to {hi}"
        raise QueryError(f"{node.name} takes {want} arguments, not {n}", node.pos, None)
    name = node.name
    if name == "COUNT":
        return CountRows(None, budget) if n == 0 else Count(arg, budget)
    if name == "COUNT_DISTINCT":
        return CountDistinct(arg, budget)
    if name == "SUM":
        return Sum(arg, budget)
    if name == "AVG":
        return Avg(arg, budget)
    if name in ("MIN", "MAX"):
        return Extreme(arg, budget, largest=name == "MAX")
    if name == "MEDIAN":
        return Percentile(arg, budget, 50.0)
    if name == "PERCENTILE":
        p = constant(node.args[1], "PERCENTILE's percentile")
        if type(p) not in (int, float) or not 0 <= p <= 100:
            raise QueryError("PERCENTILE's percentile must be a number from 0 to 100", node.args[1].pos, "a number from 0 to 100")
        return Percentile(arg, budget, float(p))
    if name == "VALUES":
        return Values(arg, budget, max_values)
    # TOP
    count = constant(node.args[1], "TOP's count")
    if type(count) is not int or not 1 <= count <= max_top:
        raise QueryError(f"TOP's count must be an integer from 1 to {max_top}", node.args[1].pos, f"an integer from 1 to {max_top}")
    direction = constant(node.args[2], "TOP's order") if n > 2 else "desc"
    if not isinstance(direction, str) or direction.lower() not in ("asc", "desc"):
        raise QueryError('TOP\'s order must be "asc" or "desc"', node.args[2].pos, '"asc" or "desc"')
    return Top(arg, budget, count, descending=direction.lower() == "desc")
