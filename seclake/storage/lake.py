"""The lake: durable appends, background indexing into splits, merges, retention.

``append`` returns only after the records are fsynced in the write-ahead
log, which numbers them. The lake is made of parts, as Quickwit's indexing
pipeline and janitor are:

- ``wal.py``, the log: appends, sequence numbers, replay after a crash;
- ``flusher.py``: pending records into one split per dataset, UTC day and
  customer partition every commit interval, published with the new log
  checkpoint in one catalog transaction (its own thread);
- ``merger.py``: small splits of a day into larger ones (its own thread;
  ``merge.py`` is the policy);
- ``janitor.py``: publishing (after the upload, with a split store),
  retention, retiring and deleting splits, what a crash left;
- ``shelf.py``: the open splits searches take from ``splits``.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seclake.db.database import Database
from seclake.record.moment import iso
from seclake.storage import memory, partition
from seclake.storage.builder import SplitBuilder
from seclake.storage.catalog import PUBLISHED, Catalog
from seclake.storage.flusher import SPREAD_HOLD_SECONDS, Flusher, Items, Placement
from seclake.storage.janitor import Janitor
from seclake.storage.layout import Layout
from seclake.storage.merger import Merger
from seclake.storage.pathname import UnsafeName
from seclake.storage.shelf import Shelf
from seclake.storage.split import DamagedSplit, Split
from seclake.storage.splitstore import SplitStore
from seclake.storage.wal import WriteAheadLog, encoded

log = logging.getLogger("seclake.lake")


class LakeBusy(RuntimeError):
    """Another process has the lake open for writing."""


# Seconds between looks for splits to merge.
MERGE_INTERVAL = 5.0


class Lake:
    def __init__(
        self,
        data_dir: Path,
        db: Database,
        *,
        commit_interval: float = 1.0,
        merge_quiet: float | None = None,
        store: SplitStore | None = None,
        partitions: int = partition.OFF,
        merge_after: float = 0.0,
        open_splits: bool = True,
        build_niceness: int = 0,
        spread_hold: float = SPREAD_HOLD_SECONDS,
    ):
        """``merge_after``: seconds after ``start`` before the first merge
        round; ``open_splits`` False: splits are opened on first use, not as
        they are published (both for one-shot commands: ``Services``);
        ``build_niceness``: the split builders' CPU priority (setting build_niceness);
        ``spread_hold``: see ``Flusher.held`` (setting spread_hold_seconds)."""
        self.layout = Layout(data_dir)
        # Object storage the splits are uploaded to before they are published
        # (setting split_store_url); None: the shared filesystem only.
        self.store = store
        self.catalog = Catalog(db)
        self.commit_interval = commit_interval
        self.merge_after = merge_after
        self.wal = WriteAheadLog(self.layout.wal)
        self.builder = SplitBuilder(build_niceness=build_niceness)
        self.shelf = Shelf(warm=open_splits)
        self.janitor = Janitor(self.layout, self.catalog, self.shelf, store)
        # Splits a dataset's day is written in, by customer (setting
        # customer_partitions; partition.py); 1: one.
        self.partitions = partitions
        self.flusher = Flusher(self.layout, self.wal, self.shelf, self.builder, self.janitor, partitions,
                               spread_hold=spread_hold)
        self.merger = Merger(self.layout, self.catalog, self.shelf, self.builder, self.janitor, partitions,
                             stopping=lambda: self.flusher.stopping, busy_share=self.flusher.busy_share,
                             settle_ms=None if merge_quiet is None else int(merge_quiet * 1000))
        # The last sequence the log held at start: once it is indexed, every
        # record acknowledged before the restart is searchable again (readiness).
        self.replay_target = 0
        self._threads: list[threading.Thread] = []

    @property
    def wal_holds(self) -> list[Callable[[], int]]:
        """What holds the log besides indexing: each returns the newest
        sequence its reader no longer needs (the detector's saved state,
        idempotency keys not yet in the database)."""
        return self.flusher.holds

    @property
    def merges_done(self) -> int:
        return self.merger.merges_done

    @property
    def workers_lost(self) -> int:
        """Build and merge worker processes that died under their work (see ``SplitBuilder``)."""
        return self.builder.workers_lost

    # -- life cycle -----------------------------------------------------

    def start(self, background: bool = True) -> None:
        memory.prefer_mmap()
        self.layout.ensure()
        self.take_lock()
        # Before any split directory is named from the catalog (issue 39).
        self.catalog.check()
        checkpoint = self.catalog.checkpoint()
        self.flusher.reset(checkpoint)
        self._open_published()
        self.wal.open(checkpoint)
        replayed = list(self.wal.replay(checkpoint))
        self.replay_target = replayed[-1][0] if replayed else checkpoint
        if replayed:
            log.info("replaying %d records from the write-ahead log", len(replayed))
            self.flusher.enqueue([(seq, ds, rec, encoded(rec)) for seq, ds, rec in replayed])
        if background:
            self._threads = [
                threading.Thread(target=self._run, args=(self._index, self.commit_interval), name="seclake-indexer",
                                 daemon=True),
                threading.Thread(target=self._run, args=(self.merge, MERGE_INTERVAL, self.merge_after, False),
                                 name="seclake-merger", daemon=True),
            ]
            for t in self._threads:
                t.start()

    def stop(self) -> None:
        self.flusher.stop()
        self.builder.stop_merges()
        self._join()
        try:
            self.flush()
        except Exception:
            # Nothing is lost: what was not indexed is in the log, replayed at
            # the next start. The lake is let go of all the same.
            log.exception("the last flush failed; %d records stay in the log until the next start",
                          self.flusher.pending())
        self.builder.close()
        self.wal.close()
        self._release_lock()

    def _join(self) -> None:
        for t in self._threads:
            t.join()
        self._threads = []

    def abandon(self) -> None:
        """Let go of the lake at once, indexing nothing more: what a crash leaves."""
        self.flusher.stop()
        self.builder.stop_merges()
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
        opened = []
        for entry in published.values():
            try:
                path = self.layout.split_dir(entry.dataset, entry.split_id, where="opening a split of the catalog")
            except UnsafeName as e:
                # Its name is sound (``Catalog.check``), its directory a link out of the lake: never
                # read through it, left out as any unreadable split (named by searches, kept in the catalog).
                log.error("split %s is left out of searches: %s", entry.split_id, e)
                opened.append(DamagedSplit(self.layout.splits / entry.dataset / entry.split_id, entry, str(e)))
                continue
            if self.store is not None and not path.exists():
                # This node's disk lost it (a new machine): the store has it.
                self.store.download(entry.dataset, entry.split_id, path)
            opened.append(self._opened_or_damaged(path, entry))
        self.shelf.put(opened)
        self.janitor.leftovers(set(published))

    def _opened_or_damaged(self, path: Path, entry: Any) -> Split:
        """The split at ``path``, opened if the shelf is warm; a ``DamagedSplit`` if it cannot be read.

        One unreadable split used to stop the lake from starting at all (a
        traceback, and no search of any day).
        """
        try:
            split = Split(path)
            return split.open() if self.shelf.warm else split
        except Exception as e:  # noqa: BLE001 - whatever the damage, the rest of the lake serves
            reason = f"{type(e).__name__}: {e}"[:300]
            log.error("split %s (%s, %d records, %s to %s) cannot be read and is left out of searches, which "
                      "name it as failed, and out of merges: %s; restore its directory %s (from a backup) "
                      "and restart", entry.split_id, entry.dataset, entry.num_records,
                      iso(entry.time_min), iso(entry.time_max), reason, path)
            return DamagedSplit(path, entry, reason)

    def damaged(self) -> list[DamagedSplit]:
        """Published splits this node could not read at start (``DamagedSplit``)."""
        return self.shelf.damaged()

    # -- writing --------------------------------------------------------

    def append(self, items: Items, key: dict[str, Any] | None = None,
               derive: Callable[[int], Items] | None = None, bodies: Sequence[bytes] | None = None,
               placed: Placement | None = None) -> tuple[int, int]:
        """Durably append (dataset, record) items; return the first and last docId written.

        ``key``: the batch's idempotency key entry, logged in the same write (``storage/wal.py``).
        ``derive(first)``: more items, made once the log has numbered the
        first record ``first``, appended after them in the same write.
        ``bodies``: the items' records as JSON already (``wal.encoded``), from a parse worker.
        ``placed``: their days and partitions, from the same worker (``Flusher.append``); a
        record may then be None.
        """
        return self.flusher.append(items, key=key, derive=derive, bodies=bodies, placed=placed)

    def replay_left(self) -> int:
        """Records of the log replayed at start that are not searchable yet."""
        return max(0, self.replay_target - self.flusher.indexed_seq)

    def wait_indexed(self, seq: int, timeout: float = 30.0) -> bool:
        return self.flusher.wait_indexed(seq, timeout)

    def _run(self, work, interval: float, delay: float = 0.0, woken: bool = True) -> None:
        """Run ``work`` every ``interval`` seconds, the first time after ``delay``.
        ``woken``: an append starts it at once as well (the indexer); a merge
        round, which reads the whole catalog, waits its interval out (an
        ingest appends several times a second)."""
        cond = self.flusher.cond
        not_before = time.monotonic() + delay
        while True:
            with cond:
                if self.flusher.stopping:
                    return
                if woken:
                    cond.wait(interval)
                # A stop wakes every thread waiting on the condition.
                while not self.flusher.stopping and (left := not_before - time.monotonic()) > 0:
                    cond.wait(left)
                if self.flusher.stopping:
                    return
            try:
                work()
            except Exception:
                log.exception("%s failed; will retry", work.__name__)
                time.sleep(interval)
            if not woken:
                not_before = time.monotonic() + interval

    def flush(self) -> int:
        """Index everything pending now; return the number of records indexed."""
        return self.flusher.flush()

    def _index(self) -> int:
        """The indexer thread's flush: a batch spread over many days may wait for more (``Flusher.held``)."""
        return self.flusher.flush(hold=True)

    # -- merging and retention -----------------------------------------

    def merge(self) -> int:
        return self.merger.merge()

    def retention(self, max_age_days: int, now_ms: int | None = None) -> int:
        """Delete whole splits whose newest record is older than ``max_age_days``."""
        with self.merger.lock:  # a merge and retention exclude each other
            return self.janitor.expire(max_age_days, now_ms)

    def reap(self, now: float | None = None) -> int:
        """Delete the retired splits whose grace period is over."""
        return self.janitor.reap(now)

    # -- reading --------------------------------------------------------

    def splits(self, dataset: str, time_from: int | None = None, time_to: int | None = None) -> list[Split]:
        """The open splits of a dataset that overlap [time_from, time_to]."""
        return self.shelf.overlapping(dataset, time_from, time_to)

    def is_empty(self) -> bool:
        """True when nothing was ever accepted into this lake."""
        return self.catalog.checkpoint() == 0 and not self.catalog.entries(PUBLISHED) and self.wal.next_seq <= 1

    def time_bounds(self, dataset: str) -> tuple[int, int] | None:
        """The oldest and newest record time of a dataset, or None when it is empty."""
        metas = [s.meta for s in self.shelf.all() if s.meta.dataset == dataset]
        if not metas:
            return None
        return min(m.time_min for m in metas), max(m.time_max for m in metas)

    def stats(self) -> dict[str, Any]:
        by_ds: dict[str, dict[str, int]] = defaultdict(lambda: {"splits": 0, "records": 0, "bytes": 0})
        for s in self.shelf.all():
            d = by_ds[s.meta.dataset]
            d["splits"] += 1
            d["records"] += s.meta.num_records
            d["bytes"] += s.meta.size_bytes
        return {"datasets": dict(by_ds), "pending": self.flusher.pending(), "indexed_seq": self.flusher.indexed_seq,
                "busy_share": self.flusher.busy_share(), "merges_waiting": self.merger.busy}
