"""Reading every record a query's head selects (service/analytics.py): exact, in range,
within the data policy, only the fields named, bounded, stoppable; on the open-split path
and through the leaf executor's protocol (cluster mode's and an API node's path)."""

from __future__ import annotations

import threading
from dataclasses import replace
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.api.options import build_plan
from seclake.errors import LimitExceeded, SearchTimeout
from seclake.query.matcher import compile_matcher
from seclake.query.parser import parse
from seclake.record.dataset import EVENTS, SUMMARIES
from seclake.search.root import InProcessLeaves
from seclake.service import analytics
from seclake.service.analytics import Cancelled, Progress, Selection, records

T0 = 1_700_000_000_000
DAY = 86_400_000


def record(i: int) -> dict:
    fields = {"user": {"name": f"u{i % 7}"}, "bytes": str(i * 10) if i % 2 else i * 10, "seq": i}
    if i % 5 == 0:
        fields["tags"] = ["a", "b"]
    # Two days: at least two splits.
    return {"@timestamp": T0 + (i % 2) * DAY + i, "@customer": "acme" if i % 3 else "globex",
            "@message": f"line {i}", "@fields": fields}


RECORDS = [record(i) for i in range(60)]


@pytest.fixture
def lake_services(services):
    services.start()
    services.lake.append([("event", r) for r in RECORDS])
    services.lake.flush()
    return services


class Elsewhere:
    """The leaf executor's protocol without being the in-process one: the path
    cluster mode's searchers (and an API node's catalog entries) take."""

    def __init__(self, inner: InProcessLeaves):
        self.inner = inner
        self.fetches = 0
        self.most = 0  # the most docIds one search answered

    def search(self, splits, task):
        answered, failed = self.inner.search(splits, task)
        self.most = max([self.most, *(len(r.hits) for r in answered.values())])
        return answered, failed

    def fetch(self, splits, hits):
        self.fetches += 1
        return self.inner.fetch(splits, hits)


def selection(services, search_str="", restriction=None, range_from=T0, range_to=T0 + 2 * DAY):
    options = {"searchStr": search_str, "range_from": range_from, "range_to": range_to, "fetchLimit": 0}
    plan, _ = build_plan(options, EVENTS, services.settings, restriction=restriction, now_ms=T0)
    return Selection(EVENTS, plan)


def seqs(rows) -> list[int]:
    return sorted(r["@fields.seq"] for r in rows)


@pytest.fixture(params=["open splits", "leaf protocol", "cluster searchers"])
def path(request, lake_services, monkeypatch):
    monkeypatch.setattr(analytics, "PAGE", 7)  # many pages per split
    if request.param == "leaf protocol":
        monkeypatch.setattr(lake_services.search, "leaves", Elsewhere(lake_services.search.leaves))
    elif request.param == "cluster searchers":
        # Cluster mode's executor (RayLeaves: tasks, results and records through pickle)
        # over searcher objects, Ray's one call replaced by a thread pool (tests/cluster/test_searcher.py).
        from seclake.cluster.searcher import Searcher
        from tests.cluster.test_searcher import ThreadLeaves

        splits = str(lake_services.lake.layout.splits)
        searchers = {f"searcher-{n}": Searcher(splits) for n in "ab"}
        pool = ThreadPoolExecutor(2)
        request.addfinalizer(pool.shutdown)
        monkeypatch.setattr(lake_services.search, "leaves", ThreadLeaves(searchers, pool))
    return lake_services


def test_every_matching_record_is_read_exactly_once_across_pages_and_splits(path):
    assert len(path.lake.splits("event")) >= 2
    progress = Progress()
    got = list(records(path, selection(path, "user.name:(u1 OR u2 OR u3)"), ["@fields.seq"], progress, max_records=100))
    want = [i for i in range(60) if i % 7 in (1, 2, 3)]
    assert seqs(got) == want
    assert progress.total == progress.read == len(want)
    if isinstance(path.search.leaves, Elsewhere):
        assert path.search.leaves.fetches >= len(want) // 7
    if hasattr(path.search.leaves, "calls"):  # cluster searchers: records fetched a page at a time
        assert sum(1 for method, _ in path.search.leaves.calls if method == "fetch") >= len(want) // 7


