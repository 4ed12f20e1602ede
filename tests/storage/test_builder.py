"""The split builder: batches built in worker processes or in-process give the same splits."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import orjson
import pytest

from seclake.storage.builder import MERGE, MERGE_NICENESS, SplitBuilder
from seclake.workers import PARENT_POLL_SECONDS
from seclake.storage.split import Split, SplitAborted

T0 = 1_763_683_200_000


def _payload(first: int, n: int) -> list[tuple[int, bytes]]:
    return [(i, orjson.dumps({"@timestamp": T0 + i, "@message": f"event {i}", "@fields": {"n": i, "ip": "10.0.0.1"}}))
            for i in range(first, first + n)]


def test_build_all_returns_each_split_in_order_from_workers(tmp_path):
    builder = SplitBuilder(threshold=4, workers=2)
    jobs = [("event", _payload(1, 6), tmp_path / "a", "a"), ("event", _payload(7, 2), tmp_path / "b", "b"),
            ("flow", _payload(9, 5), tmp_path / "c", "c")]
    try:
        metas = builder.build_all(jobs)
    finally:
        builder.close()
    assert [(m.split_id, m.dataset, m.num_records, m.seq_min, m.seq_max) for m in metas] == [
        ("a", "event", 6, 1, 6), ("b", "event", 2, 7, 8), ("c", "flow", 5, 9, 13)]
    for (_ds, payload, dest, _sid), meta in zip(jobs, metas):
        split = Split(dest)
        assert split.bodies() == payload
        assert meta.fields.numbers == {"@fields.n": "n0"} and meta.fields.ips == {"@fields.ip": "ip0"}



def test_a_batch_with_a_split_for_the_workers_sends_them_its_small_ones_too_and_builds_a_small_batch_here(tmp_path):
    builder = SplitBuilder(threshold=4, workers=2)
    try:
        mixed = builder.start([("event", _payload(1, 6), tmp_path / "a", "a"), ("event", _payload(7, 2), tmp_path / "b", "b")])
        assert len(mixed.futures) == 2  # both in the workers
        assert [m.num_records for m in mixed.metas()] == [6, 2]
        small = builder.start([("event", _payload(9, 2), tmp_path / "c", "c")])
        assert small.futures == [] and small.done()  # built here, before start returned
        assert Split(tmp_path / "c").bodies() == _payload(9, 2)
        assert [m.num_records for m in small.metas()] == [2]
    finally:
        builder.close()

def test_a_merge_in_a_worker_keeps_every_record_and_its_stored_json(tmp_path):
    builder = SplitBuilder(threshold=4)
    try:
        builder.build_all([("event", _payload(1, 3), tmp_path / "a", "a"), ("event", _payload(4, 3), tmp_path / "b", "b")])
        meta = builder.merge("event", [Split(tmp_path / "b"), Split(tmp_path / "a")], tmp_path / "m", "m")
    finally:
        builder.close()
    assert (meta.num_records, meta.seq_min, meta.seq_max) == (6, 1, 6)
    assert Split(tmp_path / "m").bodies() == _payload(1, 6)


def test_merges_run_in_their_own_process_at_a_lower_cpu_priority(tmp_path):
    """A merge rebuilds every record of its sources: under a backlog it must
    not take the CPU the builds of new records need (they run at the server's
    priority, merges niced)."""
    builder = SplitBuilder(threshold=4)
    try:
        # os.nice(0) answers the calling process's niceness.
        assert builder._run(os.nice, 0) == os.nice(0)
        assert builder._run(os.nice, 0, kind=MERGE) == min(os.nice(0) + MERGE_NICENESS, 19)
        builder.build_all([("event", _payload(1, 4), tmp_path / "a", "a"), ("event", _payload(5, 4), tmp_path / "b", "b")])
        builder.merge("event", [Split(tmp_path / "a"), Split(tmp_path / "b")], tmp_path / "m", "m")
        assert Split(tmp_path / "m").bodies() == _payload(1, 8)
    finally:
        builder.close()


def test_merges_told_to_stop_give_up_until_the_builder_is_closed(tmp_path):
    """A stopping lake does not wait for a day's merge: the worker gives up
    (nothing is written at the merge's place) and the sources stay whole."""
    builder = SplitBuilder(threshold=4)
    try:
        builder.build_all([("event", _payload(1, 4), tmp_path / "a", "a"), ("event", _payload(5, 4), tmp_path / "b", "b")])
        sources = [Split(tmp_path / "a"), Split(tmp_path / "b")]
        builder.stop_merges()
        with pytest.raises(SplitAborted):
            builder.merge("event", sources, tmp_path / "m", "m")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
        assert Split(tmp_path / "a").bodies() + Split(tmp_path / "b").bodies() == _payload(1, 8)
        # Builds are not merges: they go on.
        builder.build_all([("event", _payload(9, 4), tmp_path / "c", "c")])
    finally:
        builder.close()
    # A closed builder is a lake's next start: it merges again.
    try:
        builder.merge("event", sources, tmp_path / "m", "m")
        assert Split(tmp_path / "m").bodies() == _payload(1, 8)
    finally:
        builder.close()


class ThreadIndexers:
    """``Indexers`` over real ``Indexer`` objects, with Ray's transport replaced by
    a thread and pickling (what crosses the wire in cluster mode); the same
    path over a real Ray cluster is in tests/cluster/test_ray_cluster.py."""

    def __init__(self, indexer, fail: bool = False):
        import concurrent.futures

        self.indexer = indexer
        self.fail = fail
        self.pool = concurrent.futures.ThreadPoolExecutor(1)

    def submit(self, dataset, payload, split_id):
        import pickle

        def run():
            if self.fail:
                raise ConnectionError("indexer died")
            return pickle.loads(pickle.dumps(self.indexer.build(*pickle.loads(pickle.dumps((dataset, payload, split_id))))))

        return self.pool.submit(run)


def test_large_batches_and_merges_go_to_an_indexer_and_equal_a_local_build(tmp_path):
    from seclake.cluster.indexer import Indexer

    indexer = Indexer(str(tmp_path / "scratch"))
    remote = SplitBuilder(threshold=4, indexers=ThreadIndexers(indexer))
    local = SplitBuilder(threshold=4)
    try:
        jobs = [("event", _payload(1, 6), "a"), ("event", _payload(7, 2), "b"), ("event", _payload(9, 5), "c")]
        got = remote.build_all([(ds, p, tmp_path / "r" / sid, sid) for ds, p, sid in jobs])
        want = local.build_all([(ds, p, tmp_path / "l" / sid, sid) for ds, p, sid in jobs])
        merged = remote.merge("event", [Split(tmp_path / "r" / "c"), Split(tmp_path / "r" / "a")], tmp_path / "r" / "m", "m")
    finally:
        remote.close()
        local.close()
    # The batch (large ones, and the small one with them) and the merge were built by the indexer.
    assert (indexer.built, indexer.records, remote.remote_built) == (4, 6 + 2 + 5 + 11, 4)
    # The same split but for tantivy's segment ids (file names and their digests).
    assert [dict(m.to_json(), files=None) for m in got] == [dict(m.to_json(), files=None) for m in want]
    for _ds, payload, sid in jobs:
        assert Split(tmp_path / "r" / sid).bodies() == payload
    assert (merged.num_records, merged.seq_min, merged.seq_max) == (11, 1, 13)
    assert Split(tmp_path / "r" / "m").bodies() == sorted(_payload(1, 6) + _payload(9, 5))
    # Nothing left behind: no staging directories, no scratch builds.
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["a", "b", "c", "m"]
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_failed_indexer_build_is_built_here_instead(tmp_path):
    from seclake.cluster.indexer import Indexer

    builder = SplitBuilder(threshold=4, indexers=ThreadIndexers(Indexer(), fail=True))
    try:
        meta = builder.build("event", _payload(1, 6), tmp_path / "a", "a")
    finally:
        builder.close()
    assert (builder.remote_built, builder.remote_failed) == (0, 1)
    assert meta.num_records == 6 and Split(tmp_path / "a").bodies() == _payload(1, 6)


def test_split_files_from_elsewhere_must_be_plain_file_names(tmp_path):
    import pytest

    from seclake.storage.builder import install

    with pytest.raises(ValueError, match="plain file name"):
        install({"../escape": b"x"}, tmp_path / "s")
    assert list(tmp_path.iterdir()) == []


def test_an_indexer_that_hangs_is_given_up_on_and_the_split_built_here(tmp_path, monkeypatch):
    import concurrent.futures
    import threading

    from seclake.storage import builder as builder_module

    monkeypatch.setattr(builder_module, "INDEXER_SECONDS_MIN", 0.5)
    release = threading.Event()

    class Hung:
        def submit(self, dataset, payload, split_id):
            f: concurrent.futures.Future = concurrent.futures.Future()
            threading.Thread(target=lambda: (release.wait(10), f.set_exception(ConnectionError("late")))).start()
            return f

    builder = SplitBuilder(threshold=4, indexers=Hung())
    try:
        meta = builder.build("event", _payload(1, 6), tmp_path / "a", "a")
    finally:
        release.set()
        builder.close()
    assert builder.remote_failed == 1 and meta.num_records == 6
    assert Split(tmp_path / "a").bodies() == _payload(1, 6)


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_builder_workers_end_when_their_server_is_killed(tmp_path):
    """Each SIGKILL of a server used to leave its 2-3 builder workers blocked
    forever (110-134 MB each; 53 after 20 kills)."""
    from tests.api.test_durability import _free_port, _login, _start  # noqa: PLC0415

    port = _free_port()
    proc = _start(tmp_path / "data", port)
    try:
        url = f"http://127.0.0.1:{port}"
        token = _login(url, time.monotonic() + 30)
        # A batch of WORKER_THRESHOLD records or more is built in the worker processes.
        body = b"\n".join(orjson.dumps({"@timestamp": 1_763_683_200_000 + i, "n": i}) for i in range(2000))
        r = httpx.post(f"{url}/api/import/bulk", content=body, headers={"Servicetoken": token}, timeout=60)
        assert r.json()["response"]["accepted"] == 2000, r.text
        deadline = time.monotonic() + 30
        while not (workers := {p for p in _children(proc.pid) if "multiprocessing" in _cmdline(p)}):
            assert time.monotonic() < deadline, "no builder worker was started"
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 3 * PARENT_POLL_SECONDS + 10
        while any(_alive(p) for p in workers):
            assert time.monotonic() < deadline, f"workers outlived their server: {sorted(workers)}"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _kill_build_workers(builder: SplitBuilder, times: int, deadline: float) -> None:
    """SIGKILL the build workers of ``times`` successive pools, each while it builds (what the OOM killer does)."""
    killed: list = []
    while len(killed) < times:
        assert time.monotonic() < deadline, "no build to kill"
        pool = builder._pools.get("build")
        if pool is None or pool in killed or not pool._processes:
            time.sleep(0.002)
            continue
        time.sleep(0.3)  # into the build (it takes seconds)
        for pid in list(pool._processes):
            os.kill(pid, signal.SIGKILL)
        killed.append(pool)


def _build_killed(builder: SplitBuilder, times: int, job):
    import threading

    killer = threading.Thread(target=_kill_build_workers, args=(builder, times, time.monotonic() + 60))
    killer.start()
    try:
        return builder.build_all([job])
    finally:
        killer.join()


def test_a_build_whose_worker_is_killed_is_built_again_in_new_workers(tmp_path):
    builder = SplitBuilder(threshold=4, workers=1)
    payload = _payload(1, 60_000)  # seconds of work: the kill lands mid-build
    dest = tmp_path / "a"
    try:
        [meta] = _build_killed(builder, 1, ("event", payload, dest, "a"))
    finally:
        builder.close()
    assert builder.workers_lost == 1
    assert (meta.num_records, meta.seq_min, meta.seq_max) == (60_000, 1, 60_000)
    assert Split(dest).bodies() == payload
    assert not dest.with_name("a.staging").exists()


def test_a_build_whose_workers_die_twice_says_so_and_publishes_nothing(tmp_path):
    from seclake.errors import Unavailable

    builder = SplitBuilder(threshold=4, workers=1)
    dest = tmp_path / "a"
    try:
        with pytest.raises(Unavailable, match="split building failed twice: its worker process died each time"):
            _build_killed(builder, 2, ("event", _payload(1, 60_000), dest, "a"))
    finally:
        builder.close()
    assert builder.workers_lost == 2
    assert not dest.exists()


def test_builds_go_on_after_a_worker_dies_while_idle(tmp_path):
    """A pool whose idle worker was killed takes no more work: every build
    after it used to fail, until a restart (an indexer that never catches up)."""
    builder = SplitBuilder(threshold=4, workers=1)
    try:
        builder.build_all([("event", _payload(1, 10), tmp_path / "a", "a")])
        pool = builder._pools["build"]
        for pid in list(pool._processes):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not pool._broken:  # the pool notices the death on its own
            assert time.monotonic() < deadline
            time.sleep(0.01)
        metas = [builder.build_all([("event", _payload(100 + 10 * i, 10), tmp_path / f"b{i}", f"b{i}")])[0]
                 for i in range(3)]
    finally:
        builder.close()
    assert [m.seq_min for m in metas] == [100, 110, 120]
    assert builder.workers_lost == 1


def test_warmed_workers_are_up_before_the_first_build_and_build_it(tmp_path):
    builder = SplitBuilder(threshold=4, workers=2)
    try:
        builder.warm()
        deadline = time.monotonic() + 30
        while len(builder._pools["build"]._processes) < 2:
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.01)
        workers = set(builder._pools["build"]._processes)
        [meta] = builder.build_all([("event", _payload(1, 6), tmp_path / "a", "a")])
        assert set(builder._pools["build"]._processes) == workers  # built by one of them
    finally:
        builder.close()
    assert meta.num_records == 6 and Split(tmp_path / "a").bodies() == _payload(1, 6)
    in_process = SplitBuilder(use_worker=False)
    in_process.warm()  # nothing to start
    assert in_process._pools == {}
