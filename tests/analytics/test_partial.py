"""Partial aggregates merged equal one pass: for every aggregation, over random records cut at
random places (hypothesis), over the golden set, and the limits hold on the parts and on the merge."""

from __future__ import annotations

import math
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seclake.analytics import AnalyticsLimits, execute, parse
from seclake.analytics.partial import Aggregation, divisible
from seclake.errors import LimitExceeded
from tests.analytics.golden import NOW, QUERIES, RECORDS
from tests.analytics.test_golden import _selected

AGGREGATIONS = [
    "COUNT(*)", "COUNT(v)", "COUNT_DISTINCT(v)", "SUM(v)", "AVG(v)", "MIN(v)", "MAX(v)", "MEDIAN(v)",
    "PERCENTILE(v, 90)", "PERCENTILE(v, 0)", "VALUES(v)", 'TOP(v, 3, "desc")', 'TOP(v, 2, "asc")',
    "COUNT(*) WHERE w > 0", "SUM(v) WHERE g == \"a\"",
]

scalar = st.one_of(
    st.none(),
    st.integers(-10**6, 10**6),
    st.integers(-2**63, 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from([0.1, 0.2, 0.3, 1e16, -1e16, 2.5, "7", "0.5", "443", "x", "y", True, False]),
)
record = st.fixed_dictionaries(
    {},
    optional={  # the stored paths of the fields v, w and g of an event
        "@fields.v": st.one_of(scalar, st.lists(scalar, max_size=3)),
        "@fields.w": st.integers(-2, 2),
        "@fields.g": st.sampled_from(["a", "b", "c", None, 1, "1"]),
    },
)


def merged(query: str, records: list[dict], cuts: list[int], limits: AnalyticsLimits | None = None):
    """The query answered by parts: ``records`` cut at ``cuts``, each part folded (as a searcher does
    for its split: sent as a pickle), merged in order."""
    pipeline = parse(query)
    assert divisible(pipeline.commands)
    root = Aggregation(pipeline.commands, pipeline.dataset, NOW, limits)
    bounds = [0, *sorted(cuts), len(records)]
    for lo, hi in zip(bounds, bounds[1:]):
        searcher = Aggregation(pipeline.commands, pipeline.dataset, NOW, limits)
        root.merge(pickle.loads(pickle.dumps(searcher.part(records[lo:hi]))))
    return root.result()


def single(query: str, records: list[dict], limits: AnalyticsLimits | None = None):
    return execute(parse(query), records, now=NOW, limits=limits)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(record, max_size=40), data=st.data())
def test_parts_merged_equal_one_pass_for_every_aggregation(records, data):
    aggregations = data.draw(st.lists(st.sampled_from(AGGREGATIONS), min_size=1, max_size=4, unique=True))
    by = data.draw(st.sampled_from(["", " BY g", " BY g, w", " BY v"]))
    prefix = data.draw(st.sampled_from(["", "| WHERE w != 0 ", "| EVAL v = v ", "| RENAME g AS h | RENAME h AS g "]))
    query = f"{prefix}| STATS {', '.join(aggregations)}{by}"
    cuts = data.draw(st.lists(st.integers(0, len(records)), max_size=4))
    want = single(query, records)
    got = merged(query, records, cuts)
    # Exactly: the same columns, values (a sum of decimals too, bit for bit) and warnings.
    assert (got.columns, got.values, got.warnings) == (want.columns, want.values, want.warnings), query


def test_sums_of_decimals_do_not_depend_on_where_the_rows_are_cut():
    """0.1 + 0.2 + 0.3 rounded at each step depends on the order of the additions; the exact sum does not."""
    values = (0.1, 0.2, 0.3, 1e16, 1.0, -1e16)
    records = [{"@fields.v": x} for x in values]
    want = single("| STATS s = SUM(v), a = AVG(v)", records).values
    assert want == [[math.fsum(values), math.fsum(values) / 6]]  # rounded once: 1.6, not 0.0 or 2.0
    for cut in range(len(records) + 1):
        assert merged("| STATS s = SUM(v), a = AVG(v)", records, [cut]).values == want


@pytest.mark.parametrize("golden", [g for g in QUERIES if divisible(parse(g.query).commands)],
                         ids=lambda g: g.query[:70])
def test_every_divisible_golden_query_merged_equals_one_pass(golden):
    pipeline = parse(golden.query)
    records = _selected(pipeline.head, RECORDS)
    want = single(golden.query, records)
    got = merged(golden.query, records, [len(records) // 3, len(records) // 2])
    assert (got.columns, got.values, got.warnings) == (want.columns, want.values, want.warnings)


def test_pipelines_that_cannot_be_cut():
    for query in ("| SORT v | LIMIT 3 | STATS COUNT(*)", "| LIMIT 3 | STATS COUNT(*)", "| KEEP v", "x:1"):
        assert not divisible(parse(query).commands), query
    assert divisible(parse("| WHERE v > 1 | EVAL x = v | DROP v | KEEP x | STATS COUNT(*) BY x | SORT x").commands)


def test_the_group_limit_holds_on_each_part_and_on_the_merge():
    limits = AnalyticsLimits(max_groups=5)
    records = [{"@fields.g": i} for i in range(8)]
    with pytest.raises(LimitExceeded, match="number of STATS groups is 6, above the limit of 5"):
        single("| STATS COUNT(*) BY g", records, limits)
    # Each part alone holds 4 groups; merged they are 8.
    with pytest.raises(LimitExceeded, match="number of STATS groups is 6, above the limit of 5"):
        merged("| STATS COUNT(*) BY g", records, [4], limits)
    # A part past the limit is refused where it is folded (a searcher), before it is sent.
    searcher = Aggregation(parse("| STATS COUNT(*) BY g").commands, parse("").dataset, NOW, limits)
    with pytest.raises(LimitExceeded, match="number of STATS groups"):
        searcher.part(records)


def test_the_held_values_limit_holds_on_the_merge():
    limits = AnalyticsLimits(max_held_values=10)
    records = [{"@fields.v": i} for i in range(16)]
    with pytest.raises(LimitExceeded, match="values the query's aggregations hold"):
        merged("| STATS COUNT_DISTINCT(v)", records, [8], limits)  # 8 each: under the limit alone
    with pytest.raises(LimitExceeded, match="values the query's aggregations hold"):
        merged("| STATS MEDIAN(v)", records, [8], limits)


def test_values_capped_warn_once_per_group_as_one_pass():
    limits = AnalyticsLimits(max_values_per_group=3)
    records = [{"@fields.v": i % 5, "@fields.g": i % 2} for i in range(20)]
    want = single("| STATS VALUES(v) BY g", records, limits)
    got = merged("| STATS VALUES(v) BY g", records, [2, 7], limits)
    assert (got.values, got.warnings) == (want.values, want.warnings) and len(want.warnings) == 2


def test_the_aggregations_that_hold_values_are_known():
    def holding(query: str) -> int:
        pipeline = parse(query)
        return Aggregation(pipeline.commands, pipeline.dataset, NOW).holding

    assert holding("| STATS COUNT(*), SUM(v), AVG(v), MIN(v), MAX(v), COUNT(v) BY g") == 0
    assert holding('| STATS COUNT_DISTINCT(v), MEDIAN(v), VALUES(v), TOP(v, 2, "asc"), COUNT_DISTINCT(v) WHERE w > 1') == 5
