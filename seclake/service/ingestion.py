"""Importing raw logs: lines -> records -> the lake, with counts of each outcome.

An HTTP import is all or nothing: the body is parsed completely, then its
records are appended to the write-ahead log in one fsynced write, so a reply
of success means every accepted record is durable, and an error means none
was stored. A file import (CLI) appends in batches and reports progress.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from seclake.ingest.parser import FORMATS, iter_records
from seclake.ingest.reader import IngestCounts, Line, iter_lines
from seclake.errors import ValidationFailed
from seclake.storage.lake import Lake

DATASETS = ("event", "flow")
BATCH = 5000


def check_target(dataset: str, fmt: str) -> None:
    if dataset not in DATASETS:
        raise ValidationFailed("type", f"must be event or flow, not {dataset!r}"[:200])
    if fmt not in FORMATS:
        raise ValidationFailed("format", f"must be one of {sorted(FORMATS)}, not {fmt!r}"[:200])


class Ingestion:
    def __init__(self, lake: Lake, detector=None):
        self.lake = lake
        # Behavior rules run on records before they are logged (detect/detector.py).
        self.detector = detector

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
    ) -> dict[str, Any]:
        check_target(dataset, fmt)
        counts = IngestCounts()
        lines = iter_lines(body, compressed=compressed, max_bytes=max_bytes)
        items = [(dataset, r) for r in self._records(lines, vendor=vendor, dataset=dataset, fmt=fmt, customer=customer, counts=counts)]
        first, last = self._append(items)
        return self._report(counts, first, last)

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
    ) -> dict[str, Any]:
        check_target(dataset, fmt)
        counts = IngestCounts()
        lines = iter_lines(source, max_bytes=max_bytes)
        batch: list[tuple[str, dict[str, Any]]] = []
        first = last = None
        for record in self._records(lines, vendor=vendor, dataset=dataset, fmt=fmt, customer=customer, counts=counts):
            batch.append((dataset, record))
            if len(batch) >= BATCH:
                f, last = self._append(batch)
                first = f if first is None else first
                if progress:
                    progress(len(batch))
                batch = []
        if batch:
            f, last = self._append(batch)
            first = f if first is None else first
            if progress:
                progress(len(batch))
        return self._report(counts, first, last)

    def append_records(self, items: list[tuple[str, dict[str, Any]]]) -> tuple[int | None, int | None]:
        return self._append(items)

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

    def _append(self, items: list[tuple[str, dict[str, Any]]]) -> tuple[int | None, int | None]:
        """Log records (and the behaviors they cause) durably; their first and last docId."""
        if not items:
            return None, None
        detector = self.detector
        if detector is None:
            return self.lake.append(items)
        # One lock around detection and the log append: the detector predicts
        # the sequence numbers, and its state follows the log's order.
        with detector.lock:
            behaviors = detector.process(items, self.lake.wal.next_seq)
            try:
                first, last = self.lake.append(list(items) + [("behavior", b) for b in behaviors])
            except BaseException:
                detector.resync(self.lake)
                raise
            detector.logged(last, behaviors)
        return first, first + len(items) - 1

    @staticmethod
    def _report(counts: IngestCounts, first: int | None, last: int | None) -> dict[str, Any]:
        out = counts.as_dict()
        out["stored"] = counts.accepted + counts.raw
        out["firstDocId"] = first
        out["lastDocId"] = last
        return out