def test_the_range_bounds_what_is_read(path):
    got = list(records(path, selection(path, range_from=T0 + DAY), ["@fields.seq"], Progress(), max_records=100))
    assert seqs(got) == [i for i in range(60) if i % 2]


def test_a_split_the_range_holds_whole_is_counted_without_a_search(path, monkeypatch):
    # Where this process reads the splits; a searcher counts its own (and so finds them readable).
    here = isinstance(path.search.leaves, InProcessLeaves)
    searched = []
    leaves = path.search.leaves
    real = leaves.search
    # The counting searches (k=0), not those that page the records of cluster mode's searchers.
    monkeypatch.setattr(leaves, "search", lambda splits, task: searched.extend(splits if not task.k else ())
                        or real(splits, task))
    progress = Progress()
    # Both days whole (the range reaches past their records): nothing searched, every record read.
    got = list(records(path, selection(path, range_from=T0 - DAY), ["@fields.seq"], progress, max_records=100))
    assert seqs(got) == list(range(60)) and progress.total == 60
    assert not [s for s in searched if hasattr(s, "meta")] if here else len(searched) == 2
    searched.clear()
    # The second day cut in two: only its split is searched, and counts what the range holds.
    got = list(records(path, selection(path, range_to=T0 + DAY + 30), ["@fields.seq"], Progress(), max_records=100))
    assert seqs(got) == [i for i in range(60) if i % 2 == 0 or i <= 30]
    if here:
        assert {s.meta.time_min for s in searched if hasattr(s, "meta")} == {T0 + DAY + 1}


def test_a_data_policy_limits_what_is_read_to_what_the_caller_sees(path):
    restriction = parse("@customer:globex", EVENTS)
    visible = compile_matcher(restriction, EVENTS)
    got = list(records(path, selection(path, "*", restriction), None, Progress(), max_records=100))
    assert seqs(got) == sorted(r["@fields"]["seq"] for r in RECORDS if visible(r))
    assert {r["@customer"] for r in got} == {"globex"}


def test_whole_records_are_flat_by_record_path_arrays_as_lists(path):
    rows = list(records(path, selection(path, "seq:5"), None, Progress(), max_records=100))
    assert rows == [{"@timestamp": T0 + DAY + 5, "@customer": "acme", "@message": "line 5", "@fields.user.name": "u5",
                     "@fields.bytes": "50", "@fields.seq": 5, "@fields.tags": ["a", "b"]}]


def test_only_the_paths_named_are_kept(path):
    paths = ["@fields.user.name", "@fields.seq", "@fields.missing"]
    rows = list(records(path, selection(path, "seq:10"), paths, Progress(), max_records=100))
    assert rows == [{"@fields.user.name": "u3", "@fields.seq": 10}]


def test_more_matching_records_than_the_bound_are_refused_before_any_is_read(path):
    progress = Progress()
    with pytest.raises(LimitExceeded) as e:
        list(records(path, selection(path), None, progress, max_records=59))
    assert "60, above the limit of 59" in str(e.value) and "analytics_max_records" in str(e.value)
    assert progress.read == 0 and progress.total == 60


def test_a_cancelled_read_stops_within_a_page(path):
    progress = Progress()
    reader = records(path, selection(path), None, progress, max_records=100)
    first = [next(reader) for _ in range(3)]
    progress.stop.set()
    with pytest.raises(Cancelled):
        list(reader)
    assert len(first) == 3 and progress.read <= 7 + 7  # the page under way, at most one more


def test_a_read_past_its_deadline_stops_saying_how_far_it_got(path):
    progress = Progress(deadline=time.monotonic() - 1, timeout=0.5)
    with pytest.raises(SearchTimeout) as e:
        list(records(path, selection(path), None, progress, max_records=100))
    assert "after 0.5 s" in str(e.value) and "ds/query_async" in str(e.value)


