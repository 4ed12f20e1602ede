"""Building splits in a worker process, so indexing runs on another core.

Turning records into a split is mostly Python work (flattening, keyword
normalization) that holds the GIL; in the server's process it competes with
parsing, rule evaluation and searches. Large batches and merges are built in
spawned worker processes instead; small batches (a few records every
commit interval) stay in-process, where a round trip would cost more.

In cluster mode the large ones go to indexer actors on other nodes
(``Indexers``, seclake/cluster/indexer.py) when any is live: the records
travel to the indexer, the split's files come back and are sealed here, so
the lake publishes and uploads them as if built here. An indexer that fails
or is gone costs nothing but time: the job is built here instead (the
records are still pending and in the log meanwhile).
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import shutil
import tempfile
import threading
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol, Sequence

import orjson

from seclake import workers
from seclake.errors import Unavailable
from seclake.record.dataset import DATASETS
from seclake.storage import memory
from seclake.storage.split import Split, SplitMeta, StoredRecord, seal, write_split

log = logging.getLogger("seclake.lake")

# Batches smaller than this are written in-process: a round trip to an idle
# worker costs milliseconds, while building in the server holds its GIL
# against imports and searches. Measured over HTTP (98k demo lines over 15
# days, a loaded machine): the faster documents alone gave ~1.05x records/s
# to searchable; with 500 instead of 5000 and two workers, 1.5-1.6x.
WORKER_THRESHOLD = 500
# Worker processes: two keep both cores busy while a backlog is indexed
# (a build keeps about 1.3 busy: its Python and tantivy's indexing thread).
WORKERS = 2
# Merges run in processes of their own at a lower CPU priority, as Lucene's
# merge scheduler throttles merges under indexing: a merge rebuilds every
# record of its sources (a day's records are rewritten about twice), so
# under a backlog it took CPU from the builds that make new records
# searchable. On an idle machine they run at full speed, two at once (the
# merges an ingest left behind use both cores); under load they still get
# a share. Nice 19, the lowest: on the bench's 2M-line HTTP ingest (both
# cores 98% busy, side by side) nice 10 -> 19 gave 14.4k -> 15.7k events/s
# to searchable (+9%), the merges still doing two thirds of their work
# meanwhile (10.6 against 16.2 µs of CPU per line): at nice 10 they took the
# builds' and the server's CPU at the wrong moments. SCHED_IDLE gained about
# as much (+9%, +10% in two rounds), but a process cannot leave it (nor
# lower its niceness) without privilege: merges could never catch up at a
# normal priority again.
MERGE_WORKERS = 2
MERGE_NICENESS = 19
# How long an indexer may take over a build before it is built here
# instead: a hung indexer (a node not yet declared dead) must not stall
# the lake's freshness. A build here takes ~130 us per record, so this
# leaves an indexer more than ten times that, and a minute at least.
INDEXER_SECONDS_MIN = 60.0
INDEXER_SECONDS_PER_RECORD = 0.002
# New splits of fewer records than this are written without a compression
# dictionary for their records (recordstore.py). Training one costs ~30 ms
# of CPU whatever the split's size, a fifth of building a split of 1,000
# records (172 against 143 us per record without it; 4,000: 128 against
# 123), and such a split is merged soon: the merge, whose split stays,
# trains one. Its records take ~0.68x their raw bytes meanwhile, not ~0.37x.
DICTIONARY_RECORDS = 8000


def _records(payload: Iterable[tuple[int, bytes]]) -> Iterator[StoredRecord]:
    # Parsed one at a time as the split is written: only documents are held.
    for docid, body in payload:
        yield StoredRecord(docid, orjson.loads(body), body)


def _build(dataset: str, payload: list[tuple[int, bytes]], dest: str, split_id: str) -> SplitMeta:
    try:
        return write_split(_records(payload), DATASETS[dataset], Path(dest), split_id,
                           dictionary=len(payload) >= DICTIONARY_RECORDS)
    finally:
        memory.release()


def _outcome(build: Callable[[], SplitMeta]) -> SplitMeta | BaseException:
    """A build's split, or what it raised (tantivy's panics are BaseExceptions),
    for the flusher to judge (``Building.outcomes``); an interrupt still ends it."""
    try:
        return build()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - judged by the caller
        return e


def _bodies(sources: Iterable[str]) -> list[tuple[int, bytes]]:
    """Every (docId, body) of the splits at ``sources``, in docId order: a merge's input."""
    payload: list[tuple[int, bytes]] = []
    for path in sources:
        payload.extend(Split(Path(path)).bodies())
    payload.sort(key=lambda item: item[0])
    return payload


