"""The columnar evaluator (analytics/columnar.py) answers exactly as the row evaluator: the golden
set and random records and queries, the records cut into batches (splits) anywhere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seclake.analytics import columnar, execute, parse
from seclake.analytics.execution import AnalyticsLimits
from seclake.errors import LimitExceeded
from seclake.storage.columns import of_records
from tests.analytics.golden import NOW, QUERIES, RECORDS, agree
from tests.analytics.test_golden import _selected


def answer(query: str, records: list[dict], cuts: tuple[int, ...] = (), limits: AnalyticsLimits | None = None):
    """The columnar answer over ``records`` cut into batches at ``cuts`` (None: not taken)."""
    limits = limits or AnalyticsLimits()
    pipeline = parse(query)
    prepared = columnar.prepare(pipeline.commands, pipeline.dataset, NOW, limits)
    if prepared is None:
        return None
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(records)), len(records)]
    batches = []
    for lo, hi in zip(bounds, bounds[1:]):
        part = records[lo:hi]
        batches.append(columnar.Batch(of_records(part, prepared.paths, columnar.READING.number), np.arange(len(part))))
    try:
        return columnar.evaluate(prepared, batches, limits)
    except columnar.Unsupported:
        return None


def test_the_golden_set_agrees_with_the_row_evaluator_and_the_reference():
    taken = 0
    for golden in QUERIES:
        pipeline = parse(golden.query)
        records = _selected(pipeline.head, RECORDS)
        got = answer(golden.query, records, cuts=(len(records) // 3, len(records) // 2))
        if got is None:
            continue
        taken += 1
        want = execute(pipeline, records, now=NOW)
        assert (got.columns, got.values, got.warnings) == (want.columns, want.values, want.warnings), golden.query
        assert agree(got.columns, got.values, golden, records) is None, golden.query
    # Every STATS over WHERE/EVAL of fields without booleans or arrays (46 of 71 when written).
    assert taken >= 44


def test_a_query_it_does_not_take_is_left_to_the_row_path():
    assert answer("| KEEP user.name | LIMIT 3", RECORDS) is None  # no STATS
    assert answer("| STATS VALUES(host.name)", RECORDS) is None  # an aggregation it does not run
    assert answer("| STATS COUNT(*) BY @tags", RECORDS) is None  # a multi-valued field in some records
    assert answer("| STATS COUNT(*) BY host.name", RECORDS) is not None


def test_sums_are_exact_and_past_a_long_are_null():
    big = 2**62
    records = [{"@fields.n": big}, {"@fields.n": big}, {"@fields.n": "-5"}, {"@fields.f": 0.1}, {"@fields.f": 0.2},
               {"@fields.f": 0.3}, {"@fields.f": 1e16}, {"@fields.f": 1.0}, {"@fields.f": -1e16}]
    records += [{"@fields.n": -(2**63), "@fields.f": -1}, {"@fields.n": 7, "@fields.f": 0}]
    for query in ("| STATS s = SUM(n), a = AVG(n), f = SUM(f), g = AVG(f)", "| EVAL m = n * 4 | STATS SUM(m), COUNT(m)",
                  "| EVAL m = n + n | STATS COUNT(m), MIN(n), MAX(n)", "| EVAL q = n / f, r = n % f | STATS SUM(q), SUM(r), COUNT(q)"):
        got = answer(query, records, cuts=(1, 4))
        want = execute(parse(query), records, now=NOW)
        assert got is not None and (got.columns, got.values) == (want.columns, want.values), query


def test_min_and_max_of_equal_numbers_are_the_first_seen():
    """3 and 3.0, 0.0 and -0.0 are equal to MIN/MAX: the one kept is the first, in the records' order."""
    for values in ([3, 3.0, "3"], [3.0, 3, 1.5], ["3.0", 3, 2], [-0.0, 0.0, 1], [0.0, -0.0, 1]):
        records = [{"@fields.x": v, "@fields.k": "a"} for v in values]
        query = "| STATS lo = MIN(x), hi = MAX(x) BY k"
        got, want = answer(query, records, cuts=(1,)), execute(parse(query), records, now=NOW)
        assert got is not None and got.values == want.values, values
        assert [type(v) for v in got.values[0]] == [type(v) for v in want.values[0]], values
        assert str(got.values) == str(want.values), values  # -0.0 is not 0.0 here


def test_string_conditions_are_null_for_what_is_no_string_or_no_address():
    records = [{"@fields.x": v} for v in ("10.1.2.3", "192.168.1.1", "a", "abc", "443", 443, 2.5, None)]
    for condition in ('NOT CIDR_MATCH(x, "10.0.0.0/8")', 'NOT x LIKE "a*"', 'NOT x RLIKE "[0-9]+" OR x == 443',
                      'NOT (CIDR_MATCH(x, "10.0.0.0/8") AND x LIKE "1*")'):
        query = f"| STATS n = COUNT(*) WHERE {condition}, m = COUNT(*)"
        got, want = answer(query, records, cuts=(3,)), execute(parse(query), records, now=NOW)
        assert got is not None and got.values == want.values, condition


