"""The root merges leaves into the answer one big index would give."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.query import ast
from seclake.search.plan import FacetSpec, HistogramSpec, SearchPlan
from seclake.search.root import Root
from seclake.storage.merge import DAY_MS

DAY0 = 1_763_683_200_000


@pytest.fixture
def lake(lake_factory):
    lake = lake_factory()
    # Three splits (three flushes), timestamps colliding on purpose.
    for batch in range(3):
        items = []
        for i in range(40):
            n = batch * 40 + i
            items.append(("event", {
                "@timestamp": DAY0 + (n % 7) * 1000,
                "@message": f"msg {n}",
                "@sender": ["fw1", "FW1", "dns", "proxy"][n % 4],
                "@fields": {"action": ["Deny", "deny", "accept"][n % 3], "dport": [443, "443", 22][n % 3]},
            }))
        lake.append(items)
        lake.flush()
    return lake


@pytest.fixture
def root(lake):
    with ThreadPoolExecutor(2) as pool:
        yield Root(lake.splits, pool)


def _all(root, **kw):
    return root.search(SearchPlan(dataset="event", query=ast.MatchAll(), **kw))


def test_pages_never_repeat_or_skip_records_when_timestamps_tie(root):
    seen = []
    for offset in range(0, 120, 7):
        res = _all(root, offset=offset, limit=7)
        assert res.total == 120
        seen.extend(h.docid for h in res.hits)
    assert len(seen) == 120 and len(set(seen)) == 120
    # Whole order: timestamp descending, then docId descending.
    full = _all(root, offset=0, limit=120).hits
    keys = [(h.sort_value, h.docid) for h in full]
    assert keys == sorted(keys, reverse=True)
    assert [h.docid for h in full] == seen


def test_ascending_order_and_range(root):
    res = _all(root, descending=False, limit=5, range_from=DAY0 + 2000, range_to=DAY0 + 3000)
    # n % 7 in {2, 3}: 120 / 7 -> 17 + 17 records
    assert res.total == 34
    assert [h.sort_value for h in res.hits] == [DAY0 + 2000] * 5
    assert [h.docid for h in res.hits] == sorted(h.docid for h in res.hits)


def test_facets_are_exact_and_group_spellings(root):
    res = _all(root, limit=0, facets=(FacetSpec("@fields.action", 1), FacetSpec("@fields.dport", 5), FacetSpec("@sender", 10)))
    action = res.facets["@fields.action"]
    # Deny and deny are one bucket of 80; the rest (accept, 40) is counted aside.
    assert [(b.key, b.doc_count) for b in action.buckets] == [("Deny", 80)]
    assert action.sum_other_doc_count == 40
    dport = res.facets["@fields.dport"]
    assert sorted((b.key, b.doc_count) for b in dport.buckets) == [("22", 40), ("443", 80)]
    sender = res.facets["@sender"]
    assert [(b.key, b.doc_count) for b in sender.buckets] == [("FW1", 60), ("dns", 30), ("proxy", 30)] or \
        [(b.key, b.doc_count) for b in sender.buckets] == [("fw1", 60), ("dns", 30), ("proxy", 30)]
    assert sender.sum_other_doc_count == 0


def test_facet_counts_follow_the_query(root):
    q = ast.Term("@fields.action", "DENY")
    res = root.search(SearchPlan(dataset="event", query=q, limit=3, facets=(FacetSpec("@sender", 10),)))
    assert res.total == 80
    assert sum(b.doc_count for b in res.facets["@sender"].buckets) == 80


def test_histogram_buckets_cover_the_range_and_add_up(root):
    starts = tuple(DAY0 + i * 2000 for i in range(4))
    res = _all(root, limit=0, range_from=DAY0, range_to=DAY0 + 7999,
               histograms=(HistogramSpec("dateHistogram", starts, DAY0 + 8000),))
    counts = [c for _, c in res.histograms["dateHistogram"]]
    assert sum(counts) == res.total == 120
    # n % 7 == 0 holds 18 of the 120 records, every other residue 17.
    assert counts == [35, 34, 34, 17]


@pytest.mark.parametrize("include_lo, include_hi, total", [
    (True, True, 120), (False, True, 102), (True, False, 103), (False, False, 85),
])
def test_time_bounds_on_a_split_edge_keep_their_inclusiveness(root, include_lo, include_hi, total):
    # Every split spans exactly DAY0 .. DAY0 + 6000: the bounds sit on its edges.
    bound = ast.Range(path="@timestamp", lo=DAY0, hi=DAY0 + 6000, include_lo=include_lo,
                      include_hi=include_hi, kind="number")
    assert root.search(SearchPlan(dataset="event", query=bound, limit=0)).total == total


@pytest.mark.parametrize("starts, end", [
    ((500, 2000, 3500), 5000),  # equal widths, not aligned to them
    ((500, 2000, 3000), 5000),  # unequal widths
])
def test_histogram_counts_only_records_inside_its_buckets(root, starts, end):
    # No time range: records at 0, 5000 and 6000 ms lie outside every bucket.
    res = _all(root, limit=0, histograms=(HistogramSpec("h", tuple(DAY0 + s for s in starts), DAY0 + end),))
    per_second = {k: 18 if k == 0 else 17 for k in range(7)}  # records at DAY0 + k*1000
    expected = [sum(n for k, n in per_second.items() if a <= k * 1000 < b)
                for a, b in zip(starts, (*starts[1:], end))]
    assert [c for _, c in res.histograms["h"]] == expected
    assert res.total == 120


def test_sort_on_a_field_some_records_lack_puts_them_last(lake_factory):
    lake = lake_factory()
    lake.append([("behavior", {"timestamp": DAY0 + i, "riskScore": (i * 37) % 11 if i % 4 else None}) for i in range(20)])
    lake.flush()
    with ThreadPoolExecutor(2) as pool:
        res = Root(lake.splits, pool).search(
            SearchPlan(dataset="behavior", query=ast.MatchAll(), sort_path="riskScore", descending=True, limit=20)
        )
    values = [h.sort_value for h in res.hits]
    present = [v for v in values if v is not None]
    assert present == sorted(present, reverse=True)
    assert values[len(present):] == [None] * 5


def test_a_search_answers_while_the_leaf_pool_is_busy_with_others(lake):
    """The calling thread searches the splits itself: a search does not queue behind other
    searches' leaves on a busy pool (nor wait for its own helpers that never started)."""
    import threading

    with ThreadPoolExecutor(1) as pool:
        release = threading.Event()
        pool.submit(release.wait)  # the pool's one thread, taken by another search
        try:
            res = Root(lake.splits, pool).search(SearchPlan(dataset="event", query=ast.MatchAll(), limit=3))
            assert res.total == 120 and len(res.hits) == 3
        finally:
            release.set()


def test_a_leaf_that_fails_fails_the_search_after_the_others_finished(lake, monkeypatch):
    import seclake.search.root as root_module

    real = root_module.run_leaf
    calls = []

    def flaky(split, task):
        calls.append(split)
        if len(calls) == 2:
            raise OSError("split unreadable")
        return real(split, task)

    monkeypatch.setattr(root_module, "run_leaf", flaky)
    with ThreadPoolExecutor(2) as pool, pytest.raises(OSError, match="split unreadable"):
        Root(lake.splits, pool).search(SearchPlan(dataset="event", query=ast.MatchAll(), limit=3))
    assert len(calls) == 3
