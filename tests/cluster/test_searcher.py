"""Cluster mode's leaf path without Ray: Searcher objects behind the fan-out.

The same ``RayLeaves`` executor as in cluster mode, with its one Ray call
replaced by a thread pool, and every task, result and record sent through
pickle as Ray would: the conformance cases give the embedded answers, so
plain-data leaf results, fetch by docId and the fan-out merge exactly.
The same checks on a real Ray cluster are in test_ray_cluster.py.
"""

from __future__ import annotations

import pickle
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from seclake.cluster.leaves import RayLeaves, unwrapped
from seclake.cluster.searcher import Searcher
from seclake.errors import QueryError
from seclake.query import ast
from seclake.search.plan import SearchPlan
from seclake.search.root import Root
from tests.cluster.lakedata import CASES, answer, build_lake, plans


class Directory:
    def __init__(self, searchers: dict):
        self.searchers = searchers

    def live(self) -> dict:
        return dict(self.searchers)

    def forget(self) -> None:
        pass


class ThreadLeaves(RayLeaves):
    def __init__(self, searchers: dict, pool: ThreadPoolExecutor, timeout: float = 10):
        super().__init__(Directory(searchers), timeout=timeout)
        self.pool = pool
        self.calls: list[tuple[str, int]] = []  # (method, splits carried)

    def _submit(self, handle, method, *args) -> Future:
        self.calls.append((method, len(args[0])))
        args = pickle.loads(pickle.dumps(args))

        def run():
            return pickle.loads(pickle.dumps(getattr(handle, method)(*args)))

        return unwrapped(self.pool.submit(run))


@pytest.fixture(scope="module")
def modes(tmp_path_factory):
    base = tmp_path_factory.mktemp("searchers")
    lake, db, ids = build_lake(base)
    pool = ThreadPoolExecutor(4)
    splits_dir = lake.layout.splits
    searchers = {f"searcher-{n}": Searcher(str(splits_dir)) for n in ("a", "b", "c")}
    embedded = Root(lake.splits, pool)
    cluster = Root(lake.splits, ThreadLeaves(searchers, pool))
    yield embedded, cluster, ids, searchers, pool, lake
    pool.shutdown()
    lake.stop()
    db.dispose()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_searchers_answer_as_embedded_mode(modes, case):
    embedded, cluster, ids, *_ = modes
    for plan in plans(case):
        want = answer(embedded.search(plan))
        got = answer(cluster.search(plan))
        assert got == want, case.name
    full = cluster.search(plans(case)[0])
    assert sorted(ids[case.dataset][h.docid] for h in full.hits) == sorted(case.ids)


def test_splits_are_spread_over_searchers_and_kept_open(modes):
    *_, searchers, _pool, _lake = modes
    opened = {name: s.cache.opened for name, s in searchers.items()}
    assert sum(1 for n in opened.values() if n) >= 2, opened
    # Each split is opened once, by the searcher that owns it, whatever the number of searches.
    total_open = sum(len(s.cache) for s in searchers.values())
    assert sum(opened.values()) == total_open


def test_each_searcher_gets_one_call_per_phase_carrying_its_splits(modes):
    embedded, cluster, *_ = modes
    plan = plans(CASES[0])[0]
    splits = embedded.splits_for(plan.dataset, None, None)
    assert len(splits) > 3  # more splits than searchers, or the check says nothing
    cluster.leaves.calls.clear()
    result = cluster.search(plan)
    searches = [n for method, n in cluster.leaves.calls if method == "search"]
    fetches = [n for method, n in cluster.leaves.calls if method == "fetch"]
    assert len(searches) <= 3 and sum(searches) == len(splits) == result.splits
    assert len(fetches) <= 3 and sum(fetches) == len({h.split_id for h in result.hits})


def test_a_searcher_that_cannot_read_storage_is_retried_elsewhere(modes, tmp_path):
    embedded, _cluster, _ids, searchers, pool, _lake = modes
    broken = dict(searchers, **{"searcher-z": Searcher(str(tmp_path / "nowhere"))})
    root = Root(embedded.splits_for, ThreadLeaves(broken, pool))
    plan = plans(CASES[0])[0]
    assert answer(root.search(plan)) == answer(embedded.search(plan))


def test_no_searcher_able_to_read_gives_a_partial_result_naming_every_split(modes, tmp_path):
    embedded, *_rest, pool, _lake = modes
    nowhere = {f"searcher-{i}": Searcher(str(tmp_path / "nowhere")) for i in range(2)}
    root = Root(embedded.splits_for, ThreadLeaves(nowhere, pool))
    plan = plans(CASES[0])[0]
    result = root.search(plan)
    want = embedded.search(plan)
    assert result.total == 0 and result.hits == []
    assert result.failed == sorted(h for h in {s.meta.split_id for s in embedded.splits_for(plan.dataset, None, None)})
    assert result.splits == want.splits and result.successful == 0


def test_query_errors_cross_as_themselves(modes):
    embedded, cluster, *_ = modes
    # A regex whose automaton the engine refuses on each split (past its state limit).
    plan = SearchPlan(dataset="event", query=ast.Regex(path="id", pattern="[a-z]{1000}"), limit=5)
    with pytest.raises(QueryError) as want:
        Root(embedded.splits_for, embedded.leaves).search(plan)
    with pytest.raises(QueryError) as got:
        Root(embedded.splits_for, cluster.leaves).search(plan)
    assert str(got.value) == str(want.value) and "too complex" in str(got.value)


