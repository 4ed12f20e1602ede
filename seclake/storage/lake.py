"""The lake: durable appends, background indexing into splits, merges, retention.

``append`` returns only after the records are fsynced in the write-ahead
log. An indexer thread turns what was appended into one split per dataset,
UTC day and customer partition (``partition.py``) every commit interval,
publishes them with the new log checkpoint in one catalog transaction, then
merges small splits. Searches take the open splits overlapping their time
range from ``splits``.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seclake.db.database import Database
from seclake.record.dataset import DATASETS
from seclake.storage.catalog import MARKED, PUBLISHED, STAGED, Catalog
from seclake.storage import memory
from seclake.storage.layout import Layout
from seclake.storage.builder import SplitBuilder
from seclake.storage.merge import DAY_MS, day_of, merge_candidates
from seclake.storage import partition
from seclake.storage.split import Split, SplitMeta, time_of
from seclake.storage.splitstore import SplitStore, SplitStoreError
from seclake.storage.wal import WriteAheadLog, encoded

log = logging.getLogger("seclake.lake")


class LakeBusy(RuntimeError):
    """Another process has the lake open for writing."""

# Records waiting for the indexer; appends wait when this many, or this many
# bytes of them, are pending (the server's memory stays bounded under load).
MAX_PENDING = 100_000
MAX_PENDING_BYTES = 64 * 1024 * 1024
# Largest split written in one go from pending records.
MAX_BATCH = 50_000
# Seconds between looks for splits to merge.
MERGE_INTERVAL = 5.0
# Seconds a merged or expired split's files outlive its retirement.
RETIRE_GRACE = 120.0


class Lake:
    def __init__(
        self,
        data_dir: Path,
        db: Database,
        *,
        commit_interval: float = 1.0,
        store: SplitStore | None = None,
        partitions: int = partition.OFF,
    ):
        self.layout = Layout(data_dir)
        # Splits a dataset's day is written in, by customer (setting
        # customer_partitions; partition.py); 1: one.
        self.partitions = partitions
        # Object storage the splits are uploaded to before they are published
        # (setting split_store_url); None: the shared filesystem only.
        self.store = store
        self.catalog = Catalog(db)
        self.commit_interval = commit_interval
        self.wal = WriteAheadLog(self.layout.wal)
        self.builder = SplitBuilder()
        self.retire_grace = RETIRE_GRACE
        self._retiring: list[tuple[float, str, str]] = []
        self._splits: dict[str, Split] = {}
        self._splits_lock = threading.Lock()
        # (docId, dataset, UTC day, record as JSON, partition): compact until indexed.
        self._pending: list[tuple[int, str, int, bytes, str]] = []
        self._pending_bytes = 0
        self._cond = threading.Condition()
        self._indexed_seq = 0
        # The last sequence the log held at start: once it is indexed, every
        # record acknowledged before the restart is searchable again (readiness).
        self.replay_target = 0
        self.merges_done = 0
        self._stop = False
        self._threads: list[threading.Thread] = []
        # Flushing and merging run in their own threads, so a long merge never
        # delays freshness; merge and retention exclude each other.
        self._index_lock = threading.Lock()
        self._merge_lock = threading.Lock()
        # Another reader of the log (the detector) may need entries kept
        # past indexing: it returns the newest sequence it no longer needs.
        self.wal_floor: Callable[[], int] | None = None
        # More such readers (the idempotency keys not yet in the database).
        self.wal_holds: list[Callable[[], int]] = []

    # -- life cycle -----------------------------------------------------

    def start(self, background: bool = True) -> None:
        memory.prefer_mmap()
        self.layout.ensure()
        self.take_lock()
        self._stop = False
        self._pending = []
        self._pending_bytes = 0
        checkpoint = self.catalog.checkpoint()
        self._indexed_seq = checkpoint
        self._open_published()
        self.wal.open(checkpoint)
        replayed = list(self.wal.replay(checkpoint))
        self.replay_target = replayed[-1][0] if replayed else checkpoint
        if replayed:
            log.info("replaying %d records from the write-ahead log", len(replayed))
            self._enqueue([(seq, ds, rec, encoded(rec)) for seq, ds, rec in replayed])
        if background:
            self._threads = [
                threading.Thread(target=self._run, args=(self.flush, self.commit_interval), name="seclake-indexer", daemon=True),
                threading.Thread(target=self._run, args=(self.merge, MERGE_INTERVAL), name="seclake-merger", daemon=True),
            ]
            for t in self._threads:
                t.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._join()
        self.flush()
        self.builder.close()
        self.wal.close()
        self._release_lock()

    def _join(self) -> None:
        for t in self._threads:
            t.join()
        self._threads = []

    def abandon(self) -> None:
        """Let go of the lake at once, indexing nothing more: what a crash leaves."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._join()
        self.builder.close()
        self.wal.close()
        self._release_lock()

    def take_lock(self, wait: bool = False) -> None:
        """Become the lake's one writer; with ``wait``, block until the holder is gone.

        One process writes a lake: a second server or a CLI import on the
        same data dir would interleave log sequences. A standby ingest node
        waits here (the lock is released when its holder's process ends,
        however it ends), then starts as the new writer.
        """
        if getattr(self, "_lock_file", None) is not None:
            return
        self.layout.root.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.layout.root / "LOCK", "a+")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.seek(0)
            holder = self._lock_file.read().strip() or "another process"
            if wait:
                log.warning("standby: the lake in %s is written by %s; waiting to take over", self.layout.root, holder)
                fcntl.flock(self._lock_file, fcntl.LOCK_EX)
                log.warning("standby: the lake's writer is gone; taking over")
                self._write_holder()
                return
            self._lock_file.close()
            self._lock_file = None
            raise LakeBusy(
                f"the lake in {self.layout.root} is in use by {holder}; stop it first, "
                "or send the data to the running server (POST /api/import/<vendor>)"
            ) from None
        self._write_holder()

    def _write_holder(self) -> None:
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(f"process {os.getpid()}\n")
        self._lock_file.flush()

    def _release_lock(self) -> None:
        lock = getattr(self, "_lock_file", None)
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
            self._lock_file = None

    def _open_published(self) -> None:
        published = {e.split_id: e for e in self.catalog.entries(PUBLISHED)}
        for entry in published.values():
            path = self.layout.split_dir(entry.dataset, entry.split_id)
            if self.store is not None and not path.exists():
                # This node's disk lost it (a new machine): the store has it.
                self.store.download(entry.dataset, entry.split_id, path)
            self._splits[entry.split_id] = Split(path)
        # Staged: a crash mid-upload; marked: retired before a restart.
        gone = self.catalog.entries(STAGED) + self.catalog.entries(MARKED)
        self._delete([(e.dataset, e.split_id) for e in gone])
        # Anything on disk the catalog does not publish is a leftover of a crash.
        for dataset_dir in self.layout.splits.iterdir() if self.layout.splits.exists() else []:
            for d in dataset_dir.iterdir():
                if d.name not in published:
                    log.info("removing unpublished split directory %s", d)
                    shutil.rmtree(d, ignore_errors=True)

    # -- writing --------------------------------------------------------

    def append(self, items: Sequence[tuple[str, dict[str, Any]]], key: dict[str, Any] | None = None) -> tuple[int, int]:
        """Durably append (dataset, record) items; return their first and last docId.

        ``key``: the batch's idempotency key entry, logged in the same write (``storage/wal.py``).
        """
        for dataset, _ in items:
            if dataset not in DATASETS:
                raise ValueError(f"unknown dataset {dataset!r}")
        with self._cond:
            # Back-pressure: imports wait while indexing is far behind.
            while (len(self._pending) > MAX_PENDING or self._pending_bytes > MAX_PENDING_BYTES) and not self._stop:
                self._cond.wait(0.5)
        return self.wal.append(items, on_assigned=self._enqueue, key=key)

    def _enqueue(self, assigned) -> None:
        rows = [
            (seq, ds, day_of(time_of(rec, DATASETS[ds])), body, partition.key_of(rec)) for seq, ds, rec, body in assigned
        ]
        with self._cond:
            self._pending.extend(rows)
            self._pending_bytes += sum(len(r[3]) for r in rows)
            self._cond.notify_all()

    def replay_left(self) -> int:
        """Records of the log replayed at start that are not searchable yet."""
        with self._cond:
            return max(0, self.replay_target - self._indexed_seq)

    def wait_indexed(self, seq: int, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._indexed_seq < seq:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def _run(self, work, interval: float) -> None:
        while True:
            with self._cond:
                if self._stop:
                    return
                self._cond.wait(interval)
                if self._stop:
                    return
            try:
                work()
            except Exception:
                log.exception("%s failed; will retry", work.__name__)
                time.sleep(interval)

    def flush(self) -> int:
        """Index everything pending now; return the number of records indexed."""
        with self._index_lock:
            done = 0
            while True:
                with self._cond:
                    batch = self._pending[:MAX_BATCH]
                if not batch:
                    return done
                self._index_batch(batch)
                with self._cond:
                    del self._pending[: len(batch)]
                    self._pending_bytes -= sum(len(r[3]) for r in batch)
                    self._indexed_seq = max(self._indexed_seq, batch[-1][0])
                    self._cond.notify_all()
                done += len(batch)
                floor = self._indexed_seq if self.wal_floor is None else min(self._indexed_seq, self.wal_floor())
                self.wal.trim(min([floor] + [hold() for hold in self.wal_holds]))

    def _index_batch(self, batch: list[tuple[int, str, int, bytes, str]]) -> None:
        days: dict[tuple[str, int], list[tuple[int, bytes, str]]] = defaultdict(list)
        for seq, dataset, day, body, key in batch:
            days[(dataset, day)].append((seq, body, key))
        groups: dict[tuple[str, int, str], list[tuple[int, bytes]]] = defaultdict(list)
        for (dataset, day), rows in days.items():
            for (seq, body, _), key in zip(rows, partition.capped([r[2] for r in rows], self.partitions)):
                groups[(dataset, day, key)].append((seq, body))
        jobs = []
        for (dataset, day, _key), payload in sorted(groups.items()):
            split_id = self._new_split_id(dataset, day * DAY_MS)
            path = self.layout.split_dir(dataset, split_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            jobs.append((dataset, payload, path, split_id))
        metas = self.builder.build_all(jobs)
        opened = [Split(path) for _dataset, _payload, path, _split_id in jobs]
        self._publish(metas, checkpoint=batch[-1][0])
        with self._splits_lock:
            for s in opened:
                self._splits[s.meta.split_id] = s

    def _publish(self, metas: list[SplitMeta], **publish: Any) -> None:
        """Publish new splits; with a split store, only once every file of each is uploaded.

        The rows are staged first, so a crash mid-upload is cleaned up at
        the next start. A failed upload publishes nothing and moves no
        checkpoint: the records stay pending (and in the log), and the next
        flush builds and uploads them again.
        """
        if self.store is None:
            self.catalog.publish(metas, **publish)
            return
        self.catalog.stage(metas)
        try:
            for m in metas:
                self.store.upload(m.dataset, m.split_id, self.layout.split_dir(m.dataset, m.split_id))
        except Exception:
            self._delete([(m.dataset, m.split_id) for m in metas])
            raise
        self.catalog.publish(metas, staged=True, **publish)

    @staticmethod
    def _new_split_id(dataset: str, time_ms: int) -> str:
        day = day_of(time_ms)
        stamp = time.strftime("%Y%m%d", time.gmtime(day * DAY_MS / 1000))
        return f"{dataset}-{stamp}-{uuid.uuid4().hex[:12]}"

    # -- merging and retention -----------------------------------------

    def merge(self) -> int:
        merged = 0
        self.reap()
        with self._merge_lock:
            now_ms = int(time.time() * 1000)
            for group in merge_candidates(self.catalog.entries(PUBLISHED), now_ms=now_ms, partitions=self.partitions):
                with self._splits_lock:
                    sources = [self._splits[e.split_id] for e in group if e.split_id in self._splits]
                if len(sources) < 2:
                    continue
                dataset = group[0].dataset
                split_id = self._new_split_id(dataset, sources[0].meta.time_min)
                path = self.layout.split_dir(dataset, split_id)
                meta = self.builder.merge(dataset, sources, path, split_id)
                new = Split(path)
                self._publish([meta], replaces=[s.meta.split_id for s in sources])
                with self._splits_lock:
                    self._splits[split_id] = new
                    for s in sources:
                        self._splits.pop(s.meta.split_id, None)
                self._retire([(dataset, s.meta.split_id) for s in sources])
                merged += 1
        self.merges_done += merged
        return merged

    def retention(self, max_age_days: int, now_ms: int | None = None) -> int:
        """Delete whole splits whose newest record is older than ``max_age_days``."""
        if max_age_days <= 0:
            return 0
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        cutoff = now_ms - max_age_days * DAY_MS
        with self._merge_lock:
            old = [e for e in self.catalog.entries(PUBLISHED) if e.time_max < cutoff]
            if not old:
                return 0
            self.catalog.mark([e.split_id for e in old])
            with self._splits_lock:
                for e in old:
                    self._splits.pop(e.split_id, None)
            self._retire([(e.dataset, e.split_id) for e in old])
            return len(old)

    def _retire(self, splits: Sequence[tuple[str, str]]) -> None:
        """Delete marked splits' files after a grace period.

        Searches in this process keep a split they already opened; searchers
        in other processes (cluster mode) may be about to open one the
        catalog listed a moment ago, so the files stay for RETIRE_GRACE
        seconds. The catalog rows stay marked until then.
        """
        due = time.monotonic() + self.retire_grace
        with self._splits_lock:
            self._retiring.extend((due, dataset, split_id) for dataset, split_id in splits)
        self.reap()

    def reap(self, now: float | None = None) -> int:
        """Delete the retired splits whose grace period is over."""
        now = time.monotonic() if now is None else now
        with self._splits_lock:
            due = [(d, sid) for t, d, sid in self._retiring if t <= now]
            self._retiring = [r for r in self._retiring if r[0] > now]
        if due:
            self._delete(due)
        return len(due)

    def _delete(self, splits: Sequence[tuple[str, str]]) -> None:
        # Searches already running keep their open split (its files stay
        # mapped until closed); new searches no longer see it.
        gone = []
        for dataset, split_id in splits:
            shutil.rmtree(self.layout.split_dir(dataset, split_id), ignore_errors=True)
            if self.store is not None:
                # The catalog row goes only once the objects are gone, so a
                # store that fails now is asked again (later, or at start).
                try:
                    self.store.delete(dataset, split_id)
                except SplitStoreError as e:
                    log.warning("%s; will retry", e)
                    with self._splits_lock:
                        self._retiring.append((time.monotonic() + self.retire_grace, dataset, split_id))
                    continue
            gone.append(split_id)
        self.catalog.forget(gone)

    # -- reading --------------------------------------------------------

    def splits(self, dataset: str, time_from: int | None = None, time_to: int | None = None) -> list[Split]:
        """The open splits of a dataset that overlap [time_from, time_to]."""
        with self._splits_lock:
            out = [
                s
                for s in self._splits.values()
                if s.meta.dataset == dataset
                and (time_from is None or s.meta.time_max >= time_from)
                and (time_to is None or s.meta.time_min <= time_to)
            ]
        out.sort(key=lambda s: (s.meta.time_min, s.meta.split_id))
        return out

    def is_empty(self) -> bool:
        """True when nothing was ever accepted into this lake."""
        return self.catalog.checkpoint() == 0 and not self.catalog.entries(PUBLISHED) and self.wal.next_seq <= 1

    def time_bounds(self, dataset: str) -> tuple[int, int] | None:
        """The oldest and newest record time of a dataset, or None when it is empty."""
        with self._splits_lock:
            metas = [s.meta for s in self._splits.values() if s.meta.dataset == dataset]
        if not metas:
            return None
        return min(m.time_min for m in metas), max(m.time_max for m in metas)

    def stats(self) -> dict[str, Any]:
        with self._splits_lock:
            splits = list(self._splits.values())
        by_ds: dict[str, dict[str, int]] = defaultdict(lambda: {"splits": 0, "records": 0, "bytes": 0})
        for s in splits:
            d = by_ds[s.meta.dataset]
            d["splits"] += 1
            d["records"] += s.meta.num_records
            d["bytes"] += s.meta.size_bytes
        with self._cond:
            pending = len(self._pending)
        return {"datasets": dict(by_ds), "pending": pending, "indexed_seq": self._indexed_seq}
