"""The write-ahead log: accepted records survive a crash before they are indexed.

Records are appended to segment files and fsynced before an import is
acknowledged. Each entry carries its sequence number, which becomes the
record's ``docId``; the catalog's checkpoint says up to which sequence the
log has been turned into published splits, so a restart replays exactly the
rest (no loss, no duplicates).

Entry layout: ``<u32 payload length><u32 crc32 of payload><u64 seq><payload>``
with payload ``orjson([dataset, record])``. Each entry is checked on its
own (length, CRC, a sequence above the last one read): a corrupt entry (a
flipped byte, a bad sector) costs that entry only. Reading resynchronizes
on the next entry that checks out, and the skipped byte range and the
sequence numbers it held are logged as an error and kept in ``damage``;
only a corrupt tail with nothing valid after it (a crash mid-write, before
the fsync that acknowledges it) is cut off, with a warning. A write that
fails (a full disk) is truncated back, so nothing of it stays, and raises
``LogFull`` naming the cause.

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

import errno
import logging
import os
import struct
import threading
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("seclake.wal")

HEADER = struct.Struct("<IIQ")
SUFFIX = ".wal"
FORMAT_LINE = b"seclake-wal 2\n"
# Segments written before key entries existed hold none; read them the same.
FORMATS = (FORMAT_LINE, b"seclake-wal 1\n")
# The dataset slot of a key entry: never a dataset name (those are identifiers).
KEY_ENTRY = "~key"
_KEY_PREFIX = b'["' + KEY_ENTRY.encode() + b'"'
# ``decode_after`` that decodes no record (only key entries).
SKIP_RECORDS = float("inf")



def encoded(record: dict[str, Any]) -> bytes:
    """A record as compact JSON, in a block of its own size.

    orjson hands back bytes that sit in a block of at least 4 KiB whatever
    their length; a body is kept until it is indexed (the lake's pending
    queue), so an exact-size copy holds ten times less memory per record.
    """
    return bytes(memoryview(orjson.dumps(record)))

# Past this, a length field is not believed when resynchronizing.
MAX_ENTRY_BYTES = 256 * 1024 * 1024


class LogFull(OSError):
    """An append could not be written (no space, quota, I/O error); nothing of it stays in the log."""


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
        # Every corrupt byte range skipped or torn tail cut since open, for operators:
        # {"segment", "start", "end", "lost": (first seq, last seq) or None, "kind"}.
        self.damage: list[dict[str, Any]] = []

    # -- opening and recovery ------------------------------------------

    def open(self, checkpoint: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        last = checkpoint
        segments = self._segments()
        self.keys = []
        self.damage = []
        for path in segments:
            # Only key entries are decoded: a record's CRC says it is whole,
            # and its JSON was read here for nothing (a command's every start
            # read the whole live segment, up to 64 MiB, this way).
            for seq, ds, rec in self._read_segment(path, repair=path == segments[-1], keys=True, report=True,
                                                   decode_after=SKIP_RECORDS):
                last = max(last, seq)
                if ds == KEY_ENTRY:
                    self.keys.append((seq, rec))
        self.next_seq = last + 1
        self._start_segment()

    def _segments(self) -> list[Path]:
        return sorted(self.directory.glob("*" + SUFFIX))

    def _start_segment(self) -> None:
        """Switch to a new segment; if it cannot be made (a full disk), the
        current one stays open and nothing of the new one is left."""
        path = self.directory / f"{self.next_seq:020d}{SUFFIX}"
        new = open(path, "ab")
        try:
            if new.tell() == 0:
                new.write(FORMAT_LINE)
                new.flush()
                os.fsync(new.fileno())
                _fsync_dir(self.directory)
        except OSError:
            new.close()
            if path != self._file_path:
                path.unlink(missing_ok=True)
            raise
        if self._file is not None:
            self._file.close()
        self._file = new
        self._file_path = path

    def _read_segment(
        self, path: Path, repair: bool = False, keys: bool = False, report: bool = False, decode_after: float = 0,
    ) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """The entries of a segment; key entries (dataset ``KEY_ENTRY``) only with ``keys``.

        ``repair`` cuts a torn tail (the segment being written); ``report``
        logs and records every damaged range (once, at open; replays after
        it read the same ranges quietly). Records numbered ``decode_after``
        or lower are checked (length, CRC) but not decoded: they come as
        (seq, "", None).

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
        last_seq = 0
        while pos < len(data):
            entry = _entry_at(data, pos, last_seq, decode_after)
            if entry is None:
                # Not a valid entry here: find the next one that checks out.
                resume = _next_entry(data, pos + 1, last_seq)
                if resume is None:
                    break  # nothing valid after it: a torn tail, cut below
                nxt = _entry_at(data, resume, last_seq)
                assert nxt is not None
                if report:
                    self._damaged(path, pos, resume, last_seq, nxt[0], "corrupt")
                if owed:
                    # The batch lost entries: its records stay (they were
                    # acknowledged), its key does not (it promised the whole).
                    if report:
                        log.error("%s: the keyed batch around byte %d lost entries; its idempotency key is "
                                  "dropped", path, pos)
                    yield from (e for e in batch if e[1] != KEY_ENTRY)
                    batch, owed = [], 0
                pos = good = resume
                continue
            seq, dataset, record, end = entry
            # A key entry carries its batch's first sequence, which the first record then takes.
            last_seq = seq - 1 if dataset == KEY_ENTRY else seq
            pos = end
            if dataset == KEY_ENTRY:
                if owed:  # a new key while a batch is open: that batch was cut short
                    yield from (e for e in batch if e[1] != KEY_ENTRY)
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
        if good < len(data) and repair:
            # A torn tail was never acknowledged (the fsync comes after the write).
            # A keyed batch cut short goes whole: its key was never durable.
            self._damaged(path, good, len(data), last_seq, None, "torn tail")
            with open(path, "r+b") as f:
                f.truncate(good)
                os.fsync(f.fileno())
        elif good < len(data) and report:
            # Not the segment being written: its end was fsynced before the
            # next segment began, so this tail was acknowledged and is lost.
            self._damaged(path, good, len(data), last_seq, int(_next_first(path)), "corrupt tail")

    def _damaged(self, path: Path, start: int, end: int, before: int, after: int | None, kind: str) -> None:
        lost = (before + 1, after - 1) if after is not None and after > before + 1 else None
        self.damage.append({"segment": path.name, "start": start, "end": end, "lost": lost, "kind": kind})
        if kind == "torn tail":
            log.warning("%s: cut a torn tail of %d bytes at byte %d (a write that never finished; "
                        "nothing acknowledged)", path, end - start, start)
        else:
            what = f"entries {lost[0]} to {lost[1]} are lost" if lost else "no sequence number is missing"
            log.error("%s: skipped %d corrupt bytes (%d to %d); %s", path, end - start, start, end, what)

    # -- writing --------------------------------------------------------

    def append(
        self, items: Sequence[tuple[str, dict[str, Any]]], on_assigned=None, key: dict[str, Any] | None = None,
        derive=None, bodies: Sequence[bytes] | None = None,
    ) -> tuple[int, int]:
        """Append (dataset, record) items durably; return the first and last sequence.

        ``derive(first)`` runs under the log's lock once ``first``, the
        sequence of the first item, is decided, and returns more items to
        append after them in the same write: what the detector makes of the
        records, which names them by their sequence.

        ``on_assigned(seq_items)`` runs under the log's lock after the fsync, so
        callers see records in sequence order; each item is (seq, dataset,
        record, body) where body is the record as JSON, encoded once here.
        ``key`` (plain JSON) is written as the batch's key entry, durable
        with the items in the same fsync (module doc). ``bodies``: the
        first items' records encoded already (``encoded``, by a parse
        worker), not encoded again.
        """
        if not items:
            return (0, -1)
        buf = bytearray()
        with self._lock:
            first = self.next_seq
            if derive is not None:
                items = [*items, *derive(first)]
            if key is not None:
                payload = orjson.dumps([KEY_ENTRY, {**key, "n": len(items)}])
                buf += HEADER.pack(len(payload), zlib.crc32(payload), first)
                buf += payload
            assigned = []
            given = len(bodies) if bodies is not None else 0
            for i, (dataset, record) in enumerate(items):
                seq = first + i
                body = bodies[i] if i < given else encoded(record)
                # [dataset, record] without encoding the record twice; dataset
                # names are plain identifiers (checked by the lake).
                payload = b'["' + dataset.encode() + b'",' + body + b"]"
                buf += HEADER.pack(len(payload), zlib.crc32(payload), seq)
                buf += payload
                assigned.append((seq, dataset, record, body))
            assert self._file is not None
            self._write(buf)
            self.next_seq = first + len(items)
            try:
                if on_assigned is not None:
                    on_assigned(assigned)
                if self._file.tell() >= self.segment_bytes:
                    self._roll()
            except Exception as e:
                if key is None:
                    raise
                # The batch and its key are durable all the same: say so.
                raise Logged(first, self.next_seq - 1) from e
            return first, self.next_seq - 1

    def _write(self, buf: bytearray) -> None:
        """Write and fsync ``buf`` whole, or leave the segment as it was.

        On a full disk a write can land in part: the entries that did land
        would be replayed after a restart though the import was refused,
        and later entries would follow a torn one. So a failed write is
        truncated back to where it began before the error goes up.
        """
        assert self._file is not None
        start = self._file.tell()
        try:
            self._file.write(buf)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as e:
            try:
                self._file.seek(start)
                self._file.truncate(start)
                os.fsync(self._file.fileno())
            except OSError:
                # Cannot even cut it back: start a new segment, so nothing is
                # appended after the torn bytes; at open they are found, logged
                # and skipped (an entry is checked on its own).
                log.exception("%s: could not truncate a failed write back to byte %d", self._file_path, start)
                self._reopen_after_failure()
            what = "the disk is full" if e.errno in (errno.ENOSPC, errno.EDQUOT) else f"the write failed ({e})"
            log.error("%s: an append of %d bytes was refused: %s", self._file_path, len(buf), what)
            raise LogFull(e.errno, f"write-ahead log: {what}; nothing of this batch was stored") from e

    def _roll(self) -> None:
        """Start the next segment; the batch is durable already, so a failure
        here (a full disk) must not fail it: the current segment goes on, and
        the next append tries again."""
        try:
            self._start_segment()
        except OSError:
            log.exception("could not start a new log segment after %s; appending to it still", self._file_path)

    def _reopen_after_failure(self) -> None:
        try:
            self._start_segment()
        except OSError:
            log.exception("could not start a new log segment after a failed write")

    # -- reading and trimming ------------------------------------------

    def _spans(self) -> list[tuple[Path, int | None]]:
        """Each segment and the last sequence it can hold (None: the newest,
        still open to appends): a segment's entries end right before the next
        segment's first sequence, its name."""
        segments = self._segments()
        return [(path, int(nxt.stem) - 1 if nxt is not None else None)
                for path, nxt in zip(segments, [*segments[1:], None])]

    def replay(self, after_seq: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
        for path, last in self._spans():
            if last is not None and last <= after_seq:
                continue
            for entry in self._read_segment(path, decode_after=after_seq):
                if entry[0] > after_seq:
                    yield entry

    def size_bytes(self) -> int:
        """Bytes of the segments on disk (a segment trimmed meanwhile counts 0)."""
        total = 0
        for path in self._segments():
            try:
                total += path.stat().st_size
            except FileNotFoundError:
                pass
        return total

    def trim(self, upto_seq: int) -> int:
        """Delete segments whose every entry is at or below ``upto_seq``."""
        with self._lock:
            removed = 0
            for path, last in self._spans():
                if path == self._file_path or last is None:
                    continue
                if last <= upto_seq:
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


def _entry_at(data: bytes, pos: int, after: int, decode_after: float = 0) -> tuple[int, str, Any, int] | None:
    """(seq, dataset, record, end) of the entry at ``pos`` if it checks out:
    whole, its CRC right, its sequence above ``after``, its payload JSON.
    A record numbered ``decode_after`` or lower is not decoded (its JSON not
    checked): (seq, "", None, end); key entries always are."""
    end = pos + HEADER.size
    if end > len(data):
        return None
    length, crc, seq = HEADER.unpack_from(data, pos)
    if length > MAX_ENTRY_BYTES or end + length > len(data) or seq <= after:
        return None
    payload = data[end:end + length]
    if zlib.crc32(payload) != crc:
        return None
    if seq <= decode_after and not payload.startswith(_KEY_PREFIX):
        return seq, "", None, end + length
    try:
        dataset, record = orjson.loads(payload)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None
    return seq, dataset, record, end + length


def _next_entry(data: bytes, start: int, after: int) -> int | None:
    """The first position from ``start`` where an entry checks out (a CRC
    match on a believable length and sequence: a false match is a 1 in 2^32
    chance on top of those)."""
    for pos in range(start, len(data) - HEADER.size + 1):
        length, _crc, seq = HEADER.unpack_from(data, pos)
        if seq > after and length <= len(data) - pos - HEADER.size and _entry_at(data, pos, after) is not None:
            return pos
    return None


def _next_first(path: Path) -> str:
    """The first sequence of the segment after ``path``: its name."""
    later = sorted(p.stem for p in path.parent.glob("*" + SUFFIX) if p.stem > path.stem)
    return later[0] if later else "0"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
