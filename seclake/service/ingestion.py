"""Importing raw logs: lines -> records -> the lake, with counts of each outcome.

An HTTP import is all or nothing: the body is parsed completely, then its
records are appended to the write-ahead log in one fsynced write, so a reply
of success means every accepted record is durable, and an error means none
was stored. A file import (CLI) appends in batches and reports progress.

With an idempotency key (``service/idempotency.py``) an import is stored at
most once: the key travels with the records to the lake's writer (this
process, or a cluster's ingest node), which decides there, under its own
bookkeeping, whether to store them or to answer the remembered reply; a
file import gives each of its batches a key of its own, derived from a run
key, so running it again after a crash stores only the batches not stored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, BinaryIO, TypeVar

import orjson

from seclake.ingest.parser import FORMATS, iter_records
from seclake.ingest.reader import IngestCounts, Line, iter_lines, measure
from seclake.detect.behavior import MAX_CUSTOMER
from seclake.errors import Conflict, Forbidden, PayloadTooLarge, Unavailable, ValidationFailed
from seclake.service.idempotency import Idempotency, RequestDigest, Stored, attempt
from seclake.service.parsepool import BodyReader, Parsed, ParsePool, Prepared, Records
from seclake.service.priority import Priority
from seclake.storage.lake import Lake

T = TypeVar("T")

log = logging.getLogger("seclake.ingest")

DATASETS = ("event", "flow")
BATCH = 5000


def check_target(dataset: str, fmt: str) -> None:
    if dataset not in DATASETS:
        raise ValidationFailed("type", f"must be event or flow, not {dataset!r}"[:200])
    if fmt not in FORMATS:
        raise ValidationFailed("format", f"must be one of {sorted(FORMATS)}, not {fmt!r}"[:200])


def check_customer(customer: str | None) -> None:
    """The customer an import files its records under, when it names one."""
    if customer is not None and (not customer or len(customer) > MAX_CUSTOMER or not customer.isprintable()):
        raise ValidationFailed("customer", f"must be 1 to {MAX_CUSTOMER} printable characters")


class Replayed(dict):
    """The report of a keyed import stored earlier: the remembered reply, nothing stored now."""


class MemoryBudget:
    """What an all-or-nothing import may hold in memory before it is stored.

    The body's size is capped after decompression, but each line becomes a
    record of about 400 bytes of Python objects, and detection and the log
    add as much again, whatever the line's length: 4 MB of 2-byte lines
    (4 KB gzipped) took the process tree to +3.1 GB for 73 s (issue 17.3).
    Each line is charged a fixed cost plus its length, and the body is
    measured (``reader.measure``) before a record is built, so an import
    past the budget is refused at once, with nothing stored.
    """

    LINE_COST = 1024
    PER_BYTE = 3

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes

    def check(self, body: bytes, *, compressed: bool | None, max_bytes: int) -> None:
        lines, size = measure(body, compressed=compressed, max_bytes=max_bytes)
        cost = self.LINE_COST * lines + self.PER_BYTE * size
        if cost > self.max_bytes:
            raise PayloadTooLarge(
                f"the import's {lines} lines would take about {cost >> 20} MB in memory before they are stored, "
                f"above the limit of {self.max_bytes >> 20} MB (setting max_import_memory_mb; each line costs "
                "about 1 KB plus its length): send it in smaller parts. Nothing was stored"
            )


class Admission:
    """What a sender may write: the records its data policies would show it
    (issue: a user limited to one customer must not file records under
    another, by ``customer=`` or by ``@customer`` in a line)."""

    def __init__(self, visible: Callable[[dict[str, Any]], bool], username: str):
        self.visible = visible
        self.username = username

    def check(self, numbered: Iterable[tuple[int, dict[str, Any]]]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, record) pairs, each checked."""
        for number, record in numbered:
            if not self.visible(record):
                customer = record.get("@customer")
                raise Forbidden(
                    f"line {number}: the record (@customer {customer!r}) is outside the data policies of "
                    f"{self.username!r}; an import may hold only records its sender may see. Nothing was stored"[:400]
                )
            yield number, record


