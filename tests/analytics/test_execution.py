"""Execution: random STATS queries against a plain-Python reference, nulls, limits, bounded work."""

from __future__ import annotations

import math
import re
import time
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.analytics import AnalyticsLimits, execute, parse
from seclake.errors import LimitExceeded

FIELDS = ["a", "b", "c"]
values = st.one_of(
    st.none(),
    st.integers(-1000, 1000),
    st.floats(-1000, 1000, allow_nan=False).map(lambda x: round(x, 2)),
    st.integers(0, 50).map(str),  # numbers written as strings
    st.sampled_from(["x", "y", "Z", ""]),
    st.booleans(),
)
records = st.lists(
    st.fixed_dictionaries({}, optional={f"@fields.{name}": values for name in FIELDS}),
    max_size=40,
)
AGGS = ["COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX", "MEDIAN"]

_NUM = re.compile(r"^[+-]?\d+(\.\d+)?$")


def _num(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and _NUM.match(v):
        return int(v) if v.lstrip("+-").isdigit() else float(v)
    return None


def _key(v):
    # Grouping reads numbers as numbers: "1", 1 and 1.0 are one value; True is not 1.
    if v is None:
        return None
    if isinstance(v, bool):
        return ("bool", v)
    if _num(v) is not None:
        return ("num", float(_num(v)))
    return ("str", v)


def _text(k):
    if k is None:
        return None
    kind, v = k
    if kind == "bool":
        return "true" if v else "false"
    if kind == "str" and v in ("true", "false"):
        return v
    return repr(float(v) + 0.0) if kind == "num" else v  # -0.0 is 0


def _rank(v):
    if isinstance(v, bool):
        return (0, v)
    n = _num(v)
    if n is not None:
        return (1, n)
    return (2, v)


def _reference(agg, field, by, rows):
    groups = defaultdict(list)
    for r in rows:
        groups[_key(r.get(f"@fields.{by}"))].append(r.get(f"@fields.{field}"))
    if not groups and by is None:
        groups[None] = []
    out = {}
    for k, vs in groups.items():
        present = [v for v in vs if v is not None]
        nums = [n for n in map(_num, present) if n is not None]
        if agg == "COUNT":
            out[k] = len(present)
        elif agg == "COUNT_DISTINCT":
            out[k] = len({_key(v) for v in present})
        elif agg == "SUM":
            out[k] = sum(nums) if nums else None
        elif agg == "AVG":
            out[k] = sum(nums) / len(nums) if nums else None
        elif agg == "MEDIAN":
            s = sorted(nums)
            if not s:
                out[k] = None
            else:
                r = (len(s) - 1) / 2
                lo, hi = math.floor(r), min(math.floor(r) + 1, len(s) - 1)
                out[k] = s[lo] + (s[hi] - s[lo]) * (r - lo)
        else:
            if not present:
                out[k] = None
            else:
                best = (max if agg == "MAX" else min)(present, key=_rank)
                out[k] = _rank(best)[1]
    return out


@settings(max_examples=150, deadline=None)
@given(records, st.sampled_from(AGGS), st.sampled_from(FIELDS), st.sampled_from(FIELDS + [None]))
def test_random_stats_agree_with_the_reference(rows, agg, field, by):
    query = f"| STATS v = {agg}({field})" + (f" BY {by}" if by else "")
    result = execute(parse(query), rows)
    want = _reference(agg, field, by, rows)
    got = {}
    for row in result.values:
        got[_text(_key(row[1])) if by else None] = row[0]
    # A BY column of mixed kinds is a keyword column (its values as text): compare keys as text.
    want = {(_text(k) if by else None): v for k, v in want.items()}
    assert set(got) == set(want), (got, want)
    as_text = result.columns[0]["type"] == "keyword"  # MIN/MAX over mixed kinds: a keyword column
    for k, v in want.items():
        g = got[k]
        if as_text:
            g, v = _text(_key(g)), _text(_key(v))
        if isinstance(v, (int, float)) and not isinstance(v, bool) and g is not None:
            assert math.isclose(g, v, rel_tol=1e-9, abs_tol=1e-9), (k, g, v)
        else:
            assert g == v, (k, g, v)


def test_null_semantics():
    rows = [{"@fields.a": 1}, {"@fields.a": None}, {}, {"@fields.a": [1, 2]}, {"@fields.a": "x"}]
    r = execute(parse("| EVAL gt = a > 0, eq = a == 1, n = a + 1, isnull = a IS NULL | KEEP gt, eq, n, isnull"), rows)
    got = sorted(map(repr, r.values))
    # a missing field and null compare as null; a multi-valued field too; a word and a number do not compare.
    assert got == sorted(map(repr, [[True, True, 2, False], [None, None, None, True], [None, None, None, True],
                                     [None, None, None, False], [None, None, None, False]]))
    assert execute(parse("| WHERE a > 0 OR true | STATS COUNT(*)"), rows).values == [[5]]
    assert execute(parse("| WHERE NOT a > 0 | STATS COUNT(*)"), rows).values == [[0]]


def test_dates_in_answers_are_iso_8601_with_the_type_date():
    rows = [{"@timestamp": 1_700_000_000_123}, {"@timestamp": "2023-11-14T22:13:20.456Z"}]
    r = execute(parse("| STATS first = MIN(@timestamp), last = MAX(@timestamp)"), rows)
    assert r.columns == [{"name": "first", "type": "date"}, {"name": "last", "type": "date"}]
    assert r.values == [["2023-11-14T22:13:20.123Z", "2023-11-14T22:13:20.456Z"]]


def test_rows_are_records_newest_first():
    rows = [{"@timestamp": t, "@fields.n": t} for t in (3, 1, 2)]
    r = execute(parse("| KEEP n"), rows)
    assert r.values == [[3], [2], [1]]
    assert execute(parse("| SORT n | KEEP n"), rows).values == [[1], [2], [3]]


def test_the_implicit_limit_says_it_cut():
    rows = [{"@timestamp": i} for i in range(30)]
    r = execute(parse("| KEEP @timestamp"), rows, limits=AnalyticsLimits(default_rows=10))
    assert len(r.values) == 10 and r.warnings
    assert not execute(parse("| KEEP @timestamp | LIMIT 30"), rows, limits=AnalyticsLimits(default_rows=10)).warnings


def test_too_many_groups_is_a_clear_error():
    rows = [{"@fields.a": i} for i in range(50)]
    with pytest.raises(LimitExceeded, match="STATS groups"):
        execute(parse("| STATS COUNT(*) BY a"), rows, limits=AnalyticsLimits(max_groups=10))


def test_held_values_are_bounded():
    rows = [{"@fields.a": i} for i in range(50)]
    with pytest.raises(LimitExceeded, match="values"):
        execute(parse("| STATS COUNT_DISTINCT(a)"), rows, limits=AnalyticsLimits(max_held_values=20))


def test_sort_with_limit_holds_only_what_it_returns():
    rows = ({"@fields.a": i % 977} for i in range(200_000))
    r = execute(parse("| SORT a DESC | KEEP a | LIMIT 3"), rows, limits=AnalyticsLimits(max_sorted_rows=100))
    assert r.values == [[976], [976], [976]]


def test_a_sort_without_limit_over_too_many_rows_is_refused():
    rows = [{"@fields.a": i} for i in range(100)]
    with pytest.raises(LimitExceeded, match="SORT"):
        execute(parse("| SORT a | WHERE a > 1 | LIMIT 3"), rows, limits=AnalyticsLimits(max_sorted_rows=50))


def test_hostile_patterns_match_in_linear_time():
    rows = [{"@fields.a": "a" * 20_000 + "b"}]
    started = time.perf_counter()
    r = execute(parse('| WHERE a LIKE "*a*a*a*a*a*a*a*a*a*a*a*a*c" OR a RLIKE "(a|aa)*c" | STATS COUNT(*)'), rows)
    assert r.values == [[0]]
    assert time.perf_counter() - started < 2


def test_two_million_rows_stream_through_stats():
    n = 200_000
    rows = ({"@fields.a": i % 7, "@fields.b": str(i)} for i in range(n))
    started = time.perf_counter()
    r = execute(parse("| STATS c = COUNT(*), s = SUM(b) BY a"), rows)
    assert sum(row[0] for row in r.values) == n
    assert sum(row[1] for row in r.values) == n * (n - 1) // 2
    assert time.perf_counter() - started < 30


def test_rows_that_are_records_hold_only_what_the_limit_keeps():
    import tracemalloc

    def records():
        for i in range(30_000):
            yield {"@timestamp": (i * 7919) % 30_000, "@fields.big": "x" * 2000 + str(i)}

    tracemalloc.start()
    try:
        r = execute(parse("| WHERE big IS NOT NULL | LIMIT 3 | KEEP @timestamp"), records())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [row[0] for row in r.values] == ["1970-01-01T00:00:29.999Z", "1970-01-01T00:00:29.998Z", "1970-01-01T00:00:29.997Z"]
    assert peak < 10 << 20  # 60 MB of records went through


def test_a_limit_before_stats_takes_the_newest_records():
    rows = [{"@timestamp": t, "@fields.n": t} for t in (5, 1, 4, 2, 3)]
    r = execute(parse("| LIMIT 2 | STATS s = SUM(n)"), rows)
    assert r.values == [[9]]
    assert parse("| LIMIT 2 | STATS s = SUM(n)").fields == {"@fields.n", "@timestamp"}


_LEAVES = st.sampled_from(["a", "b", "c", "@timestamp", "1", "0", "-3", "2.5", '"x"', '"7"', "true", "null", "NOW()"])


def _exprs():
    return st.recursive(
        _LEAVES,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "AND", "OR"]), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda x: f"NOT {x}"),
            inner.map(lambda x: f"{x} IS NULL"),
            st.tuples(inner, inner).map(lambda t: f"{t[0]} IN ({t[1]}, 1, null)"),
            inner.map(lambda x: f'{x} LIKE "x*"'),
            inner.map(lambda x: f'{x} RLIKE "[0-9]+"'),
            st.tuples(st.sampled_from(["TO_LOWER", "TO_UPPER", "LENGTH", "ABS", "ROUND", "TO_STRING", "TO_LONG",
                                       "TO_DOUBLE"]), inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"CONCAT({t[0]}, {t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"COALESCE({t[0]}, {t[1]})"),
            st.tuples(inner, inner, inner).map(lambda t: f"CASE({t[0]}, {t[1]}, {t[2]})"),
            st.tuples(inner, inner).map(lambda t: f"SUBSTRING({t[0]}, {t[1]}, 2)"),
            inner.map(lambda x: f'CIDR_MATCH({x}, "10.0.0.0/8")'),
            inner.map(lambda x: f"DATE_TRUNC(1 day, {x})"),
            inner.map(lambda x: f"BUCKET({x}, 10)"),
            inner.map(lambda x: f"ROUND({x}, -1)"),
        ),
        max_leaves=6,
    )