# In a merge worker: whether its builder told running merges to give up
# (``SplitBuilder.stop_merges``); set by ``_worker_start``. None in-process,
# where merges are small.
_merges_stopped: Callable[[], bool] | None = None


def _merge(dataset: str, sources: list[str], dest: str, split_id: str) -> SplitMeta:
    payload = _bodies(sources)
    try:
        return write_split(_records(payload), DATASETS[dataset], Path(dest), split_id, stop=_merges_stopped)
    finally:
        del payload
        memory.release()


def split_files(dataset: str, payload: list[tuple[int, bytes]], split_id: str, scratch: str | None = None) -> tuple[SplitMeta, dict[str, bytes]]:
    """Build a split in a scratch directory and return its meta and files (an indexer's job)."""
    # The collector is off during the build, as in the worker processes
    # (``_worker_start``), and runs once after it.
    enabled = gc.isenabled()
    gc.disable()
    try:
        with tempfile.TemporaryDirectory(prefix="seclake-index-", dir=scratch) as tmp:
            dest = Path(tmp) / split_id
            meta = workers.job(_build, dataset, payload, str(dest), split_id)
            return meta, {p.name: p.read_bytes() for p in dest.iterdir() if p.is_file()}
    finally:
        if enabled:
            gc.enable()


def install(files: dict[str, bytes], dest: Path) -> Split:
    """Write a split's files built elsewhere at ``dest``, atomically as ``write_split`` does."""
    for name in files:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"split file name {name!r} is not a plain file name")
    staging = dest.with_name(dest.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, data in files.items():
        (staging / name).write_bytes(data)
    seal(staging, dest)
    return Split(dest)


class Indexers(Protocol):
    """Builders on other machines (cluster mode's indexer actors)."""

    def submit(self, dataset: str, payload: list[tuple[int, bytes]], split_id: str) -> Future | None:
        """A future of ``split_files``' answer, or None when no indexer is live."""
        ...


def _worker_start(parent: int, niceness: int = 0, stop=None) -> None:
    workers.start(parent, niceness, "seclake-merge" if stop is not None else "seclake-build")
    if stop is not None:
        global _merges_stopped
        _merges_stopped = lambda: stop.value  # noqa: E731


BUILD, MERGE = "build", "merge"


def _stop_flag():
    """A flag in shared memory the merge workers get at their start. Not an
    Event: its semaphores outlived a server stopped by a signal, and the
    resource tracker wrote a warning about them into the server's log."""
    return workers.CONTEXT.RawValue(ctypes.c_bool, False)


class Building:
    """Splits ``SplitBuilder.start`` set going: ``done`` once every one is
    built (or failed), ``metas`` waits for them, in the order they were given."""

    def __init__(self, futures: list[Future], writers: list[Future], finish: Callable[[], list[SplitMeta]]):
        self.futures = futures
        # The builds writing into the splits' directories here (the workers'; an indexer's files are installed by ``metas``).
        self._writers = writers
        self._finish = finish

    def done(self) -> bool:
        return all(f.done() for f in self.futures)

    def metas(self) -> list[SplitMeta]:
        """The splits' metas; a build whose worker died is built again, an error raises."""
        out = self.outcomes()
        for outcome in out:
            if isinstance(outcome, BaseException):
                raise outcome
        return out  # type: ignore[return-value]

    def outcomes(self) -> list[SplitMeta | BaseException]:
        """Each split's meta, or the error its build ended with (once every build ended)."""
        return self._finish()

    def settle(self) -> None:
        """Wait until no build writes into the splits' directories (after a failure, before removing them)."""
        wait(self._writers)


class SplitBuilder:
    """Builds splits in up to ``workers`` spawned processes (large batches),
    merges in ``merge_workers`` more at a lower priority, or either on
    ``indexers`` when there are some."""

    def __init__(
        self,
        use_worker: bool = True,
        threshold: int = WORKER_THRESHOLD,
        workers: int = WORKERS,
        indexers: Indexers | None = None,
        merge_workers: int = MERGE_WORKERS,
        merge_niceness: int = MERGE_NICENESS,
        build_niceness: int = 0,
    ):
        self.use_worker = use_worker
        self.threshold = threshold
        self.indexers = indexers
        self.merge_workers = merge_workers
        # (processes, niceness) of each pool.
        self._shape = {BUILD: (workers, build_niceness), MERGE: (merge_workers, max(merge_niceness, build_niceness))}
        # Splits built by indexers / built here after an indexer failed (for stats and tests).
        self.remote_built = 0
        self.remote_failed = 0
        # Worker processes that died under a build or merge (killed, out of memory).
        self.workers_lost = 0
        self._pools: dict[str, ProcessPoolExecutor] = {}
        self._lock = threading.Lock()
        # Builds started in the workers and not ended: ``idle``.
        self._running: set[Future] = set()
        # Set by ``stop_merges``; the merge workers look at it as they go.
        self._merge_stop = _stop_flag()

    def _submit(self, fn, *args, kind: str = BUILD) -> tuple[str, ProcessPoolExecutor, Future]:
        with self._lock:
            pool = self._pool(kind)
            try:
                future = pool.submit(workers.job, fn, *args)
            except BrokenProcessPool:
                # A worker died while idle (the OOM killer's pick, an operator's
                # kill): the pool takes no more work, and every build after it
                # failed until a restart. Start new workers.
                self._drop(kind, pool)
                pool = self._pool(kind)
                future = pool.submit(workers.job, fn, *args)
        return kind, pool, future

    def warm(self) -> None:
        """Start every build worker now, not at the first build that needs it
        (a command about to build splits: a worker's start is ~0.1 s)."""
        if self.use_worker:
            for _ in range(self._shape[BUILD][0]):
                self._submit(os.getpid)

    def _pool(self, kind: str) -> ProcessPoolExecutor:
        pool = self._pools.get(kind)
        if pool is None:
            processes, niceness = self._shape[kind]
            pool = self._pools[kind] = ProcessPoolExecutor(
                processes, mp_context=workers.CONTEXT, initializer=_worker_start,
                initargs=(os.getpid(), niceness, self._merge_stop if kind == MERGE else None),
            )
        return pool

    def _drop(self, kind: str, pool: ProcessPoolExecutor) -> None:
        """Forget a pool one of whose workers died (under the lock), once."""
        if self._pools.get(kind) is pool:
            del self._pools[kind]
            self.workers_lost += 1
            log.warning("a %s worker process died (killed, or out of memory?); starting new ones", kind)
            pool.shutdown(wait=False, cancel_futures=True)

    def _result(self, kind: str, pool: ProcessPoolExecutor, future: Future) -> SplitMeta:
        try:
            return future.result()
        except BrokenProcessPool:
            # A worker died under the work: start new ones next time.
            with self._lock:
                self._drop(kind, pool)
            raise

    def _built(self, kind: str, pool: ProcessPoolExecutor, future: Future,
               again: Callable[[], SplitMeta]) -> SplitMeta:
        """The split of a build in a worker; built once more, in new workers, if a worker died under it.

        The records are still pending (and in the log), so building them again
        loses nothing: without it, an import command whose worker was killed
        ended with a traceback though its records were all kept.
        """
        try:
            return self._result(kind, pool, future)
        except BrokenProcessPool:
            pass  # _drop said so
        try:
            return again()
        except BrokenProcessPool:
            raise Unavailable(
                "split building failed twice: its worker process died each time (killed, or out of memory?); "
                "the records stay in the log, for a later flush or the lake's next start"
            ) from None

    def _run(self, fn, *args, kind: str = BUILD) -> SplitMeta:
        return self._result(*self._submit(fn, *args, kind=kind))

    def _remote(self, dataset: str, payload: list[tuple[int, bytes]], split_id: str) -> Future | None:
        if self.indexers is None:
            return None
        try:
            return self.indexers.submit(dataset, payload, split_id)
        except Exception as e:  # noqa: BLE001 - no indexer to take it: build here
            log.warning("indexers unavailable, building %s here: %s", split_id, e)
            return None

    def _installed(self, sent: Future, records: int, dest: Path, fallback) -> SplitMeta:
        """The split an indexer built, sealed at ``dest``; ``fallback()`` if it failed or took too long."""
        try:
            meta, files = sent.result(timeout=max(INDEXER_SECONDS_MIN, records * INDEXER_SECONDS_PER_RECORD))
            install(files, dest)
        except Exception as e:  # noqa: BLE001 - the records are still pending: build them here
            self.remote_failed += 1
            log.warning("indexer failed on %s, building it here: %s", dest.name, e)
            shutil.rmtree(dest, ignore_errors=True)
            return fallback()
        self.remote_built += 1
        return meta

    def build(self, dataset: str, payload: Sequence[tuple[int, bytes]], dest: Path, split_id: str) -> SplitMeta:
        """A split of (docId, record as JSON) items: large ones in a worker process."""
        return self.build_all([(dataset, payload, dest, split_id)])[0]

    def build_text_only(self, dataset: str, payload: Sequence[tuple[int, bytes]], dest: Path,
                        split_id: str) -> SplitMeta:
        """A split whose records are found by their words and docIds only
        (``write_split(text_only=True)``): here, since it is for the few
        records that failed a build alone (``Flusher``)."""
        def records() -> Iterator[StoredRecord]:
            for docid, body in payload:
                try:
                    source = orjson.loads(body)
                except orjson.JSONDecodeError:  # its words are indexed all the same
                    source = {}
                yield StoredRecord(docid, source if isinstance(source, dict) else {}, body)

        return write_split(records(), DATASETS[dataset], dest, split_id, dictionary=False, text_only=True)

    def build_all(self, jobs: Sequence[tuple[str, Sequence[tuple[int, bytes]], Path, str]]) -> list[SplitMeta]:
        """Several splits (dataset, payload, dest, split id) at once, their metas in order."""
        return self.start(jobs).metas()

    def start(self, jobs: Sequence[tuple[str, Sequence[tuple[int, bytes]], Path, str]]) -> Building:
        """Start building several splits (dataset, payload, dest, split id); ``metas()`` of the answer waits for them.

        Large ones go to the indexers or worker processes together, so a
        batch spanning days or datasets builds its splits side by side, and
        the small ones of such a batch go with them: the batch is published
        once its largest is built anyway, and in this process they took the
        GIL from imports and searches (3.6% of the server's CPU in an
        import of 196k demo lines, the records at the ends of days). A
        batch of small ones only is built here, before this returns: a
        round trip to a worker would cost more.
        """
        large = [self.use_worker and len(payload) >= self.threshold for _d, payload, _p, _s in jobs]
        if any(large):
            large = [True] * len(jobs)
        remote = [
            self._remote(dataset, list(payload), split_id) if big else None
            for (dataset, payload, _dest, split_id), big in zip(jobs, large)
        ]
        local = [
            self._submit(_build, dataset, list(payload), str(dest), split_id) if big and sent is None else None
            for (dataset, payload, dest, split_id), big, sent in zip(jobs, large, remote)
        ]
        writers = [here[2] for here in local if here is not None]
        with self._lock:
            self._running.update(writers)
        for future in writers:
            future.add_done_callback(self._ended)
        metas = [
            _outcome(lambda: _build(dataset, list(payload), str(dest), split_id)) if not big else None
            for (dataset, payload, dest, split_id), big in zip(jobs, large)
        ]

        def finish() -> list[SplitMeta | BaseException]:
            out = []
            for (dataset, payload, dest, split_id), meta, sent, here in zip(jobs, metas, remote, local):
                again = lambda: self._run(_build, dataset, list(payload), str(dest), split_id)  # noqa: E731
                if sent is not None:
                    meta = _outcome(lambda: self._installed(sent, len(payload), dest, again))
                elif here is not None:
                    meta = _outcome(lambda: self._built(*here, again=again))
                out.append(meta)
            return out

        return Building([f for f in remote if f is not None] + writers, writers, finish)

    def _ended(self, future: Future) -> None:
        with self._lock:
            self._running.discard(future)

    def idle(self) -> bool:
        """Whether a build worker has nothing to do (always, building in-process)."""
        with self._lock:
            return not self.use_worker or len(self._running) < self._shape[BUILD][0]

    def running(self) -> list[Future]:
        """The builds running in worker processes now (not the indexers')."""
        with self._lock:
            return list(self._running)

    def merge(self, dataset: str, sources: Sequence[Split], dest: Path, split_id: str) -> SplitMeta:
        paths = [str(s.path) for s in sources]
        records = sum(s.meta.num_records for s in sources)
        if not self.use_worker or records < self.threshold:
            return _merge(dataset, paths, str(dest), split_id)
        sent = self._remote(dataset, _bodies(paths), split_id) if self.indexers is not None else None
        if sent is not None:
            return self._installed(
                sent, records, dest, lambda: self._run(_merge, dataset, paths, str(dest), split_id, kind=MERGE)
            )
        return self._run(_merge, dataset, paths, str(dest), split_id, kind=MERGE)

    def stop_merges(self) -> None:
        """Make the merges running in workers give up (``SplitAborted``), and
        any started before ``close``: a stopping lake does not wait for a
        day's merge (seconds to minutes); its sources stay published."""
        self._merge_stop.value = True

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=True)
        # A lake started again merges again.
        self._merge_stop = _stop_flag()
