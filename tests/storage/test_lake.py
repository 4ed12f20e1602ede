"""The lake turns appended records into searchable splits, exactly once."""

import secrets
import tempfile
import threading
import time
from pathlib import Path

import orjson
import pytest

from seclake.storage.catalog import PUBLISHED
from seclake.storage.lake import LakeBusy
from seclake.storage import flusher, merge, split
from seclake.storage.merge import DAY_MS
from tests.storage.test_recordstore import _demo_records

DAY0 = 1_763_683_200_000  # 2025-11-21T00:00:00Z


def _event(i: int, day: int = 0) -> dict:
    return {"@timestamp": DAY0 + day * DAY_MS + i, "@message": f"event {i}", "@fields": {"n": i}}


def _docids(lake, dataset="event"):
    out = []
    for s in lake.splits(dataset):
        out.extend(r.docid for r in s.all_records())
    return sorted(out)


def test_records_land_in_one_split_per_dataset_and_day(lake_factory):
    lake = lake_factory()
    lake.append([("event", _event(i, day=i % 3)) for i in range(30)] + [("flow", _event(99))])
    lake.flush()
    entries = lake.catalog.entries(PUBLISHED)
    assert sorted((e.dataset, e.num_records) for e in entries) == [("event", 10)] * 3 + [("flow", 1)]
    assert len(lake.splits("event", DAY0 + DAY_MS, DAY0 + DAY_MS + 5)) == 1
    assert _docids(lake) == list(range(1, 31))