def test_the_limits_are_the_row_evaluators():
    records = [{"@fields.k": i, "@fields.v": i} for i in range(50)]
    limits = AnalyticsLimits(max_groups=10, max_held_values=20)
    with pytest.raises(LimitExceeded, match="STATS groups"):
        answer("| STATS COUNT(*) BY k", records, limits=limits)
    with pytest.raises(LimitExceeded, match="hold"):
        answer("| STATS COUNT_DISTINCT(v)", records, limits=limits)
    with pytest.raises(LimitExceeded, match="hold"):
        answer("| STATS MEDIAN(v)", records, limits=limits)


# -- random records and queries ------------------------------------------------------------------

WORDS = ["a", "B", "b", "443", "0443", "1.5", "-2", "1e3", "web-1", "", " 7", "10.1.2.3", "2001:db8::1"]
scalars = st.one_of(
    st.integers(-5, 5), st.integers(-(2**63), 2**63 - 1), st.sampled_from([0.5, -0.0, 2.0, 1e300, 3.25, -7.5]),
    st.sampled_from(WORDS), st.none())
record = st.fixed_dictionaries({}, optional={
    "@fields.x": scalars, "@fields.y": scalars, "@fields.k": st.sampled_from(WORDS + [1, 2, 2.0, None]),
    "@timestamp": st.one_of(st.integers(0, 10**13), st.sampled_from(["2026-11-20T01:02:03Z", "1763600000000", "no"])),
})
leaf = st.sampled_from(["x", "y", "k", "1", "2.5", '"443"', '"b"', "null", "-3", "0", "0.0", "TO_LOWER(k)",
                        "TO_UPPER(x)", 'COALESCE(x, y, "b")', "COALESCE(y, 7)"])
arith = st.builds(lambda a, op, b: f"{a} {op} {b}", leaf, st.sampled_from(["+", "-", "*", "/", "%"]), leaf)
operand = st.one_of(leaf, arith)
comparison = st.builds(lambda a, op, b: f"{a} {op} {b}", operand, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), operand)
base = st.one_of(
    comparison,
    st.builds(lambda a, n: f"{a} IS {n}NULL", operand, st.sampled_from(["", "NOT "])),
    st.builds(lambda a, n: f'{a} {n}IN (1, "b", 2.0, null)', leaf, st.sampled_from(["", "NOT "])),
    st.builds(lambda a, n, p: f'{a} {n}{p}', st.sampled_from(["x", "k", "e"]), st.sampled_from(["", "NOT "]),
              st.sampled_from(['LIKE "*4*"', 'LIKE "?"', 'RLIKE "[a-c]"', 'RLIKE "[0-9.]+"'])),
    st.builds(lambda a: f'CIDR_MATCH({a}, "10.0.0.0/8", "2001:db8::/32")', st.sampled_from(["x", "k"])))
# Three-valued: NOT, AND and OR over each (null is not false under them).
condition = st.one_of(
    base, st.builds(lambda c: f"NOT ({c})", base),
    st.builds(lambda a, b: f"({a}) AND ({b})", base, base),
    st.builds(lambda a, b: f"({a}) OR ({b})", base, base))
aggregation = st.one_of(
    st.just("COUNT(*)"), st.builds(lambda f, a: f"{f}({a})", st.sampled_from(
        ["COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX", "MEDIAN"]), operand),
    st.builds(lambda a, p: f"PERCENTILE({a}, {p})", operand, st.sampled_from([0, 25, 90, 100])),
    st.builds(lambda c: f"COUNT(*) WHERE {c}", condition))
# BY, and a SORT over the STATS's columns then a LIMIT (the groups kept chosen column by column).
group = st.sampled_from([
    ("", ""), (" BY k", " | SORT a0 DESC | LIMIT 2"), (" BY k", " | SORT k DESC NULLS FIRST, a0 | LIMIT 3"),
    (" BY x, k", " | SORT a0 NULLS FIRST, k DESC | LIMIT 2"), (" BY x, k", " | SORT a0 DESC, x | LIMIT 1"),
    (" BY e", ""), (" BY e", " | SORT e NULLS FIRST | LIMIT 2"), (' BY u = TO_UPPER(COALESCE(k, "none"))', ""), (" BY BUCKET(@timestamp, 1 hour)", ""),
    (" BY h = DATE_TRUNC(1 week, @timestamp), k", " | SORT h DESC, a0 | LIMIT 2"), (" BY k", " | SORT a0 | LIMIT 50")])
