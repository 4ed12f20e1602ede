"""Ingestion: raw log lines into event and flow records (http-interface.md 2.6).

Pure functions, no storage or HTTP. ``reader`` turns an import body into
numbered lines; ``parser`` detects a line's format and hands it to ``jsonl``,
``syslog``, ``cef`` or ``kv``; ``record`` builds the record they all produce,
with times from ``timestamp``; ``vendor`` checks the vendor name of an import.

Typical use::

    counts = IngestCounts()
    lines = iter_lines(body, max_bytes=settings.max_import_bytes)
    for record in iter_records(lines, vendor=validate_vendor(name), dataset="event",
                               received_ms=now_ms, counts=counts):
        ...
"""

from seclake.ingest.parser import iter_records, parse_line
from seclake.ingest.reader import IngestCounts, Line, iter_lines
from seclake.ingest.record import LineRejected
from seclake.ingest.vendor import validate_vendor

__all__ = ["IngestCounts", "Line", "LineRejected", "iter_lines", "iter_records", "parse_line", "validate_vendor"]