@pytest.mark.parametrize("partitions", [1, 4])
def test_records_placed_by_a_parse_worker_land_where_their_own_fields_would_put_them(lake_factory, partitions):
    from seclake.service.parsepool import Records

    # The worker sends each record's JSON, day and partition; the server hands the lake no record at all.
    records = [{**_event(i, day=i % 3), "@customer": ["acme", "globex"][i % 2]} for i in range(12)]
    worker = Records(None, partitions)
    for r in records:
        worker.add("event", r)
    prepared = worker.prepared()
    lake = lake_factory(partitions=partitions)
    lake.append([("event", None)] * len(records), bodies=prepared.bodies, placed=prepared.placed)
    lake.flush()
    splits = sorted((e.time_min // DAY_MS, tuple(e.customers or ()), e.num_records)
                    for e in lake.catalog.entries(PUBLISHED))
    days = sorted({r["@timestamp"] // DAY_MS for r in records})
    if partitions == 1:  # partitioning off: one split per day, every customer in it
        assert splits == [(d, ('["acme"]', '["globex"]'), 4) for d in days]
    else:  # a split per day and customer (signatures: customers.py)
        assert splits == sorted((d, (f'["{c}"]',), 2) for d in days for c in ("acme", "globex"))
    assert sorted((r.docid, r.source) for s in lake.splits("event") for r in s.all_records()) == [
        (n, orjson.loads(orjson.dumps(r))) for n, r in enumerate(records, 1)]


def _appended_while_building(lake, first: int, count: int) -> threading.Thread:
    """A thread that appends ``count`` records once a build runs in a worker."""

    def late() -> None:
        deadline = time.monotonic() + 60
        while not lake.builder.running() and time.monotonic() < deadline:
            time.sleep(0.002)
        lake.append([("event", _event(first + i)) for i in range(count)])

    thread = threading.Thread(target=late)
    thread.start()
    return thread


def test_records_that_come_while_a_flush_builds_are_built_beside_it_and_published_after_it(lake_factory, monkeypatch):
    # A day's records make one split, so a flush of one day keeps one worker
    # busy: the records that come meanwhile go to the other worker at once,
    # and the splits are published in log order, so the checkpoint never
    # passes a record that is not searchable yet.
    monkeypatch.setattr(flusher, "MIN_SIDE_BATCH", 5)
    lake = lake_factory()
    events: list[tuple] = []
    start, publish = lake.builder.start, lake.janitor.publish

    def starting(jobs):
        events.append(("start", sum(len(payload) for _d, payload, _p, _s in jobs)))
        return start(jobs)

    def publishing(metas, **kw):
        events.append(("publish", sum(m.num_records for m in metas), kw["checkpoint"]))
        return publish(metas, **kw)

    monkeypatch.setattr(lake.builder, "start", starting)
    monkeypatch.setattr(lake.janitor, "publish", publishing)
    lake.append([("event", _event(i)) for i in range(2000)])
    late = _appended_while_building(lake, 2000, 10)
    assert lake.flush() == 2010
    late.join()
    assert events == [("start", 2000), ("start", 10), ("publish", 2000, 2000), ("publish", 10, 2010)]
    assert _docids(lake) == list(range(1, 2011))
    assert lake.catalog.checkpoint() == 2010


def test_a_flush_whose_build_fails_beside_another_removes_both_splits_and_keeps_every_record(lake_factory, monkeypatch):
    monkeypatch.setattr(flusher, "MIN_SIDE_BATCH", 5)
    lake = lake_factory()
    start = lake.builder.start

    def failing_second(jobs):
        building = start(jobs)
        if sum(len(payload) for _d, payload, _p, _s in jobs) == 10:
            def broken():
                building_outcomes()
                raise OSError(28, "No space left on device")
            building_outcomes, building.outcomes = building.outcomes, broken
        return building

    monkeypatch.setattr(lake.builder, "start", failing_second)
    lake.append([("event", _event(i)) for i in range(2000)])
    late = _appended_while_building(lake, 2000, 10)
    with pytest.raises(OSError, match="No space left"):
        lake.flush()
    late.join()
    # The first split was published before the second failed; the second's
    # directory is gone, its records are still pending and in the log.
    assert _docids(lake) == list(range(1, 2001))
    published = {e.split_id for e in lake.catalog.entries(PUBLISHED)}
    assert {p.name for p in (lake.layout.splits / "event").iterdir()} == published
    assert lake.flusher.pending() == 10
    monkeypatch.undo()
    assert lake.flush() == 10
    assert _docids(lake) == list(range(1, 2011))


def test_unindexed_records_are_replayed_once_after_a_crash(lake_factory, tmp_path):
    lake = lake_factory()
    lake.append([("event", _event(i)) for i in range(5)])
    lake.flush()
    lake.append([("event", _event(i)) for i in range(5, 9)])
    # A crash: the process ends without indexing the second append.
    lake.abandon()
    again = lake_factory()
    again.flush()
    assert _docids(again) == list(range(1, 10))
    again.abandon()
    third = lake_factory()
    third.flush()
    assert _docids(third) == list(range(1, 10))


def test_a_lake_whose_last_flush_fails_still_stops_and_keeps_the_records_for_its_next_start(lake_factory, monkeypatch, caplog):
    lake = lake_factory()
    lake.append([("event", _event(i)) for i in range(5)])

    def broken(jobs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(lake.builder, "start", broken)
    lake.stop()  # no exception: the lake is let go of all the same (its lock too)
    assert "the last flush failed; 5 records stay in the log until the next start" in caplog.text
    monkeypatch.undo()
    again = lake_factory()
    again.flush()
    assert _docids(again) == list(range(1, 6))


def test_a_split_that_cannot_be_read_leaves_the_lake_serving_the_rest_and_is_named_by_searches(
        lake_factory, caplog, monkeypatch):
    """One lost or corrupt split directory used to stop the lake from starting at all."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from seclake.query import ast
    from seclake.search.plan import SearchPlan
    from seclake.search.root import Root

    lake = lake_factory()
    lake.append([("event", _event(i)) for i in range(10)])  # day 0, split A
    lake.flush()
    lake.append([("event", _event(i, day=i % 2)) for i in range(10, 30)])  # day 0 split B, day 1
    lake.flush()
    first = min(lake.splits("event"), key=lambda s: s.meta.seq_min)
    lost_id, lost_path = first.meta.split_id, first.path
    lake.stop()
    shutil.rmtree(lost_path)

    again = lake_factory(background=False)
    assert [s.meta.split_id for s in again.damaged()] == [lost_id]
    assert f"split {lost_id} (event, 10 records, 2025-11-21T00:00:00.000Z" in caplog.text
    assert str(lost_path) in caplog.text
    with ThreadPoolExecutor(2) as pool:
        root = Root(again.splits, pool)
        whole = root.search(SearchPlan(dataset="event", query=ast.MatchAll(), limit=50))
        assert whole.failed == [lost_id]  # partial, and it says which split is missing
        assert whole.total == 20 and sorted(h.docid for h in whole.hits) == list(range(11, 31))
        other_day = root.search(SearchPlan(dataset="event", query=ast.MatchAll(), range_from=DAY0 + DAY_MS))
        assert other_day.failed == [] and other_day.total == 10
    # Merges leave it alone (a merge of it would fail, every round), and merge the rest.
    again.append([("event", _event(i, day=1)) for i in range(30, 40)])
    again.flush()
    monkeypatch.setattr(merge, "SETTLE_MS", 0)
    assert again.merge() == 1  # day 1's two splits; day 0's readable split has nothing to merge with
    assert lost_id in {e.split_id for e in again.catalog.entries(PUBLISHED)}
    assert [s.meta.split_id for s in again.damaged()] == [lost_id]


def test_background_indexer_makes_records_searchable_quickly(lake_factory):
    lake = lake_factory(background=True)
    started = time.monotonic()
    first, last = lake.append([("event", _event(i)) for i in range(100)])
    assert lake.wait_indexed(last, timeout=5)
    assert time.monotonic() - started < 2
    assert _docids(lake) == list(range(first, last + 1))


def _spread(first: int, n: int, days: int) -> list:
    return [("event", _event(first + i, day=i % days)) for i in range(n)]


def test_an_import_spread_over_many_days_waits_for_more_and_makes_fewer_splits(lake_factory):
    # A backfill of 30 days in three posts: each post alone would make a split per day.
    lake = lake_factory(background=True, spread_hold=10)
    for post in range(3):
        _first, last = lake.append(_spread(post * 2500, 2500, days=30))
        time.sleep(0.2)
    ended = time.monotonic()
    assert lake.wait_indexed(last, timeout=15)
    assert lake.flusher.spread_holds > 0
    assert len(lake.splits("event")) == 30  # one flush of all three posts
    assert _docids(lake) == list(range(1, 7501))
    # Once nothing more came the import had ended: its last records did not wait out the hold.
    assert time.monotonic() - ended < 5


def test_a_live_stream_a_small_import_and_an_explicit_flush_are_not_held(lake_factory):
    lake = lake_factory(background=True)
    _first, last = lake.append(_spread(0, 5000, days=2))  # today's and yesterday's logs
    assert lake.wait_indexed(last, timeout=10)
    _first, last = lake.append(_spread(0, 1000, days=30))  # a small import of a month
    assert lake.wait_indexed(last, timeout=10)
    assert lake.flusher.spread_holds == 0
    lake.stop()
    again = lake_factory()  # no indexer thread: the caller flushes
    again.append(_spread(0, 5000, days=30))
    assert again.flush() == 5000 and again.flusher.spread_holds == 0


def test_spread_hold_0_indexes_a_spread_import_at_once(lake_factory):
    lake = lake_factory(background=True, spread_hold=0)
    _first, last = lake.append(_spread(0, 5000, days=30))
    assert lake.wait_indexed(last, timeout=10) and lake.flusher.spread_holds == 0


def test_merges_keep_every_record_and_reduce_splits(lake_factory):
    lake = lake_factory()
    for batch in range(9):
        lake.append([("event", _event(batch * 10 + i)) for i in range(10)])
        lake.flush()
    assert len(lake.splits("event")) == 9
    assert lake.merge() == 1
    assert len(lake.splits("event")) == 1
    assert _docids(lake) == list(range(1, 91))
    # The merged split is what a restart sees too, and the old directories are gone.
    lake.abandon()
    again = lake_factory()
    assert _docids(again) == list(range(1, 91))
    assert len(list((lake.layout.splits / "event").iterdir())) == 1


def test_the_indexer_s_busy_share_counts_the_time_its_flushes_build(lake_factory, monkeypatch):
    monkeypatch.setattr(flusher, "BUSY_WINDOW", 1.0)
    lake = lake_factory()
    assert lake.flusher.busy_share() == 0.0
    start = lake.builder.start
    seen: list[tuple[float, float]] = []  # (the share read, seconds since the flush began)

    def slow(jobs):  # a build that takes 0.4 s at least: the share is read while it runs
        building = start(jobs)
        time.sleep(0.4)
        seen.append((lake.flusher.busy_share(), time.monotonic() - began))
        return building

    monkeypatch.setattr(lake.builder, "start", slow)
    lake.append([("event", _event(i)) for i in range(10)])
    began = time.monotonic()
    assert lake.flush() == 10
    took = time.monotonic() - began
    # Bounded by what was measured, not by how fast a busy machine ran the build.
    share, elapsed = seen[0]
    assert 0.35 <= share <= min(1.0, elapsed) + 0.01  # under way: counted up to now
    assert 0.35 <= lake.flusher.busy_share() <= min(1.0, took) + 0.01  # ended: its period stays in the window
    time.sleep(1.1)
    assert lake.flusher.busy_share() == 0.0  # out of the window


def test_merges_wait_while_the_indexer_is_busy_except_to_bound_a_day_s_splits(lake_factory, monkeypatch, caplog):
    from seclake.storage import merger

    lake = lake_factory()
    for batch in range(9):  # nine splits of one tier, and a quiet day of two
        lake.append([("event", _event(batch * 10 + i)) for i in range(10)])
        lake.flush()
    for i in range(2):
        lake.append([("event", _event(i, day=1))])
        lake.flush()
    monkeypatch.setattr(merge, "SETTLE_MS", 0)
    share = [0.9]
    monkeypatch.setattr(lake.merger, "busy_share", lambda: share[0])
    with caplog.at_level("INFO", logger="seclake.lake"):
        assert lake.merge() == 0
    assert len(lake.splits("event")) == 11
    assert "merges wait: the indexer built 90% of the last 10 s" in caplog.text
    # Under a load that never ends, a tier still merges once it holds BUSY_FACTOR splits.
    for batch in range(9, merger.BUSY_FACTOR):
        lake.append([("event", _event(batch * 10 + i)) for i in range(10)])
        lake.flush()
    assert lake.merge() == 1
    assert len(lake.splits("event")) == 3  # the tier's splits in one; the quiet day still waits
    share[0] = 0.5
    with caplog.at_level("INFO", logger="seclake.lake"):
        assert lake.merge() == 1  # the quiet day, as usual
    assert "merges resume: the indexer built 50% of the last 10 s" in caplog.text
    assert len(lake.splits("event")) == 2
    assert _docids(lake) == list(range(1, merger.BUSY_FACTOR * 10 + 3))


def test_appends_do_not_each_start_a_merge_round(lake_factory, monkeypatch):
    # A round reads the whole catalog; an ingest appends several times a second.
    from seclake.storage.lake import Lake

    rounds: list[float] = []
    monkeypatch.setattr(Lake, "merge", lambda self: rounds.append(time.monotonic()) or 0)
    from seclake.storage.lake import MERGE_INTERVAL

    lake = lake_factory(background=True)
    began = time.monotonic()
    for i in range(20):
        _, last = lake.append([("event", _event(i))])
        assert lake.wait_indexed(last, timeout=10)
        time.sleep(0.02)
    # The first at start; the next after MERGE_INTERVAL (5 s), however many appends came
    # (20 appends take ~1 s, longer on a busy machine: judged against the time they took,
    # one more for a round falling due as the last append ends). A round per append: 20.
    assert 1 <= len(rounds) <= 2 + int((time.monotonic() - began) // MERGE_INTERVAL)


def test_a_stopping_lake_ends_its_merge_round_after_the_merge_under_way(lake_factory, monkeypatch):
    # A stop (a server's, an import command's end) waited for every merge the
    # policy asked for, each of a whole day's records.
    lake = lake_factory()
    running = lake.builder.merge_workers  # merges run side by side
    days = range(running + 1)
    for day in days:
        for batch in range(8):
            lake.append([("event", _event(batch * 10 + i, day=day)) for i in range(10)])
            lake.flush()
    merge_one = lake.builder.merge

    def merge_then_stop(*args, **kwargs):
        meta = merge_one(*args, **kwargs)
        lake.flusher.stop()  # what Lake.stop does first
        return meta

    monkeypatch.setattr(lake.builder, "merge", merge_then_stop)
    assert lake.merge() == running
    assert sorted(len(lake.splits("event", DAY0 + d * DAY_MS, DAY0 + d * DAY_MS + 100)) for d in days) == [1] * running + [8]
    assert _docids(lake) == list(range(1, 80 * len(days) + 1))


def test_a_lake_stopped_during_a_merge_keeps_every_record_and_merges_after_its_restart(lake_factory, monkeypatch):
    # An import command's end waited for the merge under way (half of a
    # 12k-line command's time): a stop makes it give up instead.
    lake = lake_factory()
    for batch in range(8):
        lake.append([("event", _event(batch * 100 + i)) for i in range(100)])
        lake.flush()
    merge_one = lake.builder.merge

    def stopped_during(*args, **kwargs):
        lake.builder.stop_merges()  # what Lake.stop does while this merge runs
        return merge_one(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(lake.builder, "merge", stopped_during)
        assert lake.merge() == 0
    assert len(lake.splits("event")) == 8 and _docids(lake) == list(range(1, 801))
    lake.stop()
    assert sorted(p.suffix for p in (lake.layout.splits / "event").iterdir()) == [""] * 8  # no staging left
    again = lake_factory()
    assert again.merge() == 1
    assert len(again.splits("event")) == 1 and _docids(again) == list(range(1, 801))


def test_a_lake_told_to_merge_later_leaves_its_splits_until_then(lake_factory):
    # One-shot commands merge only after a while (cli/options.py): a merge
    # still running when a short command ends is abandoned, work for nothing.
    lake = lake_factory(background=True, merge_after=60.0)
    for batch in range(9):
        _, last = lake.append([("event", _event(batch * 10 + i)) for i in range(10)])
        assert lake.wait_indexed(last, timeout=10)
    time.sleep(1.0)  # the tiered policy asks for a merge, which waits for its 60 s
    assert lake.merges_done == 0 and len(lake.splits("event")) == 9
    lake.stop()
    again = lake_factory(background=True)  # no delay: the server's lake
    _, last = again.append([("event", _event(90))])  # its merger's first round is at its start
    deadline = time.monotonic() + 30
    while again.merges_done == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert again.merges_done >= 1 and len(again.splits("event")) < 10
    assert again.wait_indexed(last, timeout=10) and _docids(again) == list(range(1, 92))


def test_a_lake_of_a_one_shot_command_opens_splits_only_when_they_are_read(lake_factory):
    # Each open tantivy index keeps a thread; an import command that opened
    # every split of the lake paid for it at start and again at exit.
    lake = lake_factory(open_splits=False)
    lake.append([("event", _event(i)) for i in range(20)])
    lake.flush()
    lake.stop()
    writer = lake_factory(open_splits=False)
    writer.append([("event", _event(i, day=1)) for i in range(20, 30)])
    writer.flush()
    assert len(writer.splits("event")) == 2 and not any(s.is_open for s in writer.splits("event"))
    assert _docids(writer) == list(range(1, 31))  # read: opened then
    assert all(s.is_open for s in writer.splits("event"))
    writer.stop()
    server = lake_factory()
    assert all(s.is_open for s in server.splits("event"))


def test_a_server_lake_searches_new_splits_before_another_node_can(lake_factory, monkeypatch):
    # Another node sees a split once it is in the catalog; a search on this
    # node right after must find it too (a cluster test missed it under load,
    # first when the split was opened after the catalog had it, then when it
    # was put on the shelf after): a flush's splits are open and searchable
    # here when the catalog publishes them, a merge's are open.
    lake = lake_factory()
    order = []
    opened = split.Split.open
    publish = lake.janitor.publish

    def open_(self):
        order.append(("open", self.meta.split_id))
        return opened(self)

    def publish_(metas, **kwargs):
        ids = tuple(m.split_id for m in metas)
        searchable = {s.meta.split_id for s in lake.splits("event")}
        order.append(("publish", ids, "replaces" in kwargs or set(ids) <= searchable))
        return publish(metas, **kwargs)

    monkeypatch.setattr(split.Split, "open", open_)
    monkeypatch.setattr(lake.janitor, "publish", publish_)
    for batch in range(8):
        lake.append([("event", _event(batch * 10 + i)) for i in range(10)])
        lake.flush()
    assert lake.merge() == 1
    published = [entry for entry in order if entry[0] == "publish"]
    assert len(published) == 9  # eight flushes, one merge
    for entry in published:
        at = order.index(entry)
        assert all(("open", i) in order[:at] for i in entry[1]), order
        assert entry[2], f"{entry[1]} not searchable here when published"


def test_a_flush_whose_publish_fails_takes_its_split_off_the_shelf_and_keeps_its_records(lake_factory, monkeypatch):
    lake = lake_factory()
    lake.append([("event", _event(i)) for i in range(1, 21)])

    def refused(metas, **kwargs):
        raise OSError("catalog unreachable")

    with monkeypatch.context() as m:
        m.setattr(lake.janitor, "publish", refused)
        with pytest.raises(OSError, match="catalog unreachable"):
            lake.flush()
    assert lake.splits("event") == [] and lake.flusher.pending() == 20
    assert lake.flush() == 20
    assert _docids(lake) == list(range(1, 21))  # each record once


def test_splits_of_the_older_formats_are_read_and_merged_into_the_newest(lake_factory, monkeypatch):
    lake = lake_factory()
    for batch in range(9):
        with monkeypatch.context() as m:
            if batch < 6:  # written by an earlier seclake
                m.setattr(split, "WRITE_FORMAT", 1 if batch < 3 else 2)
            lake.append([("event", _event(batch * 10 + i)) for i in range(10)])
            lake.flush()
    assert sorted(s.meta.format_version for s in lake.splits("event")) == [1] * 3 + [2] * 3 + [3] * 3
    before = {r.docid: r.body for s in lake.splits("event") for r in s.all_records()}
    assert lake.merge() == 1
    (merged,) = lake.splits("event")
    assert merged.meta.format_version == split.FORMAT_VERSION
    assert (merged.path / "records.zst").is_file()
    assert {r.docid: r.body for r in merged.all_records()} == before  # byte for byte
    assert len(before) == 90


def test_a_quiet_day_is_merged_into_one_split(lake_factory, monkeypatch):
    lake = lake_factory()
    lake.append([("event", _event(i)) for i in range(1, 4)])
    lake.flush()
    lake.append([("event", _event(i)) for i in range(4, 40)])
    lake.flush()
    assert len(lake.splits("event")) == 2 and lake.merge() == 0  # different tiers, day not quiet yet
    monkeypatch.setattr(merge, "SETTLE_MS", 0)
    assert lake.merge() == 1
    assert len(lake.splits("event")) == 1 and _docids(lake) == list(range(1, 40))


def test_unpublished_split_directories_are_removed_at_start(lake_factory):
    lake = lake_factory()
    lake.append([("event", _event(1))])
    lake.flush()
    stray = lake.layout.splits / "event" / "event-20250101-deadbeef0000.staging"
    stray.mkdir()
    lake.abandon()
    again = lake_factory()
    assert not stray.exists()
    assert _docids(again) == [1]


def test_a_second_writer_is_refused_with_a_clear_message(lake_factory):
    lake_factory()
    with pytest.raises(LakeBusy, match="in use by process"):
        lake_factory()


def test_retention_deletes_whole_old_splits(lake_factory):
    lake = lake_factory()
    lake.append([("event", _event(i, day=i)) for i in range(5)])
    lake.flush()
    now = DAY0 + 5 * DAY_MS
    assert lake.retention(max_age_days=2, now_ms=now) == 3
    assert [r for r in _docids(lake)] == [4, 5]
    assert lake.retention(max_age_days=0, now_ms=now) == 0


def test_splits_and_merges_built_in_the_worker_process_are_the_same(lake_factory):
    lake = lake_factory()
    lake.builder.threshold = 1  # every batch and merge goes to the worker process
    for batch in range(9):
        lake.append([("event", _event(batch * 10 + i)) for i in range(10)])
        lake.flush()
    assert len(lake.splits("event")) == 9
    assert lake.merge() == 1
    assert _docids(lake) == list(range(1, 91))
    split = lake.splits("event")[0]
    assert split.meta.num_records == 90 and split.fields.numbers == {"@fields.n": "n0"}


def test_merged_splits_keep_their_files_for_a_grace_period(lake_factory):
    lake = lake_factory()
    for batch in range(8):
        lake.append([("event", _event(batch))])
        lake.flush()
    old = [s.path for s in lake.splits("event")]
    assert lake.merge() == 1
    # Another process may still open a split the catalog listed a moment ago.
    assert all(p.exists() for p in old)
    assert lake.reap() == 0
    assert lake.reap(now=time.monotonic() + lake.janitor.retire_grace + 1) == 8
    assert not any(p.exists() for p in old)
    assert {e.state for e in lake.catalog.entries("marked")} == set()


def _loglines() -> list[dict]:
    """Parsed demo log records (varied enough that a dictionary pays), on one day."""
    return [{**orjson.loads(body), "@timestamp": DAY0 + i} for i, (_, body) in enumerate(_demo_records())]


def _dictionary_bytes(s) -> int:
    return int.from_bytes((s.path / "records.zst").read_bytes()[-8:], "little")  # the footer's length


def test_new_small_splits_skip_the_records_dictionary_and_their_merge_trains_one(lake_factory, monkeypatch):
    # Training costs ~30 ms whatever a split's size, and a new small split is
    # soon merged: only the merge, whose split stays, trains one.
    lake = lake_factory()
    records = _loglines()
    half = len(records) // 2
    for part in (records[:half], records[half:]):
        lake.append([("event", r) for r in part])
        lake.flush()
    fresh = lake.splits("event")
    assert len(fresh) == 2 and all(_dictionary_bytes(s) == 0 for s in fresh)
    monkeypatch.setattr(merge, "SETTLE_MS", 0)
    assert lake.merge() == 1
    (merged,) = lake.splits("event")
    assert _dictionary_bytes(merged) > 0
    records_bytes = [(s.path / "records.zst").stat().st_size for s in (*fresh, merged)]
    assert records_bytes[2] < 0.8 * (records_bytes[0] + records_bytes[1])  # and it pays for itself


# -- names from the catalog never reach outside the lake (issue 39, finding 1) --


def _victim(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("not seclake's")
    return victim


def _rename_split(db, old: str, new: str, **values) -> None:
    from sqlalchemy import update

    from seclake.storage.catalog import SplitRow

    with db.session(write=True) as s:
        s.execute(update(SplitRow).where(SplitRow.split_id == old).values(split_id=new, **values))


def test_a_lake_whose_catalog_was_altered_to_name_a_path_refuses_to_start_and_deletes_nothing(lake_factory, db, tmp_path):
    from seclake.storage.catalog import MARKED, CatalogRefused

    lake = lake_factory()
    lake.append([("event", _event(i, day=i)) for i in range(3)])
    lake.flush()
    ids = [e.split_id for e in lake.catalog.entries(PUBLISHED)]
    lake.stop()
    victim = _victim(tmp_path)
    # An absolute path to the victim, short enough for PostgreSQL's varchar(64) column.
    absolute = Path(tempfile.gettempdir()) / f"sl-victim-{secrets.token_hex(4)}"
    absolute.symlink_to(victim)
    try:
        _rename_split(db, ids[0], str(absolute), state=MARKED)  # a marked split's directory goes at the next start
        _rename_split(db, ids[1], "../../../../victim")
        with pytest.raises(CatalogRefused) as refused:
            lake_factory()
    finally:
        absolute.unlink()
    message = str(refused.value)
    assert "names 2 split(s) seclake never writes, so nothing was opened or deleted" in message
    assert f"table splits, a marked row: split id '{absolute}' is not of the form" in message
    assert "table splits, a published row: split id '../../../../victim' is not of the form" in message
    assert (victim / "precious.txt").exists()
    assert sorted(p.name for p in (tmp_path / "data" / "lake" / "splits" / "event").iterdir()) == sorted(ids)


def test_a_row_altered_while_the_lake_runs_is_refused_where_its_split_would_be_deleted(lake_factory, db, tmp_path):
    from seclake.service.metrics import LakeCollector

    lake = lake_factory()
    lake.janitor.retire_grace = 0
    lake.append([("event", _event(i, day=i)) for i in range(2)])
    lake.flush()
    old = lake.catalog.entries(PUBLISHED)[0].split_id
    victim = _victim(tmp_path)
    _rename_split(db, old, "../../../../victim")  # from data/lake/splits/event: tmp_path/victim
    assert lake.retention(max_age_days=1, now_ms=DAY0 + 30 * DAY_MS) == 2
    assert (victim / "precious.txt").exists()
    assert lake.janitor.refused == 1
    # Its row stays (marked): the refusal is seen again, and the next start refuses the catalog.
    assert [e.split_id for e in lake.catalog.entries("marked")] == ["../../../../victim"]
    scraped = {m.name: m.samples[0].value for m in LakeCollector(lake, None, lambda: True).collect() if m.samples}
    assert scraped["seclake_split_deletions_refused"] == 1


def test_the_log_lets_go_of_what_its_readers_release_without_waiting_for_another_import(lake_factory):
    # A reader of the log besides indexing (the detector's saved state, idempotency keys) held it
    # at an import's last flush; once it lets go, the idle indexer deletes the segments: they
    # stayed until the next import, and every start read them whole.
    lake = lake_factory(background=True)
    lake.wal.segment_bytes = 4096
    held = [0]
    lake.wal_holds.append(lambda: held[0])
    last = 0
    for b in range(6):
        _first, last = lake.append([("event", _event(b * 40 + i)) for i in range(40)])
    assert lake.wait_indexed(last, timeout=10)

    def segments() -> int:
        return len(list(lake.layout.wal.glob("*.wal")))

    time.sleep(0.3)  # several idle rounds of the indexer: the hold keeps them
    assert segments() >= 3
    held[0] = last
    deadline = time.monotonic() + 5
    while segments() > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert segments() == 1  # the one being written
    assert _docids(lake) == list(range(1, 241))
