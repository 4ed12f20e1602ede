"""Parsing HTTP import bodies, bulk bodies and the files of ``seclake import``, and matching the rules on
their records, in worker processes.

The server's process runs on one interpreter: past about three cores its
CPU per line bounds the ingest whatever the machine has (~40 µs per line,
~27k lines/s; the bench's CPU breakdown), and parsing (13.5 µs per line on
the bench's sample, FortiGate 25) and rule matching (~8) were most of it.
A worker parses a whole body, finds which rules each record matches
(``detect/ruleset.py``), and sends back each record as the JSON the log
stores (``wal.encoded``) with its line number, its matches and where the
flusher puts it (its day and partition, ``Placed``). The server decodes
only the records something there must read (3-4 µs each), as the log
replays them after a restart: those a rule matched (the detector applies
the match) and, for a sender with data policies, every one; it logs the
JSON as it came, and keeps what must happen in one place: admission by the
sender's data policies, the rules' state (windows, history, in log order),
the log's sequence and its fsync. Measured side by side on two cores: the
server's CPU per line 36 -> 13 µs, all processes together ~10% more
(docs/architecture.md, "Ways in"). A bulk
body of the Elasticsearch API (``service/bulk.py``) goes the same way: the
worker reads its actions and documents, the server decides per document
with the sender's data policies and keeps the matches of the records it
keeps (``api/elastic.py``). ``seclake import`` reads a file's lines itself
and sends them in parts (``parse_parts``), stored in order as they come back.

What the request thread did stays the same from the caller's side: the
counts and their reasons, the idempotency digest of the lines as read, and
the reader's errors (a bad gzip stream, a body past the size limit) raised
with their type and message (``SeclakeError`` pickles as itself). Small
bodies stay in the request thread: a round trip costs about a millisecond.
A worker that dies under a body (killed, out of memory) is replaced and the
body parsed again in a new one; if that one dies too the import is refused
with 503 and nothing stored, rather than parsing it in the server, where the
same body could take the whole service down.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, TypeVar

from seclake import workers
from seclake.detect.ruleset import RuleSet, received
from seclake.errors import Unavailable
from seclake.ingest.parser import iter_numbered
from seclake.ingest.reader import IngestCounts, Line, iter_lines
from seclake.record.dataset import DATASETS, time_of
from seclake.service.bulk import Entry, read_bulk
from seclake.service.idempotency import RequestDigest
from seclake.storage import partition
from seclake.storage.merge import day_of
from seclake.storage.wal import encoded

log = logging.getLogger("seclake.ingest")
T = TypeVar("T")

# Bodies smaller than this are parsed in the request thread: a round trip to a
# worker costs about a millisecond, ~100 lines' parsing.
MIN_BYTES = 32 * 1024


class Prepared(NamedTuple):
    """What a parse worker made of records about to be logged, item by item: each
    one's JSON (``wal.encoded``), (with rules) which rules each matches, as
    (rule generation, item index -> rule numbers) for ``Detector.process``, and
    where the flusher puts each one (``Placed``), so that the server decodes
    only the records something must read."""

    bodies: list[bytes]
    matched: tuple[Any, dict[int, list[int]]] | None
    placed: Placed | None = None

    def taken(self, positions: list[int]) -> Prepared:
        """What the worker made of the records at ``positions``, in that order, item by item (a bulk
        body's documents the sender's data policies kept)."""
        matched = self.matched
        if matched is not None:
            version, found = matched
            matched = (version, {i: found[n] for i, n in enumerate(positions) if n in found})
        placed = self.placed
        if placed is not None:
            placed = Placed([placed.days[n] for n in positions],
                            [placed.keys[n] for n in positions] if placed.keys is not None else None)
        return Prepared([self.bodies[n] for n in positions], matched, placed)


class Placed(NamedTuple):
    """Where the flusher puts records, item by item: the UTC day of each one's time (``time_of``),
    and its partition under the lake's limit (``partition.keyer``; None: partitioning off)."""

    days: list[int]
    keys: list[str] | None


@dataclass
class Parsed:
    """An import body parsed in a worker: each record's line number, the counts, the digest of its lines,
    and the records themselves (``Prepared``)."""

    numbers: list[int]
    counts: IngestCounts
    digest: str | None
    prepared: Prepared


@dataclass
class ParsedBulk:
    """A bulk body read in a worker (``service/bulk.py``): its entries, each record given as its
    position in ``prepared``."""

    entries: list[Entry]
    prepared: Prepared


