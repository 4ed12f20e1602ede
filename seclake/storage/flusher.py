"""The flusher: appended records into searchable splits, with the log checkpoint.

Records are fsynced in the write-ahead log (``wal.py``) before ``append``
returns; the log numbers them (their docIds). They wait here, compact
(docId, dataset, UTC day, record as JSON, partition), until the indexer
thread flushes them: one split per dataset, UTC day and customer partition
(``partition.py``), built by the builder, published with the new
checkpoint in one catalog transaction. Then the log is trimmed up to what
every reader of it no longer needs (``holds``).

A split whose build fails never holds back the records after it (issue 39:
one value tantivy refused stopped a deployment's indexing): its records are
built again in halves, down to the records that fail alone, which are
indexed by their words only (``write_split(text_only=True)``); their bodies
are kept whole, and they are logged and counted. A failure of the machine,
not of records (no space, no memory, build workers lost twice), is not
isolated: the records stay pending, as in the log, and the flush is tried
again.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path
from typing import Any

from seclake.errors import Unavailable
from seclake.record.dataset import DATASETS, time_of
from seclake.storage import partition
from seclake.storage.builder import Building, SplitBuilder
from seclake.storage.janitor import Janitor
from seclake.storage.layout import Layout
from seclake.storage.merge import DAY_MS, day_of
from seclake.storage.shelf import Shelf
from seclake.storage.split import Split, SplitMeta
from seclake.storage.wal import WriteAheadLog

log = logging.getLogger("seclake.lake")

# Records waiting for the indexer; appends wait when this many, or this many
# bytes of them, are pending (the server's memory stays bounded under load).
MAX_PENDING = 100_000
MAX_PENDING_BYTES = 64 * 1024 * 1024
# Largest split written in one go from pending records.
MAX_BATCH = 50_000
# Batches of pending records being built at once (``Flusher.flush``).
MAX_FLIGHTS = 2
# Records a batch started beside another waits for: a smaller split costs
# more per record to build (its fixed costs) and makes more merges.
MIN_SIDE_BATCH = 4000
# A batch spread over many days (an import of last month's logs) makes a split per dataset and
# day at every flush: two minutes of a 30-day import took a lake from ~90 published splits to
# 380-450, which searched 2.2x slower at the median until merged (docs/operations.md, "Where
# searches wait under an import"). The indexer holds such a batch (``Flusher.held``) until its
# splits would average ``SPREAD_SPLIT_RECORDS``, it is a full batch, or its oldest record has
# waited ``SPREAD_HOLD_SECONDS`` (setting spread_hold_seconds): fewer, larger splits. A batch of few days (a live stream) or
# of few records (a test's import, a quiet source) goes at once, as an explicit flush does, and so
# does a spread batch once nothing came for ``SPREAD_QUIET_SECONDS``: the import ended, and waiting
# longer would only delay its last records' searchability.
SPREAD_GROUPS = 8  # (dataset, UTC day) pairs
SPREAD_MIN_RECORDS = 2_000
SPREAD_SPLIT_RECORDS = 2_000
SPREAD_HOLD_SECONDS = 5.0
SPREAD_QUIET_SECONDS = 1.0
# Seconds over which ``busy_share`` is taken.
BUSY_WINDOW = 10.0
# How often a flush waiting for its builds looks whether a worker is free
# for the records that came meanwhile, at most.
POLL_SECONDS = 0.05

Items = Sequence[tuple[str, dict[str, Any]]]
# (UTC day, partition key or None for all MIXED) of records a parse worker placed (``parsepool.Placed``).
Placement = tuple[Sequence[int], Sequence[str] | None]
# A split to build: (dataset, UTC day, [(docId, body)], its directory, its id).
Job = tuple[str, int, list[tuple[int, bytes]], Path, str]
# Failed builds a failed split's records may take to single out the records
# that fail alone (each takes ~log2(records) of them); past it, the parts
# still failing are indexed by their words whole.
ISOLATING_BUILDS = 48
# Failures of the machine, not of the records: isolating would only turn
# every record text-only; the flush is tried again instead.
_MACHINE = (OSError, MemoryError, Unavailable)


class Flusher:
    def __init__(self, layout: Layout, wal: WriteAheadLog, shelf: Shelf, builder: SplitBuilder, janitor: Janitor,
                 partitions: int, spread_hold: float = SPREAD_HOLD_SECONDS):
        self.layout = layout
        self.wal = wal
        self.shelf = shelf
        self.builder = builder
        self.janitor = janitor
        self.partitions = partitions
        self.spread_hold = spread_hold
        self._pending: list[tuple[int, str, int, bytes, str]] = []
        self._pending_bytes = 0
        # (last log sequence of an enqueue, when it came): the age of the oldest pending record (``held``).
        self._arrivals: deque[tuple[int, float]] = deque()
        # Since start (``/metrics``): times the indexer held a spread batch for more records.
        self.spread_holds = 0
        self._spread_seen: tuple[tuple[int, int] | None, bool] = (None, False)
        self.cond = threading.Condition()
        self.stopping = False
        self.indexed_seq = 0
        # Held while a flush indexes (a backup holds it to copy a still state).
        self.lock = threading.Lock()
        # Readers of the log besides the indexer (the detector's saved state,
        # idempotency keys not yet in the database): each returns the newest
        # sequence it no longer needs, and the log keeps everything after.
        self.holds: list[Callable[[], int]] = []
        # The indexer's building periods (start, end) of the last
        # ``BUSY_WINDOW`` seconds, and the start of the one under way (``busy_share``).
        self._busy: deque[tuple[float, float]] = deque()
        self._building_since: float | None = None
        # Since start (``/metrics``): split builds that failed, and records the
        # index could not take whole (indexed without their columns, or by their words only).
        self.builds_failed = 0
        self.records_quarantined = 0

    def reset(self, checkpoint: int) -> None:
        with self.cond:
            self.stopping = False
            self._pending = []
            self._pending_bytes = 0
            self._arrivals.clear()
            self.indexed_seq = checkpoint

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    def append(self, items: Items, key: dict[str, Any] | None = None,
               derive: Callable[[int], Items] | None = None, bodies: Sequence[bytes] | None = None,
               placed: Placement | None = None) -> tuple[int, int]:
        """``placed``: (days, partition keys or None) of the first items, as a parse worker found them;
        their records may then be None (the log takes ``bodies`` as they are)."""
        for dataset, _ in items:
            if dataset not in DATASETS:
                raise ValueError(f"unknown dataset {dataset!r}")
        with self.cond:
            # Back-pressure: imports wait while indexing is far behind.
            while (len(self._pending) > MAX_PENDING or self._pending_bytes > MAX_PENDING_BYTES) and not self.stopping:
                self.cond.wait(0.5)
        enqueue = self.enqueue if placed is None else lambda assigned: self.enqueue(assigned, placed)
        return self.wal.append(items, on_assigned=enqueue, key=key, derive=derive, bodies=bodies)

    def enqueue(self, assigned, placed: Placement | None = None) -> None:
        """Logged (seq, dataset, record, body) items, to be indexed; ``placed``: see ``append``."""
        key_of = partition.keyer(self.partitions)
        given = 0
        rows = []
        if placed is not None:
            days, keys = placed
            given = len(days)
            rows = [(seq, ds, days[i], body, keys[i] if keys is not None else partition.MIXED)
                    for i, (seq, ds, _rec, body) in enumerate(assigned[:given])]
        rows += [
            (seq, ds, day_of(time_of(rec, DATASETS[ds])), body, key_of(rec)) for seq, ds, rec, body in assigned[given:]
        ]
        with self.cond:
            self._pending.extend(rows)
            self._pending_bytes += sum(len(r[3]) for r in rows)
            if rows:
                self._arrivals.append((rows[-1][0], time.monotonic()))
            self.cond.notify_all()

    def pending(self) -> int:
        with self.cond:
            return len(self._pending)

    def busy_share(self) -> float:
        """The share of the last ``BUSY_WINDOW`` seconds the indexer spent
        building (from a flush's first build until it had nothing left): near
        1 when records come about as fast as the builds take them (the merger
        reads it)."""
        now = time.monotonic()
        since = now - BUSY_WINDOW
        with self.cond:
            while self._busy and self._busy[0][1] <= since:
                self._busy.popleft()
            busy = sum(end - max(start, since) for start, end in self._busy)
            if self._building_since is not None:
                busy += now - max(self._building_since, since)
        return min(1.0, busy / BUSY_WINDOW)

    def _built(self) -> None:
        """A flush's building period ends (``busy_share``)."""
        with self.cond:
            if self._building_since is not None:
                self._busy.append((self._building_since, time.monotonic()))
                self._building_since = None

    def wait_indexed(self, seq: int, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.indexed_seq < seq:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def held(self) -> bool:
        """Whether the pending records are a batch spread over many days that waits for more
        (``spread_hold`` seconds at most): the indexer thread's flush asks, an explicit one does not."""
        with self.cond:
            if self.stopping or not self.spread_hold or not self._pending or not self._spread(0):
                return False
            # The first arrival is the oldest pending record's (``_publish`` drops the indexed ones).
            now = time.monotonic()
            if not self._arrivals or now - self._arrivals[0][1] >= self.spread_hold:
                return False
            if now - self._arrivals[-1][1] >= min(SPREAD_QUIET_SECONDS, self.spread_hold):
                return False
            self.spread_holds += 1
            return True

    def _spread(self, start: int) -> bool:
        """Whether the next batch, the pending records from ``start`` (``MAX_BATCH`` at most), is spread
        over ``SPREAD_GROUPS`` dataset days or more, too thin for splits of ``SPREAD_SPLIT_RECORDS``
        (called holding ``cond``)."""
        n = min(len(self._pending) - start, MAX_BATCH)
        if n < SPREAD_MIN_RECORDS or n >= MAX_BATCH:
            return False
        # Asked every poll of a flush waiting for its builds (POLL_SECONDS): counted again only
        # when the pending records changed (a set of up to 50,000 pairs takes a few ms).
        key = (self._pending[start][0], n)
        if self._spread_seen[0] != key:
            groups = len({(row[1], row[2]) for row in self._pending[start : start + n]})
            self._spread_seen = (key, groups >= SPREAD_GROUPS and n < groups * SPREAD_SPLIT_RECORDS)
        return self._spread_seen[1]

    def flush(self, hold: bool = False) -> int:
        """Index everything pending now; return the number of records indexed. With ``hold``
        (the indexer thread), a batch spread over many days may wait for more (``held``).

        Batches of pending records are built side by side, up to
        ``MAX_FLIGHTS`` at once, and published in log order: a worker that
        finishes its part of a batch takes the records that came meanwhile,
        instead of waiting for the batch's largest split (a batch is one
        split per dataset and day, rarely as many of the same size as there
        are workers).
        """
        with self.lock:
            done = 0
            flights: deque[tuple[list[tuple[int, str, int, bytes, str]], list[Job], Building]] = deque()
            try:
                while True:
                    while flights and flights[0][2].done():
                        done += self._publish(flights)
                    # The pending records in flights are the first ones: they leave pending when published.
                    taken = sum(len(batch) for batch, _paths, _building in flights)
                    with self.cond:
                        more = len(self._pending) - taken
                    side = len(flights) < MAX_FLIGHTS and more >= MIN_SIDE_BATCH and self.builder.idle()
                    if side and hold and self.spread_hold:
                        # A side batch of a spread import made a split per day of a few dozen
                        # records each (4,000 over 60 dataset days): it waits for the flight.
                        with self.cond:
                            side = not self._spread(taken)
                    if more and not flights and hold and self.held():
                        return done
                    if more and (not flights or side):
                        with self.cond:
                            batch = self._pending[taken : taken + MAX_BATCH]
                            if self._building_since is None:
                                self._building_since = time.monotonic()
                        flights.append((batch, *self._start(batch)))
                        continue
                    if not flights:
                        if not done and not more:
                            # Nothing to index: what the log's other readers let go of since
                            # the last flush leaves the disk now, not at the next import (a
                            # 60 MB segment the detector held at an import's last flush
                            # stayed until then, and every start read it whole).
                            self.trim()
                        return done
                    running = self.builder.running()
                    if len(flights) < MAX_FLIGHTS and running:
                        # A worker may free up, or enough records come, before
                        # the oldest batch is built: look again then.
                        wait(running, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                        continue
                    done += self._publish(flights)
            except BaseException:
                self._abandon(flights)
                raise
            finally:
                self._built()

    def _start(self, batch: list[tuple[int, str, int, bytes, str]]) -> tuple[list[Job], Building]:
        """Start building the splits of a batch: one per dataset, UTC day and partition."""
        days: dict[tuple[str, int], list[tuple[int, bytes, str]]] = defaultdict(list)
        for seq, dataset, day, body, key in batch:
            days[(dataset, day)].append((seq, body, key))
        groups: dict[tuple[str, int, str], list[tuple[int, bytes]]] = defaultdict(list)
        for (dataset, day), rows in days.items():
            for (seq, body, _), key in zip(rows, partition.capped([r[2] for r in rows], self.partitions)):
                groups[(dataset, day, key)].append((seq, body))
        jobs = [self._job(dataset, day, payload) for (dataset, day, _key), payload in sorted(groups.items())]
        return jobs, self.builder.start([(dataset, payload, path, split_id) for dataset, _day, payload, path, split_id in jobs])

    def _job(self, dataset: str, day: int, payload: list[tuple[int, bytes]]) -> Job:
        split_id = self.layout.new_split_id(dataset, day * DAY_MS)
        path = self.layout.split_dir(dataset, split_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        return dataset, day, payload, path, split_id

    def _publish(self, flights: deque) -> int:
        """Publish the oldest batch in flight, once built, with the log checkpoint after it; its record count."""
        batch, jobs, building = flights[0]
        built: list[tuple[SplitMeta, Path]] = []
        try:
            for job, outcome in zip(jobs, building.outcomes()):
                if isinstance(outcome, BaseException):
                    built += self._salvage(job, outcome)
                else:
                    built.append((outcome, job[3]))
        except BaseException:
            for _meta, path in built:  # the splits of salvaged parts (flights' own are removed by _abandon)
                shutil.rmtree(path, ignore_errors=True)
            raise
        metas = [meta for meta, _path in built]
        self._report(metas)
        opened = self.shelf.ready(Split(path) for _meta, path in built)
        # Handed to the catalog: from here a failure leaves its directories
        # for the janitor to judge at the next start (``leftovers``).
        flights.popleft()
        # On this node's shelf before the catalog has them, so a search here
        # never misses a split a search on another node (reading the catalog)
        # found: the other way round, a cluster test caught this node behind
        # under load. A failed publish takes them off again; their records
        # stay pending, and a search never sees a record twice (pending
        # records are not searched).
        self.shelf.put(opened)
        try:
            self.janitor.publish(metas, checkpoint=batch[-1][0])
        except BaseException:
            self.shelf.drop(m.split_id for m in metas)
            raise
        with self.cond:
            del self._pending[: len(batch)]
            self._pending_bytes -= sum(len(r[3]) for r in batch)
            while self._arrivals and (not self._pending or self._arrivals[0][0] < self._pending[0][0]):
                self._arrivals.popleft()
            self.indexed_seq = max(self.indexed_seq, batch[-1][0])
            self.cond.notify_all()
        self.trim()
        return len(batch)

    def trim(self) -> None:
        """Delete the log's segments that indexing and every other reader (``holds``) are done with."""
        self.wal.trim(min([self.indexed_seq] + [hold() for hold in self.holds]))

    def _salvage(self, job: Job, error: BaseException) -> list[tuple[SplitMeta, Path]]:
        """The splits of a job whose build failed: its records built again in
        halves, those failing alone indexed by their words only (module doc)."""
        dataset, day, payload, path, _split_id = job
        self.builds_failed += 1
        shutil.rmtree(path, ignore_errors=True)
        if isinstance(error, _MACHINE):
            log.error("a split of %d %s records (log sequences %d-%d) failed to build: %s; they stay pending, "
                      "the flush is tried again", len(payload), dataset, payload[0][0], payload[-1][0], error)
            raise error
        log.error("a split of %d %s records (log sequences %d-%d) failed to build (%s: %s); building its records "
                  "in parts to set apart those that fail", len(payload), dataset, payload[0][0], payload[-1][0],
                  type(error).__name__, error)
        built: list[tuple[SplitMeta, Path]] = []
        failures = [0]
        try:
            self._isolate(dataset, day, payload, built, failures)
        except BaseException:
            for _meta, done in built:
                shutil.rmtree(done, ignore_errors=True)
            raise
        return built

    def _isolate(self, dataset: str, day: int, payload: list[tuple[int, bytes]],
                 built: list[tuple[SplitMeta, Path]], failures: list[int]) -> None:
        """Build the halves of ``payload`` (which failed whole), each apart, halving again what fails."""
        middle = len(payload) // 2
        for part in (payload[:middle], payload[middle:]):
            _dataset, _day, _payload, path, split_id = self._job(dataset, day, part)
            try:
                built.append((self.builder.build(dataset, part, path, split_id), path))
                continue
            except _MACHINE:
                raise
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:  # noqa: BLE001 - tantivy's panics too: isolated like any failure
                self.builds_failed += 1
                failures[0] += 1
                shutil.rmtree(path, ignore_errors=True)
                reason = f"{type(e).__name__}: {e}"
            if len(part) > 1 and failures[0] < ISOLATING_BUILDS:
                self._isolate(dataset, day, part, built, failures)
                continue
            # Failing alone (or past the bound): found by its words and docId, its body kept whole.
            meta = self.builder.build_text_only(dataset, part, path, split_id)
            meta.refused = [(docid, f"its build failed ({reason[:300]}); indexed by the words of its JSON only")
                            for docid, _body in part]
            built.append((meta, path))

    def _report(self, metas: list[SplitMeta]) -> None:
        """Log and count the records the index could not take whole."""
        for meta in metas:
            if not meta.refused:
                continue
            self.records_quarantined += len(meta.refused)
            for docid, reason in meta.refused[:10]:
                log.warning("the %s record at log sequence %d is searchable in part only: %s", meta.dataset, docid, reason)
            if len(meta.refused) > 10:
                log.warning("... and %d more records of split %s", len(meta.refused) - 10, meta.split_id)

    @staticmethod
    def _abandon(flights: deque) -> None:
        """After a failed flush: wait for the builds still running and remove
        the splits they wrote (never published; their records stay pending)."""
        for _batch, jobs, building in flights:
            building.settle()
            for _dataset, _day, _payload, path, _split_id in jobs:
                shutil.rmtree(path, ignore_errors=True)