_AGG = st.tuples(st.sampled_from(["COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX", "MEDIAN", "VALUES"]), _exprs()).map(
    lambda t: f"{t[0]}({t[1]})") | st.just("COUNT(*)") | _exprs().map(lambda x: f"PERCENTILE({x}, 90)") | _exprs().map(
    lambda x: f'TOP({x}, 2, "asc")')


def _commands():
    return st.lists(
        st.one_of(
            _exprs().map(lambda x: f"WHERE {x}"),
            _exprs().map(lambda x: f"EVAL e = {x}"),
            st.tuples(_AGG, _exprs()).map(lambda t: f"STATS s = {t[0]} BY g = {t[1]}"),
            _exprs().map(lambda x: f"SORT {x} DESC NULLS LAST"),
            st.integers(0, 5).map(lambda n: f"LIMIT {n}"),
            st.just("KEEP a, b*"),
            st.just("DROP c"),
        ),
        min_size=1,
        max_size=4,
    )


@settings(max_examples=300, deadline=None)
@given(_commands(), st.lists(st.fixed_dictionaries({}, optional={"@fields.a": values, "@fields.b": values, "@fields.c": values,
                                                               "@timestamp": values}), max_size=8))
def test_any_valid_pipeline_runs_or_fails_with_a_query_error(commands, rows):
    """Generated pipelines over hostile values: no crash but a QueryError naming a construct."""
    from seclake.errors import QueryError

    text = "| " + " | ".join(commands)
    try:
        pipeline = parse(text)
    except (QueryError, LimitExceeded):
        return
    result = execute(pipeline, rows, now=0)
    for row in result.values:
        assert len(row) == len(result.columns)