query = st.builds(
    lambda where, ev, aggs, by: f"{where}| EVAL e = {ev} | STATS {', '.join(f'a{i} = {a}' for i, a in enumerate(aggs))}{by[0]}{by[1]}",
    st.one_of(st.just(""), st.builds(lambda c: f"| WHERE {c} ", condition)), operand,
    st.lists(aggregation, min_size=1, max_size=3), group)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record, max_size=25), query, st.lists(st.integers(0, 25), max_size=3))
def test_random_queries_over_random_records_answer_as_the_row_evaluator(records, text, cuts):
    want_error = got_error = None
    try:
        want = execute(parse(text), records, now=NOW)
    except LimitExceeded as e:
        want_error = str(e)
    try:
        got = answer(text, records, tuple(cuts))
    except LimitExceeded as e:
        got_error = str(e)
    assert (got_error is None) == (want_error is None), (text, want_error, got_error)
    if want_error is None and got is not None:
        assert (got.columns, got.values, got.warnings) == (want.columns, want.values, want.warnings), text


GROUP_KEYS = st.one_of(st.none(), st.tuples(st.just(1), st.integers(min_value=-(2**64), max_value=2**64)),
                       st.tuples(st.just(1), st.floats(allow_nan=False)), st.tuples(st.just(2), st.text(max_size=4)),
                       st.tuples(st.just(0), st.booleans()))


@given(st.lists(GROUP_KEYS, max_size=40, unique=True))
def test_a_by_s_keys_ranked_by_numpy_as_by_python_s_order(keys):
    # The SORT after a STATS ranks each BY's distinct keys (numbers, then words by code point).
    null, rank = columnar._key_ranks(keys)
    want_null, want_rank = columnar._ranks(keys, lambda k: k)
    assert null.tolist() == want_null.tolist()
    assert np.where(null, 0, rank).tolist() == np.where(want_null, 0, want_rank).tolist()


@given(st.lists(st.integers(0, 2**50 - 1), max_size=60), st.sampled_from([1, 2**17, 2**33, 2**48, 2**50]))
def test_group_numbers_are_np_unique_s_whatever_their_bound(values, bound):
    # A STATS numbers its groups by a table, a radix sort or np.unique, by how far the keys reach.
    values = np.array(values, dtype=np.int64) % bound
    uniques, inverse = columnar._dense(values, bound)
    want_uniques, want_inverse = np.unique(values, return_inverse=True)
    assert uniques.tolist() == want_uniques.tolist() and inverse.tolist() == want_inverse.reshape(-1).tolist()


def test_a_stats_of_bare_aggregations_is_answered_a_column_at_a_time_as_by_rows():
    """The answer made from the arrays (no dict per group) equals the row stages': the implicit
    LIMIT's cut and warning, columns of one name (the rightmost, a BY's over an aggregation's),
    no records, and a STATS whose outputs are expressions (the row stages answer it)."""
    many = [{"@fields.k": i % 1_200, "@fields.x": i} for i in range(2_400)]
    cases = [
        ("| STATS n = COUNT(*), s = SUM(x) BY k", many),  # 1,200 groups: cut at 1,000, warned
        ("| STATS n = COUNT(*), s = SUM(x) BY k | SORT s DESC | LIMIT 7", many),
        ("| STATS n = COUNT(*), n = MAX(x), k = MIN(x) BY k, k = x % 3", many),
        ("| STATS n = COUNT(*), s = SUM(x) BY k", []),
        ("| STATS n = COUNT(*), s = SUM(x)", []),
        # COUNT(*) alone BY words (counted per split's dictionary, no group id per record), nulls too.
        ("| STATS n = COUNT(*), m = COUNT(*) BY w | SORT n DESC, w | LIMIT 3",
         [{"@fields.w": ["web-1", "db-1", None, "web-1", "Web-1"][i % 5]} | ({} if i % 7 else {"@fields.k": 1})
          for i in range(100)]),
        # 2.88 million (k, x) pairs: the groups numbered by a radix sort, not a table.
        ("| STATS n = COUNT(*), s = SUM(x) BY k, x | SORT s DESC, k | LIMIT 5", many),
        ("| STATS m = MEDIAN(x), p = PERCENTILE(x, 90), n = COUNT(*) BY k | SORT k DESC | LIMIT 4", many),
        ("| STATS n = COUNT(*) + 1 BY k | SORT n | LIMIT 3", many),
    ]
    for text, records in cases:
        got = answer(text, records, cuts=(len(records) // 3,))
        want = execute(parse(text), records, now=NOW)
        assert got is not None, text
        assert (got.columns, got.values, got.warnings) == (want.columns, want.values, want.warnings), text
    assert answer(cases[0][0], many).warnings and len(answer(cases[0][0], many).values) == 1_000
    folding = columnar.prepare(parse(cases[0][0]).commands, None, NOW, AnalyticsLimits()).folding
    assert folding.direct == {"n": 0, "s": 1}
    assert columnar.prepare(parse(cases[-1][0]).commands, None, NOW, AnalyticsLimits()).folding.direct is None