class BodyReader:
    """The numbered records of an import body, its counts and the digest of its lines: how the
    request thread and a parse worker both read a body (``Ingestion.import_body``, ``parse_body``)."""

    def __init__(self, body: bytes, *, compressed: bool | None, max_bytes: int, target: dict[str, Any],
                 received_ms: int, keyed: bool):
        self.counts = IngestCounts()
        lines = iter_lines(body, compressed=compressed, max_bytes=max_bytes)
        self._digest = RequestDigest(**target) if keyed else None
        if self._digest is not None:
            lines = self._digest.lines(lines)
        # (line number, record) pairs, read as they are taken.
        self.numbered = iter_numbered(lines, received_ms=received_ms, counts=self.counts, **target)

    def digest(self) -> str | None:
        """The digest of the lines read (``idempotency.RequestDigest``), once ``numbered`` is read through."""
        return self._digest.take() if self._digest is not None else None


class Records:
    """Records as a worker sends them back: their JSON, the rules each one matches, and where the
    flusher puts it. The request thread makes the same of a body it parses itself
    (``Ingestion.import_body``): all of it before the log's lock is taken, at the
    import's checkpoints, so that under the lock only the behaviors are made."""

    def __init__(self, rules: tuple[Any, bytes] | RuleSet | None, partitions: int = partition.OFF):
        # In a worker (generation, ``RuleSet.shipped``), kept between bodies; in the server its rule set.
        self.ruleset = received(rules[1], rules[0]) if isinstance(rules, tuple) else rules
        self.bodies: list[bytes] = []
        self.found: dict[int, list[int]] = {}
        self.days: list[int] = []
        self.keys: list[str] | None = [] if partitions > partition.OFF else None
        self.key_of = partition.keyer(partitions)

    def add(self, dataset: str, record: dict[str, Any]) -> int:
        """Take a record; its position."""
        n = len(self.bodies)
        if self.ruleset is not None and (matching := self.ruleset.matching(dataset, record)):
            self.found[n] = matching
        self.bodies.append(encoded(record))
        self.days.append(day_of(time_of(record, DATASETS[dataset])))
        if self.keys is not None:
            self.keys.append(self.key_of(record))
        return n

    def take(self, dataset: str, numbered: Iterable[tuple[int, dict[str, Any]]]) -> list[int]:
        """Take every (line number, record) of ``numbered``; their line numbers."""
        numbers: list[int] = []
        for number, record in numbered:
            numbers.append(number)
            self.add(dataset, record)
        return numbers

    def prepared(self) -> Prepared:
        return Prepared(self.bodies, (self.ruleset.version, self.found) if self.ruleset is not None else None,
                        Placed(self.days, self.keys))


def parse_body(body: bytes, compressed: bool | None, max_bytes: int, target: dict[str, Any],
               received_ms: int, keyed: bool, rules: tuple[Any, bytes] | None = None,
               partitions: int = partition.OFF) -> Parsed:
    """In a worker: what ``Ingestion.import_body`` would read of ``body``.

    ``target``: vendor, dataset, fmt and customer, the parameters the digest starts with.
    ``rules``: (generation, ``RuleSet.shipped``): which rules each record matches is found here too.
    ``partitions``: the lake's partition limit (``Placed``).
    """
    records = Records(rules, partitions)
    reader = BodyReader(body, compressed=compressed, max_bytes=max_bytes, target=target, received_ms=received_ms,
                        keyed=keyed)
    numbers = records.take(target["dataset"], reader.numbered)
    return Parsed(numbers, reader.counts, reader.digest(), records.prepared())


def parse_lines(lines: list[Line], target: dict[str, Any], received_ms: int,
                rules: tuple[Any, bytes] | None = None, partitions: int = partition.OFF) -> Parsed:
    """In a worker: a part of a file's lines as read by ``iter_lines`` in the importing process
    (``Ingestion.import_stream``), parsed as ``iter_numbered`` would; no digest (unkeyed imports)."""
    records = Records(rules, partitions)
    counts = IngestCounts()
    numbers = records.take(target["dataset"], iter_numbered(lines, received_ms=received_ms, counts=counts, **target))
    return Parsed(numbers, counts, None, records.prepared())


def parse_bulk(body: bytes, default_index: str | None, compressed: bool | str | None, max_bytes: int, received_ms: int,
               rules: tuple[Any, bytes] | None = None, partitions: int = partition.OFF) -> ParsedBulk:
    """In a worker: ``bulk.read_bulk`` of ``body``, each record replaced by its position in the answer's records."""
    records = Records(rules, partitions)
    entries = [
        entry if entry.error is not None else entry._replace(record=records.add(entry.dataset, entry.record))
        for entry in read_bulk(body, default_index, compressed=compressed, max_bytes=max_bytes, received_ms=received_ms)
    ]
    return ParsedBulk(entries, records.prepared())


