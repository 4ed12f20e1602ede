"""The write-ahead log: accepted records survive a crash before they are indexed.

Records are appended to segment files and fsynced before an import is
acknowledged. Each entry carries its sequence number, which becomes the
record's ``docId``; the catalog's checkpoint says up to which sequence the
log has been turned into published splits, so a restart replays exactly the
rest (no loss, no duplicates).

Entry layout: ``<u32 payload length><u32 crc32 of payload><u64 seq><payload>``
with payload ``orjson([dataset, record])``. A torn or corrupt tail (a crash
mid-write, before the fsync that acknowledges it) is cut off at open.

A *keyed* append (an import with an ``Idempotency-Key``,
``service/idempotency.py``) starts with one key entry,
``["~key", {..., "n": entries that follow}]``, carrying the first record's
sequence, then its entries, all in the same write and fsync. The key is
durable exactly when the whole batch is: at open, a key entry whose ``n``
entries are not all there (a torn tail) is cut off with them, so a batch
with a key is in the log whole, with its key, or not at all. ``open`` keeps
the complete keys it read (``keys``) for the idempotency service to record;
``replay`` never yields key entries (they are not records and take no
sequence number of their own). Segments written since key entries exist
start with ``seclake-wal 2``; ``seclake-wal 1`` segments are read the same.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

HEADER = struct.Struct("<IIQ")
SUFFIX = ".wal"
FORMAT_LINE = b"seclake-wal 2\n"
# Segments written before key entries existed hold none; read them the same.
FORMATS = (FORMAT_LINE, b"seclake-wal 1\n")
# The dataset slot of a key entry: never a dataset name (those are identifiers).
KEY_ENTRY = "~key"



def encoded(record: dict[str, Any]) -> bytes:
    """A record as compact JSON, in a block of its own size.

    orjson hands back bytes that sit in a block of at least 4 KiB whatever
    their length; a body is kept until it is indexed (the lake's pending
    queue), so an exact-size copy holds ten times less memory per record.
    """
    return bytes(memoryview(orjson.dumps(record)))

class Logged(Exception):
    """A keyed append failed after its fsync: entries ``first``..``last`` and the key are durable."""

    def __init__(self, first: int, last: int):
        super().__init__(f"entries {first} to {last} were logged, then what follows the fsync failed (see the cause)")
        self.first = first
        self.last = last


class WriteAheadLog:
    def __init__(self, directory: Path, segment_bytes: int = 64 * 1024 * 1024):
        self.directory = directory
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()
        self._file = None
        self._file_path: Path | None = None
        self.next_seq = 1
        # (first sequence, key entry) of every whole keyed batch found at open.
        self.keys: list[tuple[int, dict[str, Any]]] = []

    # -- opening and recovery ------------------------------------------

    def open(self, checkpoint: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        last = checkpoint
        segments = self._segments()
        self.keys = []
        for path in segments:
            for seq, ds, rec in self._read_segment(path, repair=path == segments[-1], keys=True):
                last = max(last, seq)
                if ds == KEY_ENTRY:
                    self.keys.append((seq, rec))
        self.next_seq = last + 1
        self._start_segment()

    def _segments(self) -> list[Path]:
        return sorted(self.directory.glob("*" + SUFFIX))

    def _start_segment(self) -> None:
        if self._file is not None:
            self._file.close()
        path = self.directory / f"{self.next_seq:020d}{SUFFIX}"
        self._file = open(path, "ab")
        if self._file.tell() == 0:
            self._file.write(FORMAT_LINE)
            self._file.flush()
            os.fsync(self._file.fileno())
            _fsync_dir(self.directory)
        self._file_path = path

    def _read_segment(
        self, path: Path, repair: bool = False, keys: bool = False
    ) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """The entries of a segment; key entries (dataset ``KEY_ENTRY``) only with ``keys``.

        Entries of a keyed batch are yielded once the whole batch has been
        read, so a batch cut short by a crash yields nothing, not a part.
        """
        with open(path, "rb") as f:
            data = f.read()
        head = next((line for line in FORMATS if data.startswith(line)), None)
        if head is None:
            if repair and len(data) < len(FORMAT_LINE):
                # Crashed while creating the segment: nothing was acknowledged in it.
                path.unlink()
                return
            raise ValueError(f"{path}: not a seclake write-ahead log segment (format line missing)")
        pos = good = len(head)
        batch: list[tuple[int, str, dict[str, Any]]] = []
        owed = 0  # entries of the open keyed batch still to read
        while pos < len(data):
            end = pos + HEADER.size
            if end > len(data):
                break
            length, crc, seq = HEADER.unpack_from(data, pos)
            if end + length > len(data) or zlib.crc32(data[end:end + length]) != crc:
                break
            dataset, record = orjson.loads(data[end:end + length])
            pos = end + length
            if dataset == KEY_ENTRY:
                owed = record["n"]
                batch = [(seq, dataset, record)] if keys else []
            elif owed:
                owed -= 1
                batch.append((seq, dataset, record))
            else:
                yield seq, dataset, record
                good = pos
                continue
            if not owed:
                yield from batch
                batch = []
                good = pos
        if good < len(data):
            if not repair:
                raise ValueError(f"{path}: corrupt or incomplete entry at byte {good}")
            # A torn tail was never acknowledged (the fsync comes after the write).
            # A keyed batch cut short goes whole: its key was never durable.
            with open(path, "r+b") as f:
                f.truncate(good)
                os.fsync(f.fileno())

    # -- writing --------------------------------------------------------

    def append(
        self, items: Sequence[tuple[str, dict[str, Any]]], on_assigned=None, key: dict[str, Any] | None = None
    ) -> tuple[int, int]:
        """Append (dataset, record) items durably; return the first and last sequence.

        ``on_assigned(seq_items)`` runs under the log's lock after the fsync, so
        callers see records in sequence order; each item is (seq, dataset,
        record, body) where body is the record as JSON, encoded once here.
        ``key`` (plain JSON) is written as the batch's key entry, durable
        with the items in the same fsync (module doc).
        """
        if not items:
            return (0, -1)
        buf = bytearray()
        with self._lock:
            first = self.next_seq
            if key is not None:
                payload = orjson.dumps([KEY_ENTRY, {**key, "n": len(items)}])
                buf += HEADER.pack(len(payload), zlib.crc32(payload), first)
                buf += payload
            assigned = []
            for i, (dataset, record) in enumerate(items):
                seq = first + i
                body = encoded(record)
                # [dataset, record] without encoding the record twice; dataset
                # names are plain identifiers (checked by the lake).
                payload = b'["' + dataset.encode() + b'",' + body + b"]"
                buf += HEADER.pack(len(payload), zlib.crc32(payload), seq)
                buf += payload
                assigned.append((seq, dataset, record, body))
            assert self._file is not None
            self._file.write(buf)
            self._file.flush()
            os.fsync(self._file.fileno())
            self.next_seq = first + len(items)
            try:
                if on_assigned is not None:
                    on_assigned(assigned)
                if self._file.tell() >= self.segment_bytes:
                    self._start_segment()
            except Exception as e:
                if key is None:
                    raise
                # The batch and its key are durable all the same: say so.
                raise Logged(first, self.next_seq - 1) from e
            return first, self.next_seq - 1

    # -- reading and trimming ------------------------------------------

    def replay(self, after_seq: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
        for path in self._segments():
            for entry in self._read_segment(path):
                if entry[0] > after_seq:
                    yield entry

    def trim(self, upto_seq: int) -> int:
        """Delete segments whose every entry is at or below ``upto_seq``."""
        with self._lock:
            segments = self._segments()
            removed = 0
            for path, nxt in zip(segments, segments[1:]):
                if path == self._file_path:
                    continue
                # A segment's entries end right before the next segment's first sequence.
                if int(nxt.stem) - 1 <= upto_seq:
                    path.unlink()
                    removed += 1
            if removed:
                _fsync_dir(self.directory)
            return removed

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