def test_names_resolve_per_dataset():
    behaviors = [{"timestamp": 86_400_000 * 2 + 5, "riskScore": 7, "key": "k1"}, {"timestamp": "1970-01-03T10:00:00Z", "riskScore": "3", "key": "k2"}]
    p = parse("| STATS n = COUNT(*), risk = SUM(riskScore) BY day = BUCKET(timestamp, 1 day)", "behavior")
    assert p.fields == {"timestamp", "riskScore"}
    assert execute(p, behaviors).values == [[2, 10, "1970-01-03T00:00:00.000Z"]]
    flows = [{"@timestamp": 1, "@fields.bytes": 10}, {"@timestamp": 2, "@fields.bytes": "5"}]
    assert execute(parse("| STATS SUM(@metaflow.flow.bytes)", "flow"), flows).values == [[15]]
    from seclake.errors import QueryError

    with pytest.raises(QueryError, match="unknown dataset"):
        parse("| LIMIT 1", "nope")


def test_strings_made_by_concat_are_bounded():
    query = "| EVAL a = \"xxxxxxxx\"" + "".join(" | EVAL a = CONCAT(a, a)" for _ in range(40)) + " | KEEP a"
    with pytest.raises(LimitExceeded, match="CONCAT"):
        execute(parse(query), [{"@timestamp": 1}])


def test_multi_valued_by_fields_cannot_multiply_without_bound():
    row = {"@fields.a": list(range(100)), "@fields.b": list(range(100)), "@fields.c": list(range(100))}
    started = time.perf_counter()
    with pytest.raises(LimitExceeded, match="groups one row joins"):
        execute(parse("| STATS COUNT(*) BY a, b, c"), [row] * 1000)
    assert time.perf_counter() - started < 2
    assert len(execute(parse("| STATS COUNT(*) BY a, b"), [{"@fields.a": [1, 2], "@fields.b": [3, 4, 4]}]).values) == 4


def test_now_is_the_time_given():
    rows = [{"@timestamp": t * 3_600_000} for t in range(10)]
    r = execute(parse("| WHERE @timestamp > NOW() - 2 hours | STATS n = COUNT(*), at = MAX(NOW())"), rows, now=9 * 3_600_000)
    assert r.values == [[2, "1970-01-01T09:00:00.000Z"]]
