"""Running a pipeline's commands over records: exact and bounded.

Commands are compiled once (names resolved, expressions to closures, errors
raised with their positions before any record is read), then run as a chain
of generators over the rows, so WHERE, EVAL, KEEP, DROP, RENAME and LIMIT
stream; STATS folds every row into its groups; SORT keeps at most what the
next LIMIT (or the answer's row limit) needs. Every bound is an
``AnalyticsLimits`` field and past one the query fails with a
``LimitExceeded`` that names it: nothing partial is answered as complete.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from seclake.analytics import aggregates as ag
from seclake.analytics import scalars as s
from seclake.analytics import tree as t
from seclake.analytics.expressions import compile_expr, is_aggregate
from seclake.errors import LimitExceeded, QueryError
from seclake.query.ast import Wildcard
from seclake.query.datemath import now_ms
from seclake.query.pattern import full_matcher
from seclake.record.dataset import Dataset

Row = dict[str, Any]


@dataclass(frozen=True)
class AnalyticsLimits:
    """What one query may take (settings wire these; the defaults are for one analyst's query)."""

    # An explicit LIMIT above this is refused; without LIMIT the answer
    # stops at default_rows (ES|QL's implicit LIMIT 1000) with a warning.
    max_rows: int = 10_000
    default_rows: int = 1_000
    max_groups: int = 100_000
    # Groups one row may join: multi-valued BY fields multiply (3 fields of 100 values: 10^6).
    max_row_groups: int = 1_000
    # Values aggregations hold at once: distinct values, values for
    # percentiles, VALUES and TOP entries (about 100 bytes each).
    max_held_values: int = 5_000_000
    max_values_per_group: int = 1_000  # VALUES keeps at most this many per group
    max_top: int = 1_000
    # Rows a SORT without a following LIMIT may hold.
    max_sorted_rows: int = 1_000_000
    max_query_length: int = 16_384


@dataclass
class Result:
    """ES|QL's answer: ``columns`` [{name, type}], ``values`` rows, ``warnings``."""

    columns: list[dict[str, str]]
    values: list[list[Any]]
    warnings: list[str] = field(default_factory=list)


# -- names in scope ---------------------------------------------------------------------------


@dataclass
class Scope:
    """The columns a command sees, and the record fields the pipeline reads.

    Before STATS or a KEEP of exact names the rows are records: a name that
    is no column made by an earlier command is a record field, resolved by
    the dataset (``user.name`` is ``@fields.user.name`` in events). After
    them only the columns listed exist."""

    dataset: Dataset | None
    now: int
    columns: dict[str, str | None] = field(default_factory=dict)  # made or kept columns -> kind
    order: list[str] = field(default_factory=list)  # their order in the answer
    closed: bool = False
    dropped: set[str] = field(default_factory=set)
    fields: set[str] = field(default_factory=set)  # record paths read
    keep_patterns: list[Callable[[str], bool]] | None = None  # a KEEP over records with wildcards
    drop_tests: list[Callable[[str], bool]] = field(default_factory=list)  # a DROP over records with wildcards
    patterns: int = 0  # LIKE/RLIKE patterns compiled (expressions.MAX_PATTERNS)

    def path(self, name: str) -> str:
        return self.dataset.resolve(name) if self.dataset is not None else name

    def raw_kind(self, path: str) -> str | None:
        if self.dataset is not None and self.dataset.is_date(path):
            return "raw_date"
        return None

    def resolve(self, name: str, pos: int) -> tuple[str, str | None]:
        if name in self.columns:
            return name, self.columns[name]
        if self.closed and self.path(name) in self.columns:  # a record field kept by its stored path
            return self.path(name), self.columns[self.path(name)]
        if self.closed:
            shown = ", ".join(self.order[:20]) or "none"
            raise QueryError(f"unknown column '{name}'", pos, f"one of the columns: {shown}")
        path = self.path(name)
        if path in self.columns:
            return path, self.columns[path]
        if name in self.dropped or path in self.dropped:
            raise QueryError(f"column '{name}' was dropped or renamed by an earlier command", pos, "a column that exists")
        self.fields.add(path)
        return path, self.raw_kind(path)

    def add(self, name: str, kind: str | None) -> None:
        if name in self.columns:
            self.order.remove(name)
        self.columns[name] = kind
        self.order.append(name)
        self.dropped.discard(name)


def _pattern_test(text: str, pos: int) -> Callable[[str], bool]:
    if "*" not in text:
        return lambda name: name == text
    escaped = text.replace("\\", "\\\\").replace("?", "\\?")
    return full_matcher(Wildcard(None, escaped, cased=True).regex(), pos, cased=True)


# -- the plan ---------------------------------------------------------------------------------

Stage = Callable[[Iterator[Row]], Iterator[Row]]


@dataclass
class Plan:
    stages: list[Stage]
    scope: Scope
    budget: ag.Budget
    has_stats: bool
    reads_all: bool  # the rows are whole records to the end (no STATS, no exact KEEP)
    time_path: str | None
    ordered: bool  # a STATS or SORT orders the rows
    newest_first: bool  # rows that are records are put newest first (the time field is read)
    row_cap: int  # rows the answer may hold
    implicit_limit: bool
    fields_read: set[str]

    @property
    def scope_fields(self) -> set[str]:
        return self.fields_read


def plan(commands: list[t.Command], dataset: Dataset | None, now: int | None, limits: AnalyticsLimits) -> Plan:
    scope = Scope(dataset, now_ms() if now is None else now)
    budget = ag.Budget(limits.max_held_values)
    stages: list[Stage] = []
    has_stats = False
    ordered = False  # a STATS or SORT has ordered the rows
    newest_at: int | None = None  # where the rows that are records are put newest first
    explicit_limit = any(isinstance(c, t.Limit) for c in commands)
    exact_keep = False
    for i, command in enumerate(commands):
        following = commands[i + 1] if i + 1 < len(commands) else None
        if isinstance(command, t.Where):
            stages.append(_where(command, scope))
        elif isinstance(command, t.Eval):
            stages.append(_eval(command, scope))
        elif isinstance(command, t.Stats):
            stages.append(_stats(command, scope, budget, limits))
            has_stats = ordered = True
        elif isinstance(command, t.Sort):
            # The LIMIT that cuts the sorted rows, past commands that keep the row count.
            ahead = i + 1
            while ahead < len(commands) and isinstance(commands[ahead], t.Eval | t.Keep | t.Drop | t.Rename):
                ahead += 1
            following = commands[ahead] if ahead < len(commands) else None
            if isinstance(following, t.Limit):
                keep = following.count
            elif following is None and not explicit_limit:
                keep = limits.default_rows + 1  # one more: to know the implicit limit cut
            else:
                keep = None
            stages.append(_sort(command, scope, keep, limits))
            ordered = True
        elif isinstance(command, t.Limit):
            if command.count > limits.max_rows:
                raise LimitExceeded("LIMIT", command.count, limits.max_rows)
            if not ordered and newest_at is None:
                newest_at = len(stages)
                stages.append(_newest(command.count))
            stages.append(_limit(command.count))
        elif isinstance(command, t.Keep):
            exact_keep = _keep(command, scope, stages) or exact_keep
        elif isinstance(command, t.Drop):
            _drop(command, scope, stages)
        elif isinstance(command, t.Rename):
            _rename(command, scope, stages)
        else:  # pragma: no cover - the grammar makes no other command
            raise QueryError(f"unknown command {type(command).__name__}", command.pos, None)
    row_cap = limits.max_rows if explicit_limit else limits.default_rows
    time_path = dataset.time_field if dataset is not None else "@timestamp"
    if not ordered and newest_at is None:
        newest_at = len(stages)
        stages.append(_newest(row_cap + 1))
    if newest_at is not None:
        # Rows that are records come newest first: each is stamped with its time as it
        # enters (a hidden column the row-wise commands carry), and before the first
        # LIMIT (or the answer's row limit) only the newest that many are kept, in
        # time order: memory bounded by the LIMIT, not by the records read.
        stages.insert(0, _stamp(time_path))
    return Plan(stages, scope, budget, has_stats, not (has_stats or exact_keep), time_path, ordered,
                newest_at is not None, row_cap, not explicit_limit, set(scope.fields))


def run(p: Plan, records: Iterable[Row], start: int = 0) -> Result:
    """The plan's stages from ``start`` over ``records`` (the columnar evaluator hands the
    rows a STATS made to the stages after it), and the answer."""
    rows: Iterator[Row] = iter(records)
    for stage in p.stages[start:]:
        rows = stage(rows)
    out = list(itertools.islice(rows, p.row_cap + 1))
    warnings = _warnings(p, len(out))
    return _answer(out[: p.row_cap], p, warnings)


def answer_of_columns(p: Plan, column: Callable[[str, int], list], n: int) -> Result:
    """The answer of ``n`` rows that the plan's last stage (a STATS whose outputs are its
    aggregations and BY columns) would give, handed a column at a time: ``column(name, rows)``
    gives that column's first ``rows`` values. Equal to ``run``'s over the same rows, without a
    dict per row (the columnar evaluator: a timechart's 1,000 rows)."""
    warnings = _warnings(p, n)
    n = min(n, p.row_cap)
    names = list(p.scope.order)
    return _typed(names, {name: p.scope.columns[name] for name in names}, [column(name, n) for name in names], n,
                  warnings)


def _warnings(p: Plan, rows: int) -> list[str]:
    """The plan's warnings for an answer of ``rows`` rows (before the row cap cuts it)."""
    warnings = list(p.budget.warnings)
    if rows > p.row_cap and p.implicit_limit:
        warnings.append(f"the answer stops at {p.row_cap} rows (the implicit LIMIT); add LIMIT n for up to more")
    return warnings


# The hidden column of an aggregation's result in a STATS's row: AGG_SLOT + its index (names never hold NUL).
AGG_SLOT = "\x00agg"
TIME = "\x00time"  # the hidden column of a record's time (names never hold NUL)


def _stamp(path: str) -> Stage:
    def stamp(rows):
        to_ms = s.to_ms
        for row in rows:
            row = dict(row)  # the caller's records are not ours to change
            ms = to_ms(row.get(path))
            row[TIME] = (ms is not None, ms if ms is not None else 0)
            yield row

    return stamp


def _newest(n: int) -> Stage:
    def newest(rows):
        # Stable, as sorted(..., reverse=True)[:n]: records of one millisecond keep their order.
        return iter(heapq.nlargest(n, rows, key=lambda row: row.get(TIME, (False, 0))))

    return newest


# -- commands ---------------------------------------------------------------------------------


def _where(command: t.Where, scope: Scope) -> Stage:
    test, kind = compile_expr(_no_aggregates(command.condition), scope)

    def where(rows):
        return (row for row in rows if test(row) is True)

    return where


def _no_aggregates(node: t.Expr) -> t.Expr:
    stack = [node]
    while stack:
        n = stack.pop()
        if is_aggregate(n):
            raise QueryError(f"{n.name} is an aggregation: it may only stand in STATS", n.pos, "a STATS command")
        stack.extend(t.children(n))
    return node


def _eval(command: t.Eval, scope: Scope) -> Stage:
    steps = []
    for named in command.columns:
        fn, kind = compile_expr(_no_aggregates(named.expr), scope)
        if kind == "span":
            raise QueryError("a time span is not a value", named.expr.pos, "a date, number or string")
        steps.append((named.name, fn))
        scope.add(named.name, kind)

    def eval_(rows):
        for row in rows:
            row = dict(row)  # the caller's records are not ours to change
            for name, fn in steps:
                row[name] = fn(row)  # later columns see earlier ones (ES|QL)
            yield row

    return eval_


def _limit(n: int) -> Stage:
    def limit(rows):
        return itertools.islice(rows, n)

    return limit


def _sort_keys(command: t.Sort, scope: Scope):
    keys = []
    for key in command.keys:
        fn, kind = compile_expr(_no_aggregates(key.expr), scope)
        keys.append((fn, key.descending, key.nulls_first))
    return keys


def _sort(command: t.Sort, scope: Scope, keep: int | None, limits: AnalyticsLimits) -> Stage:
    makers = [(_sort_key(fn, descending, nulls_first), descending) for fn, descending, nulls_first in _sort_keys(command, scope)]

    def sort_rows(held: list[tuple[tuple, Row]]) -> None:
        # One stable sort per key, the last key first: each key has its own direction.
        for i in reversed(range(len(makers))):
            held.sort(key=lambda entry, i=i: entry[0][i], reverse=makers[i][1])

    def sort(rows):
        # Each row held with its sort keys, computed once as it comes (not again at each cut).
        held: list[tuple[tuple, Row]] = []
        bound = keep if keep is not None else limits.max_sorted_rows
        # With a LIMIT after it, only that many rows are kept: sorted and cut
        # whenever the buffer reaches twice that (amortized n log n, bounded memory).
        window = max(2 * bound, 1024) if keep is not None else None
        for row in rows:
            held.append((tuple(make(row) for make, _ in makers), row))
            if window is not None and len(held) >= window:
                sort_rows(held)
                del held[bound:]
            elif window is None and len(held) > bound:
                raise LimitExceeded("rows SORT holds without a LIMIT after it", len(held), bound)
        sort_rows(held)
        if keep is not None:
            del held[keep:]
        return iter([row for _, row in held])

    return sort


def _sort_key(fn, descending: bool, nulls_first: bool):
    # Null's flag puts it first or last whatever the direction (reverse=True flips flags too).
    null_flag = (0 if nulls_first else 1) if not descending else (1 if nulls_first else 0)
    value_flag = 1 - null_flag

    def sort_key(row):
        v = fn(row)
        if type(v) is list:
            v = [x for x in v if x is not None]
            if not v:
                return (null_flag, ())
            # A multi-valued field sorts by its least value ascending, its greatest descending (ES|QL).
            return (value_flag, max(map(s.order, v)) if descending else min(map(s.order, v)))
        if v is None:
            return (null_flag, ())
        return (value_flag, s.order(v))

    return sort_key


def _keep(command: t.Keep, scope: Scope, stages: list[Stage]) -> bool:
    """KEEP; True when it leaves only known columns (exact names over records)."""
    if scope.closed or all("*" not in n.text for n in command.names):
        chosen: list[tuple[str, str, str | None]] = []  # (row key, column name, kind)
        for n in command.names:
            if "*" in n.text:
                test = _pattern_test(n.text, n.pos)
                matched = [c for c in scope.order if test(c)]
                if not matched:
                    raise QueryError(f"no column matches '{n.text}'", n.pos, "a pattern matching a column")
                chosen.extend((c, c, scope.columns[c]) for c in matched)
            else:
                key, kind = scope.resolve(n.text, n.pos)
                chosen.append((key, key, kind))
        seen: set[str] = set()
        unique = []
        for key, name, kind in chosen:
            if name not in seen:
                seen.add(name)
                unique.append((key, name, kind))
        scope.columns = {name: kind for _, name, kind in unique}
        scope.order = [name for _, name, _ in unique]
        scope.closed = True
        keys = [key for key, _, _ in unique]

        def keep(rows):
            for row in rows:
                out = {k: row.get(k) for k in keys}
                if TIME in row:
                    out[TIME] = row[TIME]
                yield out

        stages.append(keep)
        return True
    # Wildcards over records: which fields exist is known only row by row.
    tests = []
    for n in command.names:
        tests.append(_either(_pattern_test(n.text, n.pos), _pattern_test(scope.path(n.text), n.pos)))
    scope.keep_patterns = tests
    made = [c for c in scope.order if any(test(c) for test in tests)]
    scope.columns = {c: scope.columns[c] for c in made}
    scope.order = made

    def keep_matching(rows):
        for row in rows:
            yield {k: v for k, v in row.items() if k == TIME or any(test(k) for test in tests)}

    stages.append(keep_matching)
    return False


def _either(a, b):
    return lambda name: a(name) or b(name)


def _drop(command: t.Drop, scope: Scope, stages: list[Stage]) -> None:
    exact: list[str] = []
    tests = []
    for n in command.names:
        if "*" in n.text:
            test = _either(_pattern_test(n.text, n.pos), _pattern_test(scope.path(n.text), n.pos))
            tests.append(test)
            gone = [c for c in scope.order if test(c)]
            if not gone and scope.closed:
                raise QueryError(f"no column matches '{n.text}'", n.pos, "a pattern matching a column")
            for c in gone:
                _forget(scope, c)
                exact.append(c)
        else:
            # Dropping a record field reads nothing: no resolve (which would count it as read).
            if n.text in scope.columns or scope.closed:
                key, _ = scope.resolve(n.text, n.pos)
            else:
                key = scope.path(n.text)
            _forget(scope, key)
            exact.append(key)
            scope.dropped.update((n.text, key))
    gone_keys = set(exact)
    if not scope.closed:
        scope.dropped.update(gone_keys)
        # An open schema remembers what was dropped by a pattern, for the answer's columns.
        scope.drop_tests.extend(tests)

    def drop(rows):
        for row in rows:
            yield {k: v for k, v in row.items() if k == TIME or (k not in gone_keys and not any(test(k) for test in tests))}

    stages.append(drop)


def _forget(scope: Scope, name: str) -> None:
    if name in scope.columns:
        del scope.columns[name]
        scope.order.remove(name)


def _rename(command: t.Rename, scope: Scope, stages: list[Stage]) -> None:
    pairs = []
    for old, new in command.pairs:
        if "*" in old.text or "*" in new.text:
            raise QueryError("RENAME takes names, not patterns", old.pos if "*" in old.text else new.pos, "a column name")
        key, kind = scope.resolve(old.text, old.pos)
        if key in scope.columns:
            i = scope.order.index(key)
            del scope.columns[key]
            scope.order.pop(i)
            if new.text in scope.columns:
                _forget(scope, new.text)
                i = min(i, len(scope.order))
            scope.columns[new.text] = kind
            scope.order.insert(i, new.text)
        else:
            scope.dropped.add(key)
            scope.add(new.text, kind)
        scope.dropped.discard(new.text)
        pairs.append((key, new.text))

    def rename(rows):
        for row in rows:
            row = dict(row)
            for old, new in pairs:
                row[new] = row.pop(old, None)
            yield row

    stages.append(rename)


# -- STATS ------------------------------------------------------------------------------------


def _stats(command: t.Stats, scope: Scope, budget: ag.Budget, limits: AnalyticsLimits) -> Stage:
    if not command.aggregates and not command.groups:
        raise QueryError("STATS needs an aggregation or a BY", command.pos, "STATS COUNT(*) BY field")
    # BY expressions, over the rows before STATS.
    groups = []
    for named in command.groups:
        if any(is_aggregate(n) for n in _walk(named.expr)):
            raise QueryError("an aggregation cannot stand in BY", named.expr.pos, "a field or an expression")
        fn, kind = compile_expr(named.expr, scope)
        if kind == "span":
            raise QueryError("a time span is not a value", named.expr.pos, "a field or an expression")
        groups.append((named.name, fn, kind))
    group_names = {name for name, _, _ in groups}
    # Aggregations: each distinct aggregation call once, its argument over the rows before STATS.
    aggregates: list[ag.Aggregate] = []
    folded: list[tuple[t.Call, t.Expr | None]] = []  # each aggregation's call and condition, in slot order
    slots: dict[tuple[int, int], tuple[str, str | None]] = {}
    items = []
    for named in command.aggregates:
        if named.name in group_names:
            continue  # a BY column of the same name wins (ES|QL)
        condition = None
        if named.where is not None:
            if not any(is_aggregate(n) for n in _walk(named.expr)):
                raise QueryError("WHERE in STATS filters an aggregation", named.where.pos, "an aggregation before WHERE")
            condition, _ = compile_expr(_no_aggregates(named.where), scope)
        for node in _walk(named.expr):
            if is_aggregate(node):
                if any(is_aggregate(inner) for arg in node.args for inner in _walk(arg)):
                    raise QueryError("an aggregation cannot contain another", node.pos, "one level of aggregation")
                arg_fn = None
                kind = None
                if not node.star and node.args:
                    arg_fn, kind = compile_expr(node.args[0], scope)
                aggregate = ag.build(node, arg_fn, budget, limits.max_values_per_group, limits.max_top)
                folded.append((node, named.where))
                if condition is not None:
                    aggregate = ag.Filtered(aggregate, condition)
                slot = f"{AGG_SLOT}{len(aggregates)}"
                aggregates.append(aggregate)
                if node.name in ("COUNT", "COUNT_DISTINCT"):
                    kind = "long"
                elif node.name in ("AVG", "MEDIAN", "PERCENTILE"):
                    kind = "double"
                elif node.name not in ("MIN", "MAX", "VALUES", "TOP") or kind == "span":
                    kind = None
                slots[(node.pos, node.end)] = (slot, kind)
        items.append(named)
    if any(named.name not in group_names and not any(is_aggregate(n) for n in _walk(named.expr)) for named in items):
        bad = next(n for n in items if not any(is_aggregate(x) for x in _walk(n.expr)))
        raise QueryError(f"'{bad.name}' is no aggregation", bad.expr.pos, "an aggregation such as COUNT(*), SUM(x)")
    # The final expressions read the aggregations' results and the BY columns.
    final_scope = Scope(None, scope.now, closed=True)
    for name, _, kind in groups:
        final_scope.columns[name] = kind
        final_scope.order.append(name)
    for slot, kind in slots.values():
        final_scope.columns[slot] = kind
    outputs = []
    names_seen: dict[str, int] = {}
    bare: list[int | None] = []  # per output: the aggregation it is, bare (its result as it is)
    for named in items:
        expr = _replace_aggregates(named.expr, slots)
        fn, kind = compile_expr(expr, final_scope)
        names_seen[named.name] = len(outputs)
        outputs.append((named.name, fn, kind))
        bare.append(int(expr.name[len(AGG_SLOT):]) if is_aggregate(named.expr) and isinstance(expr, t.Field) else None)
    # Of two columns with one name the rightmost stays (ES|QL).
    kept = [i for i, o in enumerate(outputs) if names_seen[o[0]] == i]
    outputs = [outputs[i] for i in kept]
    # The columnar evaluator answers a STATS whose outputs are all bare aggregations a column at a time.
    direct = {outputs[j][0]: bare[i] for j, i in enumerate(kept)} if all(bare[i] is not None for i in kept) else None

    scope.columns = {}
    scope.order = []
    for name, _, kind in outputs:
        scope.add(name, kind)
    for name, _, kind in groups:
        scope.add(name, kind)
    scope.closed = True
    scope.keep_patterns = None
    scope.dropped = set()

    group_fns = [fn for _, fn, _ in groups]
    n_groups = len(groups)
    max_groups = limits.max_groups
    max_row_groups = limits.max_row_groups

    count_only = all(isinstance(a, ag.CountRows) for a in aggregates)

    def fold(rows) -> dict[tuple, list]:
        """Every row into its groups: group keys -> each aggregation's state."""
        table: dict[tuple, list] = {}
        group_key = budget.key
        single = group_fns[0] if n_groups == 1 else None
        for row in rows:
            if single is not None:
                v = single(row)
                combos = [(k,) for k in _group_keys(v, max_row_groups)] if type(v) is list else ((group_key(v),),)
            elif n_groups:
                values = [fn(row) for fn in group_fns]
                if list in map(type, values):  # multi-valued: the row joins each combination
                    parts = [_group_keys(v, max_row_groups) if type(v) is list else (group_key(v),) for v in values]
                    if math.prod(map(len, parts)) > max_row_groups:
                        raise LimitExceeded("groups one row joins (the product of its multi-valued BY values)",
                                            math.prod(map(len, parts)), max_row_groups)
                    combos = itertools.product(*parts)
                else:
                    combos = (tuple(map(group_key, values)),)
            else:
                combos = ((),)
            for combo in combos:
                states = table.get(combo)
                if states is None:
                    if len(table) >= max_groups:
                        raise LimitExceeded("number of STATS groups", len(table) + 1, max_groups)
                    states = table[combo] = [a.new() for a in aggregates]
                if count_only:
                    for state in states:
                        state[0] += 1
                else:
                    for a, state in zip(aggregates, states):
                        a.add(state, row)
        return table

    def stats(rows):
        return emit(fold(rows))

    def emit(table: dict[tuple, list]) -> Iterator[Row]:
        """The rows of the groups ``table`` holds (group keys -> each aggregation's state)."""
        if not table and not n_groups:
            table[()] = [a.new() for a in aggregates]
        return finish({combo: [a.result(state) for a, state in zip(aggregates, states)]
                       for combo, states in table.items()})

    def finish(table: dict[tuple, list], in_order: bool = False) -> Iterator[Row]:
        """The rows of the groups ``table`` holds (group keys -> each aggregation's result);
        ``in_order``: in the table's order (the columnar evaluator sorted them already)."""
        # Groups in the order of their BY values (nulls last): a timechart comes in time order.
        # A group key is its value's order already (scalars.key): no value is read again.
        ordered = table.items() if in_order else sorted(table.items(), key=lambda kv: group_order(kv[0]))
        for combo, results in ordered:
            row = {name: s.unkey(k) for (name, _, _), k in zip(groups, combo)}
            for i, result in enumerate(results):
                row[f"{AGG_SLOT}{i}"] = result
            out = {name: fn(row) for name, fn, _ in outputs}
            for name, _, _ in groups:
                out[name] = row[name]
            yield out

    # What the columnar evaluator (analytics/columnar.py) needs to fold the groups itself.
    stats.folding = Folding(command, [named.expr for named in command.groups], folded, finish, budget,  # type: ignore[attr-defined]
                            direct, [name for name, _, _ in groups])
    # Cluster mode folds the groups on the searchers and merges them here (analytics/partial.py).
    stats.fold, stats.emit, stats.states, stats.max_groups = fold, emit, aggregates, max_groups  # type: ignore[attr-defined]
    return stats


def group_order(combo: tuple) -> tuple:
    """The order of a STATS's groups: by their BY keys (``scalars.key``: a key is its value's
    order), nulls last. A timechart comes in time order."""
    return tuple((k is None, k or ()) for k in combo)


@dataclass
class Folding:
    """A STATS stage's parts: its BY expressions, its aggregations (call, condition) in the
    order of their results, and ``finish`` (group keys -> results: the stage's rows)."""

    command: t.Stats
    groups: list[t.Expr]
    aggregates: list[tuple[t.Call, t.Expr | None]]
    finish: Callable[..., Iterator[Row]]
    budget: ag.Budget
    # When every output is a bare aggregation: output name -> the index of its result; else None.
    direct: dict[str, int] | None = None
    group_names: list[str] = field(default_factory=list)  # the BY columns' names, in BY order


def _group_keys(v, most: int) -> list:
    """A value's group keys: a multi-valued field puts the row in the group of each of its values."""
    if type(v) is list:
        keys = list(dict.fromkeys(s.key(x) for x in v))
        if len(keys) > most:
            raise LimitExceeded("groups one row joins (the product of its multi-valued BY values)", len(keys), most)
        return keys or [None]
    return [s.key(v)]


def _walk(node: t.Expr) -> Iterator[t.Expr]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if not is_aggregate(n):
            stack.extend(t.children(n))


def _replace_aggregates(node: t.Expr, slots: dict) -> t.Expr:
    if is_aggregate(node):
        slot, _ = slots[(node.pos, node.end)]
        return t.Field(slot, pos=node.pos, end=node.end)
    if isinstance(node, t.Call):
        return t.Call(node.name, tuple(_replace_aggregates(a, slots) for a in node.args), node.star, pos=node.pos, end=node.end)
    if isinstance(node, t.Unary):
        return t.Unary(node.op, _replace_aggregates(node.operand, slots), pos=node.pos, end=node.end)
    if isinstance(node, t.Binary):
        return t.Binary(node.op, _replace_aggregates(node.left, slots), _replace_aggregates(node.right, slots), pos=node.pos, end=node.end)
    if isinstance(node, t.IsNull):
        return t.IsNull(_replace_aggregates(node.operand, slots), node.negated, pos=node.pos, end=node.end)
    if isinstance(node, t.In):
        return t.In(_replace_aggregates(node.operand, slots), tuple(_replace_aggregates(i, slots) for i in node.items),
                    node.negated, pos=node.pos, end=node.end)
    if isinstance(node, t.Like):
        return t.Like(_replace_aggregates(node.operand, slots), node.pattern, node.pattern_pos, node.negated, node.regex,
                      pos=node.pos, end=node.end)
    return node


# -- the answer -------------------------------------------------------------------------------


def _answer(rows: list[Row], p: Plan, warnings: list[str]) -> Result:
    scope = p.scope
    if scope.closed:
        names = list(scope.order)
        kinds = {n: scope.columns[n] for n in names}
    else:
        names, kinds = _record_columns(rows, scope)
    return _typed(names, kinds, [[row.get(name) for row in rows] for name in names], len(rows), warnings)


def _typed(names: list[str], kinds: dict[str, str | None], data: list[list], n: int, warnings: list[str]) -> Result:
    """The answer of columns ``names`` holding ``data`` (``n`` values each): typed and shown."""
    columns = []
    shown = []
    for name, column in zip(names, data):
        kind = kinds.get(name)
        column = [None if type(v) is dict else v for v in column]
        ctype = s.column_type(column, "date" if kind == "raw_date" else kind)
        columns.append({"name": name, "type": ctype})
        shown.append(s.shown_all(column, ctype))
    # Rows made from the columns at once (zip), not a value appended at a time.
    values: list[list[Any]] = [list(row) for row in zip(*shown)] if shown else [[] for _ in range(n)]
    return Result(columns, values, warnings)


def _record_columns(rows: list[Row], scope: Scope) -> tuple[list[str], dict[str, str | None]]:
    made = set(scope.columns)
    drop_tests = scope.drop_tests
    present: set[str] = set()
    for row in rows:
        present.update(row)
    present.discard(TIME)
    raw = sorted(k for k in present - made if k not in scope.dropped and not any(test(k) for test in drop_tests))
    kinds: dict[str, str | None] = {k: scope.raw_kind(k) for k in raw}
    kinds.update(scope.columns)
    if scope.keep_patterns is not None:
        names: list[str] = []
        for test in scope.keep_patterns:
            for k in sorted(present):
                if test(k) and k not in names:
                    names.append(k)
        return names, kinds
    return raw + list(scope.order), kinds