class Ingestion:
    def __init__(self, lake: Lake, detector=None, idempotency: Idempotency | None = None,
                 parsers: ParsePool | None = None, priority: Priority | None = None):
        self.lake = lake
        # Searches first: bulk imports wait at checkpoints while searches run (service/priority.py).
        self.priority = priority
        # Worker processes that parse large bodies (None: every body in the request thread).
        self.parsers = parsers
        # Behavior rules run on records before they are logged (detect/detector.py).
        self.detector = detector
        # Keys of imports already stored (None where this process does not write the lake).
        self.idempotency = idempotency

    def _records(self, lines: Iterable[Line], *, vendor: str, dataset: str, fmt: str, customer: str | None, counts: IngestCounts):
        return iter_records(
            lines,
            vendor=vendor,
            dataset=dataset,
            fmt=fmt,
            received_ms=int(time.time() * 1000),
            customer=customer,
            counts=counts,
        )

    def import_body(
        self,
        body: bytes | BinaryIO,
        *,
        vendor: str,
        dataset: str = "event",
        fmt: str = "auto",
        customer: str | None = None,
        compressed: bool | None = None,
        max_bytes: int,
        key: tuple[str, str] | None = None,
        admit: Admission | None = None,
        max_memory: int | None = None,
    ) -> dict[str, Any]:
        """Parse and store a whole body; ``key`` (scope, idempotency key) stores it at most once.

        A keyed import stored before returns a ``Replayed`` report: the
        reply remembered with the key, nothing stored now. ``admit`` (the
        sender's data policies) must accept every record, or nothing is stored.
        ``max_memory``: the bytes its records may hold (``MemoryBudget``).
        """
        check_target(dataset, fmt)
        if max_memory is not None and isinstance(body, bytes):
            MemoryBudget(max_memory).check(body, compressed=compressed, max_bytes=max_bytes)
        target = {"vendor": vendor, "dataset": dataset, "fmt": fmt, "customer": customer}
        received_ms = int(time.time() * 1000)
        numbered: Iterable[tuple[int, dict[str, Any]]]
        if self.parsers is not None and self.parsers.takes(body):
            parsed = self.parsers.parse(body, compressed=compressed, max_bytes=max_bytes, target=target,
                                        received_ms=received_ms, keyed=key is not None,
                                        rules=self.detector.ruleset() if self.detector is not None else None)
            counts, prepared = parsed.counts, parsed.prepared
            digest = lambda: parsed.digest  # noqa: E731
            if admit is None:
                items = self._prepared_items(dataset, prepared)
            else:
                # Every record is read by the sender's data policies: as the log will replay it.
                items = [(dataset, r) for _, r in admit.check(zip(parsed.numbers, map(orjson.loads, prepared.bodies)))]
        else:
            reader = BodyReader(body, compressed=compressed, max_bytes=max_bytes, target=target,
                                received_ms=received_ms, keyed=key is not None)
            counts, digest, prepared = reader.counts, reader.digest, None
            numbered = self.paced(reader.numbered)
            numbered = numbered if admit is None else admit.check(numbered)
            made = self.made_here()
            items = []
            for _, record in numbered:
                if made is not None:
                    made.add(dataset, record)
                items.append((dataset, record))
            prepared = made.prepared() if made is not None else None
        self.yield_to_searches()
        if key is None:
            first, last = self._append(items, prepared=prepared)
            return self._report(counts, first, last)
        reply = self._report(counts, None, None)
        stored = self._append_once(items, attempt(*key, digest(), reply, len(items)), prepared=prepared)
        report = {**stored.reply, "firstDocId": stored.first, "lastDocId": stored.last}
        return Replayed(report) if stored.replayed else report

    def import_stream(
        self,
        source: BinaryIO,
        *,
        vendor: str,
        dataset: str = "event",
        fmt: str = "auto",
        customer: str | None = None,
        max_bytes: int,
        progress: Callable[[int], None] | None = None,
        key: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """Parse and store a file in batches of ``BATCH`` records.

        ``key`` (scope, run key): batch n of the file is stored at most once
        under the key ``<run key>.<n>`` (batches fall the same way on every
        run of the same file); the report's ``replayed`` counts the records
        of batches an earlier run stored.
        """
        check_target(dataset, fmt)
        lines: Iterable[Line] = iter_lines(source, max_bytes=max_bytes)
        if key is None and self.parsers is not None:
            return self._import_parts(lines, vendor=vendor, dataset=dataset, fmt=fmt, customer=customer,
                                      progress=progress)
        counts = IngestCounts()
        digest = RequestDigest(vendor=vendor, dataset=dataset, fmt=fmt, customer=customer) if key else None
        if digest is not None:
            lines = digest.lines(lines)
        batch: list[tuple[str, dict[str, Any]]] = []
        first = last = None
        replayed = batches = 0

        def store() -> None:
            nonlocal first, last, replayed, batches
            if key is None or digest is None:
                f, last = self._append(batch)
            else:
                stored = self._append_once(batch, attempt(key[0], f"{key[1]}.{batches}", digest.take(), {}, len(batch)))
                f, last = stored.first, stored.last
                replayed += len(batch) if stored.replayed else 0
            batches += 1
            first = f if first is None else first
            if progress:
                progress(len(batch))

        for record in self.paced(self._records(lines, vendor=vendor, dataset=dataset, fmt=fmt, customer=customer,
                                                counts=counts)):
            batch.append((dataset, record))
            if len(batch) >= BATCH:
                store()
                batch = []
        if batch:
            store()
        report = self._report(counts, first, last)
        if key is not None:
            report["replayed"] = replayed
        return report

    def _import_parts(self, lines: Iterable[Line], *, vendor: str, dataset: str, fmt: str, customer: str | None,
                      progress: Callable[[int], None] | None) -> dict[str, Any]:
        """``import_stream`` with parse workers: this thread reads the lines (gzip, the size
        limit, line numbers: ``iter_lines``, ~1 µs per line), the workers parse parts of
        ``BATCH`` lines and match the rules (``ParsePool.parse_parts``), and each part is
        stored as it comes back, in the file's order. An import with a run key stays in this
        thread: its batches fall by records, with the digest of their lines."""
        assert self.parsers is not None
        counts = IngestCounts()
        target = {"vendor": vendor, "dataset": dataset, "fmt": fmt, "customer": customer}
        read = iter(lines)
        parts = iter(lambda: list(islice(read, BATCH)), [])
        first = last = None
        for parsed, f, last_stored in self._parsed_parts(parts, dataset, target, int(time.time() * 1000)):
            counts.add(parsed.counts)
            first = f if first is None else first
            last = last_stored if last_stored is not None else last
            if progress:
                progress(len(parsed.prepared.bodies))
        return self._report(counts, first, last)

    def _parsed_parts(self, parts: Iterable[list[Line]], dataset: str, target: dict[str, Any],
                      received_ms: int) -> Iterator[tuple[Parsed, int | None, int | None]]:
        """Parts of lines parsed in the parse workers, each stored as it comes back, in order:
        (what the worker made of it, its first and last docId)."""
        assert self.parsers is not None
        rules = self.detector.ruleset if self.detector is not None else lambda: None
        for parsed in self.parsers.parse_parts(parts, target=target, received_ms=received_ms, rules=rules):
            yield (parsed, *self._append(self._prepared_items(dataset, parsed.prepared), prepared=parsed.prepared))

    def import_messages(self, lines: list[Line], *, vendor: str, dataset: str, customer: str | None, address: str,
                        size: int) -> IngestCounts:
        """Parse and store what a listener received from one sender at ``address`` (kept in each
        record), ``size`` bytes: in the parse workers from ``ParsePool.min_bytes`` on, as an import
        body of that size (a TCP read of a busy sender), else in this thread (a datagram or a few
        lines: a worker's round trip costs more than their parsing). Durable when it returns."""
        target = {"vendor": vendor, "dataset": dataset, "customer": customer, "address": address}
        received_ms = int(time.time() * 1000)
        if self.parsers is not None and size >= self.parsers.min_bytes:
            try:
                ((parsed, _first, _last),) = self._parsed_parts([lines], dataset, target, received_ms)
                return parsed.counts
            except Unavailable:
                # Its workers died twice under it (nothing stored): a sender cannot be asked
                # to send again (an import's client can), so this thread parses it.
                log.warning("parse workers failed on %d messages from %s; parsed in the listener's thread",
                            len(lines), address)
        counts = IngestCounts()
        self._append([(dataset, r) for r in iter_records(lines, received_ms=received_ms, counts=counts, **target)])
        return counts

    def _prepared_items(self, dataset: str, prepared: Prepared) -> list[tuple[str, dict[str, Any] | None]]:
        """The items of records a parse worker prepared, for ``_append``: a record the detector
        reads (one a rule matched) decoded from the JSON the log stores, as a replay gives it;
        every other one None (3-4 µs each not spent: the log takes its JSON as it came, the
        flusher its day and partition from the worker, ``Prepared.placed``, and the detector
        decodes any it needs if the rules changed meanwhile). A node that hands records on
        (``RemoteIngestion``, no lake of its own) sends them all, decoded."""
        loads = orjson.loads
        if self.lake is None or prepared.placed is None:
            return [(dataset, loads(b)) for b in prepared.bodies]
        found = prepared.matched[1] if prepared.matched is not None else {}
        return [(dataset, loads(b) if i in found else None) for i, b in enumerate(prepared.bodies)]

    def append_records(self, items: list[tuple[str, dict[str, Any]]],
                       prepared: Prepared | None = None, bulk: bool = False) -> tuple[int | None, int | None]:
        """Log records (and their behaviors); ``prepared``: what a parse worker made of them.
        ``bulk``: a bulk import, which waits for running searches first (a listener's datagrams do not:
        a socket's buffer would overflow meanwhile)."""
        if bulk:
            self.yield_to_searches()
        return self._append(items, prepared=prepared)

    def yield_to_searches(self) -> None:
        """A bulk import's checkpoint: wait while searches run, boundedly (service/priority.py)."""
        if self.priority is not None:
            self.priority.yield_to_interactive()

    def paced(self, items: Iterable[T]) -> Iterable[T]:
        """``items`` with a bulk import's checkpoints between them (service/priority.py)."""
        return items if self.priority is None else self.priority.paced(items)

    def made_here(self) -> Records | None:
        """For records a bulk import parses in this thread: what a parse worker makes of them (their
        JSON, the rules each matches, their days), made as they are read, between the import's
        checkpoints. Under the log's lock, where nothing yields to a search, only the behaviors are
        then left to make (the matching there was a third of a full-speed import's time in this
        interpreter). None where this process does not write the lake."""
        if self.lake is None:
            return None
        return Records(self.detector.ruleset() if self.detector is not None else None, self.lake.partitions)

    def append_once(self, items: list[tuple[str, dict[str, Any]]], request: dict[str, Any]) -> Stored:
        """Store records under an idempotency key (``idempotency.attempt``) unless they are stored already."""
        return self._append_once(items, request)

    def _append_once(self, items: list[tuple[str, dict[str, Any]]], request: dict[str, Any],
                     prepared: Prepared | None = None) -> Stored:
        if self.idempotency is None:
            raise Conflict("this process does not write the lake, so it cannot keep idempotency keys")
        return self.idempotency.once(request, lambda entry: self._append(items, key=entry, prepared=prepared))

    def append_behaviors(self, behaviors: list[dict[str, Any]]) -> tuple[int | None, int | None]:
        """Log behaviors made elsewhere (a backfill); the summaries fold them in."""
        if not behaviors:
            return None, None
        items = [("behavior", b) for b in behaviors]
        if self.detector is None:
            return self.lake.append(items)
        with self.detector.lock:
            first, last = self.lake.append(items)
            self.detector.logged(last, behaviors)
        return first, last

    def _append(
        self, items: list[tuple[str, dict[str, Any]]], key: dict[str, Any] | None = None,
        prepared: Prepared | None = None,
    ) -> tuple[int | None, int | None]:
        """Log records (and the behaviors they cause) durably; their first and last docId.

        ``key``: an idempotency key entry, logged in the same write.
        ``prepared``: what a parse worker made of ``items``: each record's JSON
        for the log, and the rules each one matches (``Detector.process``).
        """
        if not items:
            return None, None
        detector = self.detector
        bodies = prepared.bodies if prepared is not None else None
        placed = prepared.placed if prepared is not None else None
        if detector is None:
            return self.lake.append(items, key=key, bodies=bodies, placed=placed)
        # The lake numbers the records, then the detector runs on them (its
        # behaviors name the records by number) and its behaviors go in the
        # same write; under the detector's lock, its state follows the log's order.
        made: list[dict[str, Any]] = []

        def behaviors(first: int) -> list[tuple[str, dict[str, Any]]]:
            made.extend(detector.process(items, first, prepared.matched if prepared is not None else None, bodies))
            return [("behavior", b) for b in made]

        with detector.lock:
            try:
                first, last = self.lake.append(items, key=key, derive=behaviors, bodies=bodies, placed=placed)
            except BaseException:
                detector.resync(self.lake)
                raise
            detector.logged(last, made)
        return first, first + len(items) - 1

    @staticmethod
    def _report(counts: IngestCounts, first: int | None, last: int | None) -> dict[str, Any]:
        out = counts.as_dict()
        out["stored"] = counts.accepted + counts.raw
        out["firstDocId"] = first
        out["lastDocId"] = last
        return out
