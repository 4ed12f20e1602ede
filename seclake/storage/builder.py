"""Building splits in a worker process, so indexing runs on another core.

Turning records into a split is mostly Python work (flattening, keyword
normalization) that holds the GIL; in the server's process it competes with
parsing, rule evaluation and searches. Large batches and merges are built in
one spawned worker process instead; small batches (a few records every
commit interval) stay in-process, where a round trip would cost more.
"""

from __future__ import annotations

import gc
import multiprocessing
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import orjson

from seclake.record.dataset import DATASETS
from seclake.storage import memory
from seclake.storage.split import Split, SplitMeta, StoredRecord, write_split

# Batches smaller than this are written in-process: a round trip to an idle
# worker costs milliseconds, while building in the server holds its GIL
# against imports and searches. Measured over HTTP (98k demo lines over 15
# days, a loaded machine): the faster documents alone gave ~1.05x records/s
# to searchable; with 500 instead of 5000 and two workers, 1.5-1.6x.
WORKER_THRESHOLD = 500
# Worker processes: two keep both cores busy while a backlog is indexed
# (a build keeps about 1.3 busy: its Python and tantivy's indexing thread),
# and a long merge no longer holds up the next batch.
WORKERS = 2


def _records(payload: Iterable[tuple[int, bytes]]) -> Iterator[StoredRecord]:
    # Parsed one at a time as the split is written: only documents are held.
    for docid, body in payload:
        yield StoredRecord(docid, orjson.loads(body), body)


def _build(dataset: str, payload: list[tuple[int, bytes]], dest: str, split_id: str) -> SplitMeta:
    try:
        return write_split(_records(payload), DATASETS[dataset], Path(dest), split_id)
    finally:
        memory.release()


def _merge(dataset: str, sources: list[str], dest: str, split_id: str) -> SplitMeta:
    payload: list[tuple[int, bytes]] = []
    for path in sources:
        payload.extend(Split(Path(path)).bodies())
    payload.sort(key=lambda item: item[0])
    try:
        return write_split(_records(payload), DATASETS[dataset], Path(dest), split_id)
    finally:
        del payload
        memory.release()


def _worker_start() -> None:
    # A build makes millions of short-lived containers and no reference
    # cycles; the cyclic collector kept walking the split's documents and
    # took a third of the build's time (measured: 60 -> 37 µs per record).
    # The worker runs builds only, so it collects once after each one.
    gc.disable()


def _job(fn, *args) -> SplitMeta:
    try:
        return fn(*args)
    finally:
        gc.collect()


class SplitBuilder:
    """Builds splits in up to ``workers`` spawned processes (large batches and merges)."""

    def __init__(self, use_worker: bool = True, threshold: int = WORKER_THRESHOLD, workers: int = WORKERS):
        self.use_worker = use_worker
        self.threshold = threshold
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _submit(self, fn, *args) -> tuple[ProcessPoolExecutor, Future]:
        with self._lock:
            if self._pool is None:
                # spawn, not fork: the server process has threads (tantivy's too).
                self._pool = ProcessPoolExecutor(
                    self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start
                )
            pool = self._pool
        return pool, pool.submit(_job, fn, *args)

    def _result(self, pool: ProcessPoolExecutor, future: Future) -> SplitMeta:
        try:
            return future.result()
        except BrokenProcessPool:
            # A worker died (killed, out of memory): start new ones next time.
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            raise

    def _run(self, fn, *args) -> SplitMeta:
        return self._result(*self._submit(fn, *args))

    def build(self, dataset: str, payload: Sequence[tuple[int, bytes]], dest: Path, split_id: str) -> SplitMeta:
        """A split of (docId, record as JSON) items: large ones in a worker process."""
        return self.build_all([(dataset, payload, dest, split_id)])[0]

    def build_all(self, jobs: Sequence[tuple[str, Sequence[tuple[int, bytes]], Path, str]]) -> list[SplitMeta]:
        """Several splits (dataset, payload, dest, split id) at once, their metas in order.

        Large ones go to the worker processes together, so a batch spanning
        days or datasets builds its splits side by side; small ones are
        built here meanwhile.
        """
        pending = [
            self._submit(_build, dataset, list(payload), str(dest), split_id)
            if self.use_worker and len(payload) >= self.threshold else None
            for dataset, payload, dest, split_id in jobs
        ]
        metas = [
            _build(dataset, list(payload), str(dest), split_id) if sent is None else None
            for (dataset, payload, dest, split_id), sent in zip(jobs, pending)
        ]
        return [meta if sent is None else self._result(*sent) for meta, sent in zip(metas, pending)]

    def merge(self, dataset: str, sources: Sequence[Split], dest: Path, split_id: str) -> SplitMeta:
        if not self.use_worker or sum(s.meta.num_records for s in sources) < self.threshold:
            return _merge(dataset, [str(s.path) for s in sources], str(dest), split_id)
        return self._run(_merge, dataset, [str(s.path) for s in sources], str(dest), split_id)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