# -- piped queries: STATS folded on the searchers ------------------------------------------


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """The analytics golden set's records as a lake of 6 splits (3 imports over 2 days), two searchers."""
    from tests.cluster.lakedata import build_golden_lake

    lake, db = build_golden_lake(tmp_path_factory.mktemp("golden"))
    pool = ThreadPoolExecutor(4)
    searchers = {f"searcher-{n}": Searcher(str(lake.layout.splits)) for n in ("a", "b")}
    yield Root(lake.splits, pool), Root(lake.splits, ThreadLeaves(searchers, pool)), searchers
    pool.shutdown()
    lake.stop()
    db.dispose()


def _selection(query: str):
    from types import SimpleNamespace

    from seclake.analytics import parse
    from seclake.api.options import build_plan
    from seclake.record.dataset import EVENTS
    from seclake.service.analytics import Selection
    from seclake.settings import Settings
    from tests.analytics.golden import NOW

    pipeline = parse(query)
    plan, _ = build_plan({"searchStr": pipeline.head, "fetchLimit": 0}, EVENTS, Settings(), now_ms=NOW)
    return pipeline, Selection(EVENTS, plan), SimpleNamespace


def test_stats_folded_on_the_searchers_equal_one_pass_here_for_every_golden_query(golden):
    """Every golden query with a STATS after row-wise commands: the searchers' groups (pickled
    as Ray sends them), merged, answer exactly what reading the records here answers."""
    from types import SimpleNamespace

    from seclake.analytics import execute
    from seclake.analytics.partial import divisible
    from seclake.service.analytics import Progress, _aggregated, _folds_on_searchers, records
    from tests.analytics.golden import NOW, QUERIES

    embedded, cluster, searchers = golden
    checked = 0
    for g in QUERIES:
        pipeline, selection, _ = _selection(g.query)
        if not divisible(pipeline.commands):
            continue
        assert _folds_on_searchers(SimpleNamespace(search=cluster), pipeline, selection)
        assert not _folds_on_searchers(SimpleNamespace(search=embedded), pipeline, selection)
        rows = records(SimpleNamespace(search=embedded), selection, pipeline.fields, Progress(), max_records=10**6)
        want = execute(pipeline, rows, now=NOW)
        cluster.leaves.calls.clear()
        progress = Progress()
        got = _aggregated(SimpleNamespace(search=cluster), pipeline, _selection(g.query)[1], progress, NOW, 10**6)
        assert (got.columns, got.values, got.warnings) == (want.columns, want.values, want.warnings), g.query
        assert progress.read == progress.total and [m for m, _ in cluster.leaves.calls if m == "fetch"] == []
        checked += 1
    assert checked >= 40
    assert all(s.aggregated > 0 for s in searchers.values())  # both searchers folded splits


def test_stats_over_splits_no_searcher_can_read_fail_the_query_clearly(golden, tmp_path):
    from types import SimpleNamespace

    from seclake.errors import Unavailable
    from seclake.service.analytics import Progress, _aggregated
    from tests.analytics.golden import NOW

    embedded, _cluster, searchers = golden
    pool = ThreadPoolExecutor(2)
    # One searcher can read the splits, the other not: each split is retried on the first.
    half = Root(embedded.splits_for, ThreadLeaves({"searcher-a": searchers["searcher-a"],
                                                   "searcher-z": Searcher(str(tmp_path / "nowhere"))}, pool))
    pipeline, selection, _ = _selection("| STATS n = COUNT(*)")
    assert _aggregated(SimpleNamespace(search=half), pipeline, selection, Progress(), NOW, 10**6).values == [[80]]
    nowhere = Root(embedded.splits_for, ThreadLeaves({f"searcher-{i}": Searcher(str(tmp_path / "nowhere")) for i in range(2)}, pool))
    pipeline, selection, _ = _selection("| STATS n = COUNT(*)")
    # The count phase reads no split: the query fails naming them, never a partial count.
    with pytest.raises(Unavailable, match=r"split\(s\) could not be counted by any searcher .*leave their records out"):
        _aggregated(SimpleNamespace(search=nowhere), pipeline, selection, Progress(), NOW, 10**6)
    pool.shutdown()


def test_a_limit_passed_on_a_searcher_reaches_the_caller_as_itself(golden, monkeypatch):
    """A searcher past a query limit while folding answers the same LimitExceeded (pickled back),
    not a failed split: the query is refused saying which limit, as in embedded mode."""
    from functools import partial
    from types import SimpleNamespace

    from seclake.analytics.execution import AnalyticsLimits
    from seclake.errors import LimitExceeded
    from seclake.service import analytics
    from seclake.service.analytics import Progress, _aggregated
    from tests.analytics.golden import NOW

    _embedded, cluster, _searchers = golden
    # The query's limits travel with it: the searchers fold under the same ones.
    monkeypatch.setattr(analytics, "AnalyticsLimits", partial(AnalyticsLimits, max_groups=3))
    pipeline, selection, _ = _selection("| STATS n = COUNT(*) BY user.name")
    with pytest.raises(LimitExceeded, match="number of STATS groups is 4, above the limit of 3"):
        _aggregated(SimpleNamespace(search=cluster), pipeline, selection, Progress(), NOW, 10**6)


def test_splits_are_asked_for_in_batches_bounded_by_their_records():
    from seclake.service.analytics import AGGREGATE_BATCH, _batches

    totals = [(f"s{i}", n) for i, n in enumerate([5, 5, 20, 1, 1, 1])]
    assert list(_batches(totals, 10)) == [["s0", "s1"], ["s2"], ["s3", "s4", "s5"]]  # one split past the bound goes alone
    many = [(f"s{i}", 1) for i in range(AGGREGATE_BATCH + 1)]
    assert [len(b) for b in _batches(many, 10**9)] == [AGGREGATE_BATCH, 1]