class ParsePool:
    """``workers`` spawned processes that parse import bodies, started at the first body that needs one."""

    def __init__(self, workers: int, min_bytes: int = MIN_BYTES, partitions: int = partition.OFF):
        self.workers = workers
        # The lake's partition limit (setting ``customer_partitions``): records are placed under it (``Placed``).
        self.partitions = partitions
        # Bodies smaller than this are the request thread's (``takes``).
        self.min_bytes = min_bytes
        # Bodies parsed here, and worker processes that died under one (for /metrics).
        self.parsed = 0
        self.lost = 0
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def takes(self, body: Any) -> bool:
        """Whether ``body`` is parsed here rather than in the request thread (a stream is not)."""
        return isinstance(body, bytes) and len(body) >= self.min_bytes

    def parse(self, body: bytes, *, compressed: bool | None, max_bytes: int, target: dict[str, Any],
              received_ms: int, keyed: bool, rules: RuleSet | None = None) -> Parsed:
        """An import body parsed in a worker; with ``rules``, each record's matching rules found there too."""
        return self._run(parse_body, body, compressed, max_bytes, target, received_ms, keyed, _shipped(rules),
                         self.partitions)

    def parse_bulk(self, body: bytes, default_index: str | None, *, compressed: bool | str | None, max_bytes: int,
                   received_ms: int, rules: RuleSet | None = None) -> ParsedBulk:
        """A bulk body read in a worker (``bulk.read_bulk``), with each record's matching rules."""
        return self._run(parse_bulk, body, default_index, compressed, max_bytes, received_ms, _shipped(rules),
                         self.partitions)

    def parse_parts(self, parts: Iterable[list[Line]], *, target: dict[str, Any], received_ms: int,
                    rules: Callable[[], RuleSet | None]) -> Iterator[Parsed]:
        """Parts of a file's lines parsed in the workers, each as ``parse_lines``, yielded in order.

        Two parts per worker are in flight, so the workers parse while the
        caller stores what came back (and memory stays bounded by the parts in
        flight). ``rules``: the rule set as a part is sent (the detector uses
        its matches only if its rules are still of that generation). A part
        whose worker died is sent again, once, to new workers, with every
        part behind it; a second death raises ``Unavailable`` (the parts
        yielded before it are the caller's, stored). An error reading the
        parts comes after every part read before it.
        """
        ahead: deque[tuple[list[Line], ProcessPoolExecutor, Future, int]] = deque()
        source = iter(parts)

        def send(part: list[Line], attempt: int) -> tuple[list[Line], ProcessPoolExecutor, Future, int]:
            pool = self._started()
            return part, pool, pool.submit(workers.job, parse_lines, part, target, received_ms, _shipped(rules()),
                                           self.partitions), attempt

        failed: Exception | None = None  # reading the parts failed (a broken gzip stream, a read error)
        while True:
            while failed is None and len(ahead) < 2 * self.workers:
                try:
                    part = next(source, None)
                except Exception as e:  # raised once the parts read before it are the caller's, as in one thread
                    failed = e
                    break
                if part is None:
                    break
                ahead.append(send(part, 1))
            if not ahead:
                if failed is not None:
                    raise failed
                return
            part, pool, future, attempt = ahead.popleft()
            try:
                parsed = future.result()
            except BrokenProcessPool:
                self._drop(pool)
                if attempt == 2:
                    raise Unavailable(
                        "parsing a part of the file failed twice: its worker process died each time (killed, or "
                        "out of memory?); the parts before it are stored, nothing after it"
                    ) from None
                # The parts behind it in the same pool are lost with it.
                ahead = deque([send(part, 2)] + [send(p, a) if q is pool else (p, q, f, a) for p, q, f, a in ahead])
                continue
            with self._lock:
                self.parsed += 1
            yield parsed

    def _run(self, fn: Callable[..., T], *args: Any) -> T:
        for _attempt in (1, 2):
            pool = self._started()
            try:
                done = pool.submit(workers.job, fn, *args).result()
            except BrokenProcessPool:
                self._drop(pool)
                continue
            with self._lock:
                self.parsed += 1
            return done
        raise Unavailable(
            "parsing the import failed twice: its worker process died each time (killed, or out of memory?); "
            "nothing was stored"
        )

    def _started(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(self.workers, mp_context=workers.CONTEXT,
                                                 initializer=workers.start, initargs=(os.getpid(), 0, "seclake-parse"))
            return self._pool

    def pids(self) -> list[int]:
        """The process ids of the pool's workers now (none before the first body)."""
        with self._lock:
            pool = self._pool
        return list(getattr(pool, "_processes", None) or ()) if pool is not None else []

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        """Forget a pool one of whose workers died, once (every request waiting on it sees it broken)."""
        with self._lock:
            if self._pool is not pool:
                return
            self._pool = None
            self.lost += 1
        log.warning("a parse worker process died (killed, or out of memory?); starting new ones")
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def _shipped(rules: RuleSet | None) -> tuple[Any, bytes] | None:
    return (rules.version, rules.shipped) if rules is not None else None