def test_summaries_are_read_from_the_database_exactly_and_bounded(lake_services):
    from tests.detect.test_summaries import apply, behavior

    store = lake_services.summaries
    apply(store, [behavior(f"rule-{i % 3}", 100 * (i + 1), ts=T0 + i * 1000, key=f"host-{i}") for i in range(12)])
    options = {"searchStr": "", "range_from": T0 - DAY, "range_to": T0 + DAY, "fetchLimit": 0}
    plan, _ = build_plan(options, SUMMARIES, lake_services.settings, default_range_field="from", now_ms=T0)
    rows = list(records(lake_services, Selection(SUMMARIES, plan), ["key"], Progress(), max_records=100))
    assert sorted(r["key"] for r in rows) == sorted(f"host-{i}" for i in range(12))
    with pytest.raises(LimitExceeded):
        list(records(lake_services, Selection(SUMMARIES, plan), ["key"], Progress(), max_records=11))


def test_reading_runs_beside_other_reads(path):
    """Two readers at once (the task pool and an HTTP call) each get every record."""
    out: list[list[int]] = [[], []]

    def read(i: int) -> None:
        out[i] = seqs(records(path, selection(path), ["@fields.seq"], Progress(), max_records=100))

    threads = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out[0] == out[1] == list(range(60))


@pytest.mark.parametrize("held", [5, 1])
def test_a_split_read_through_the_executor_holds_a_time_window_of_docids_at_a_time(lake_services, monkeypatch, held):
    monkeypatch.setattr(analytics, "HELD", held)
    leaves = Elsewhere(lake_services.search.leaves)
    monkeypatch.setattr(lake_services.search, "leaves", leaves)
    got = list(records(lake_services, selection(lake_services, "user.name:(u1 OR u2 OR u3)"), ["@fields.seq"],
                       Progress(), max_records=100))
    assert seqs(got) == [i for i in range(60) if i % 7 in (1, 2, 3)]
    assert 0 < leaves.most <= held


def test_records_a_time_window_does_not_see_are_still_read(services, monkeypatch):
    """A record without a time: the windows' counts fall short, so the split is read whole."""
    services.start()
    services.lake.append([("event", {"@fields": {"seq": 1000}}), *(("event", record(i)) for i in range(4))])
    services.lake.flush()
    monkeypatch.setattr(analytics, "HELD", 1)
    monkeypatch.setattr(services.search, "leaves", Elsewhere(services.search.leaves))
    plan, _ = build_plan({"searchStr": "", "fetchLimit": 0}, EVENTS, services.settings, now_ms=T0)
    with_time = [r["@fields"]["seq"] for r in RECORDS[:4]]
    got = seqs(records(services, Selection(EVENTS, plan), ["@fields.seq"], Progress(), max_records=100))
    assert got == sorted([1000, *with_time]) or got == sorted(with_time)  # as a search without a range finds
    search = services.search.search(replace(plan, limit=10))
    assert len(got) == search.total


def test_a_split_matched_whole_is_read_from_its_store_without_paging(lake_services, monkeypatch):
    """No head and a range over whole splits: every split's count is its records, so each is
    read block by block from its store (``_scanned``), the same records as paging them."""
    paged = []
    real = analytics._paged
    monkeypatch.setattr(analytics, "_paged", lambda *a: paged.append(1) or real(*a))
    everything = selection(lake_services, range_from=T0 - DAY, range_to=T0 + 3 * DAY)
    got = list(records(lake_services, everything, ["@fields.seq"], Progress(), max_records=100))
    assert seqs(got) == list(range(60)) and not paged
    # A head that selects part of a split pages it.
    got = list(records(lake_services, selection(lake_services, "user.name:u1"), ["@fields.seq"], Progress(),
                       max_records=100))
    assert seqs(got) == [i for i in range(60) if i % 7 == 1] and paged
