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
on the next entry that checks out, so a damaged format line costs no
record either (a segment's name is its first sequence, and both formats
lay entries out the same). Damage is told as one of two cases, at open:

- a *torn* tail: at the end of the segment being written, an entry whose
  length runs past the end of the file, or a zero-filled tail (a crash
  mid-write, before the fsync that acknowledges it). Cut, with a warning.
- *damaged* acknowledged data: anything else (an entry whole in length that
  fails its CRC, damage with valid entries after it, any damage in a closed
  segment, whose end was fsynced before the next one began). Logged as an
  error naming the sequences lost, left in place, its sequences never
  given again, and kept in the damage ledger (``storage/damage.py``) until
  an operator acknowledges it.

Either way the bytes are first copied beside the segment
(``<segment>.damaged-<offset>``, ``<segment>.torn-<offset>``) and listed in
``damage``. A write that fails (a full disk) is truncated back, so nothing
of it stays, and raises ``LogFull`` naming the cause.

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
import re
import struct
import threading
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from seclake.storage.damage import DamageLedger

log = logging.getLogger("seclake.wal")

HEADER = struct.Struct("<IIQ")
SUFFIX = ".wal"
FORMAT_LINE = b"seclake-wal 2\n"
# Segments written before key entries existed hold none; read them the same.
FORMATS = (FORMAT_LINE, b"seclake-wal 1\n")
# Any version's format line: a newer one is refused, not salvaged as damage.
_VERSION_LINE = re.compile(rb"seclake-wal (\d+)\n")
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
        # Every damaged byte range skipped or torn tail cut since open, for operators:
        # {"segment", "start", "end", "lost": (first seq, last seq or None: not known) or None,
        #  "kind": "torn" or "damaged", "quarantine": the copy's file name, "message"}.
        self.damage: list[dict[str, Any]] = []
        # Damage to acknowledged data, kept until an operator acknowledges it.
        self.ledger = DamageLedger(directory)
        # The highest sequence a damaged tail of the segment being written may
        # have held: never given again.
        self._floor = 0

    # -- opening and recovery ------------------------------------------

    def open(self, checkpoint: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        last = checkpoint
        segments = self._segments()
        self.keys = []
        self.damage = []
        self._floor = 0
        for path in segments:
            # Only key entries are decoded: a record's CRC says it is whole,
            # and its JSON was read here for nothing (a command's every start
            # read the whole live segment, up to 64 MiB, this way).
            for seq, ds, rec in self._read_segment(path, repair=path == segments[-1], keys=True, report=True,
                                                   decode_after=SKIP_RECORDS):
                last = max(last, seq)
                if ds == KEY_ENTRY:
                    self.keys.append((seq, rec))
        # A segment's name was the next sequence when it began: sequences below
        # it were given, even where the entries that held them are unreadable.
        newest = _first_seq(segments[-1]) - 1 if segments else 0
        self.next_seq = max(last, self._floor, newest) + 1
        self._start_segment()
        self.ledger.record(self.damage)

    def _segments(self) -> list[Path]:
        return sorted(self.directory.glob("*" + SUFFIX))

    def _start_segment(self) -> None:
        """Switch to a new segment; if it cannot be made (a full disk), the
        current one stays open and nothing of the new one is left."""
        path = self.directory / f"{self.next_seq:020d}{SUFFIX}"
        # Unbuffered: a write refused by a full disk must leave no bytes in a
        # Python buffer, which a later seek, write or close would land in the
        # segment after the refusal was answered (a refused batch replayed
        # after a restart, torn entries before the next batch).
        new = open(path, "ab", buffering=0)
        try:
            if new.tell() == 0:
                _write_all(new, FORMAT_LINE)
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
        # A segment's name is its first sequence: nothing in it is numbered lower.
        last_seq = _first_seq(path) - 1
        head = next((line for line in FORMATS if data.startswith(line)), None)
        if head is None:
            if repair and len(data) < len(FORMAT_LINE):
                # Crashed while creating the segment: nothing was acknowledged in it.
                path.unlink()
                return
            newer = _VERSION_LINE.match(data)
            if newer and int(newer[1]) > 2 and _entry_at(data, newer.end(), last_seq) is None:
                raise ValueError(f"{path}: a write-ahead log segment of format {int(newer[1])}, written by a newer "
                                 "seclake (this one reads formats 1 and 2); run that version")
            # A damaged format line: the entries after it are read all the same
            # (resynchronizing, below), and it is reported as a damaged range.
            head = b""
        pos = good = len(head)
        good_seq = last_seq  # the last sequence read up to ``good``
        batch: list[tuple[int, str, dict[str, Any]]] = []
        owed = 0  # entries of the open keyed batch still to read
        while pos < len(data):
            entry = _entry_at(data, pos, last_seq, decode_after)
            if entry is None:
                # Not a valid entry here: find the next one that checks out.
                resume = _next_entry(data, pos + 1, last_seq)
                if resume is None:
                    break  # nothing valid after it: a damaged or torn tail, below
                nxt = _entry_at(data, resume, last_seq)
                assert nxt is not None
                if report:
                    self._damaged(path, data, pos, resume, _between(last_seq, nxt[0]), "damaged")
                if owed:
                    # The batch lost entries: its records stay (they were
                    # acknowledged), its key does not (it promised the whole).
                    if report:
                        log.error("%s: the keyed batch around byte %d lost entries; its idempotency key is "
                                  "dropped", path, pos)
                    yield from (e for e in batch if e[1] != KEY_ENTRY)
                    batch, owed = [], 0
                pos = good = resume
                good_seq = last_seq
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
                good, good_seq = pos, last_seq
                continue
            if not owed:
                yield from batch
                batch = []
                good, good_seq = pos, last_seq
        if good >= len(data):
            return
        if repair and good >= len(FORMAT_LINE) and _torn(data, good, good_seq):
            # Never acknowledged (the fsync comes after the write): cut. A
            # keyed batch cut short goes whole: its key was never durable.
            self._damaged(path, data, good, len(data), None, "torn")
            with open(path, "r+b") as f:
                f.truncate(good)
                os.fsync(f.fileno())
        elif repair:
            # The segment being written ends in acknowledged entries that are
            # damaged: they stay, appends go to a new segment, and what their
            # headers still name is never numbered again.
            named = _last_named(data, good, good_seq)
            # A tail not torn holds a header at least: one entry, if none is named.
            self._floor = max(self._floor, named or good_seq + 1, _first_seq(path))
            self._damaged(path, data, good, len(data), (good_seq + 1, named), "damaged")
        elif report:
            # Not the segment being written: its end was fsynced before the
            # next segment began, so this tail was acknowledged and is lost.
            self._damaged(path, data, good, len(data), _between(good_seq, int(_next_first(path))), "damaged")

    def _damaged(self, path: Path, data: bytes, start: int, end: int, lost: tuple[int, int | None] | None,
                 kind: str) -> None:
        """Copy the range beside the segment, log it as what it is, and list it in ``damage``."""
        name, size = path.name, end - start
        copy = self._quarantine(path, data[start:end], f"{kind}-{start}")
        kept = copy or "nowhere (the copy failed, see above)"
        if kind == "torn":
            message = (f"torn tail of {size} bytes at offset {start} in segment {name}: never acknowledged, cut "
                       f"(its bytes kept in {kept})")
            log.warning("%s", message)
        else:
            if start == 0:
                what = "damaged format line" if end <= len(FORMAT_LINE) else "damaged format line and entries"
            else:
                what = "damaged entry" if lost is not None and lost[0] == lost[1] else "damaged entries"
            if lost is None:
                gone = "no record lost"
            elif lost[1] is None:
                gone = f"records from seq {lost[0]} on lost (how many is not known: their headers are damaged)"
            else:
                gone = f"records between seq {lost[0]} and {lost[1]} lost"
            message = (f"{what} at offset {start} in segment {name} (acknowledged data): {size} bytes quarantined "
                       f"to {kept}, {gone}")
            log.error("%s", message)
        self.damage.append({"segment": name, "start": start, "end": end, "lost": lost, "kind": kind,
                            "quarantine": copy, "message": message})

    def _quarantine(self, path: Path, chunk: bytes, suffix: str) -> str | None:
        """Keep ``chunk`` in ``<segment>.<suffix>`` (once: a later start finds the same range)."""
        copy = path.with_name(f"{path.name}.{suffix}")
        try:
            if not copy.exists() or copy.stat().st_size != len(chunk):
                with open(copy, "wb") as f:
                    f.write(chunk)
                    f.flush()
                    os.fsync(f.fileno())
                _fsync_dir(path.parent)
        except OSError:
            log.exception("%s: could not copy %d damaged bytes to %s", path, len(chunk), copy.name)
            return None
        return copy.name

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
            _write_all(self._file, buf)
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
                    # A torn tail's copy goes with its segment; a damaged range's
                    # stays (acknowledged data someone may still recover).
                    for torn in path.parent.glob(path.name + ".torn-*"):
                        torn.unlink(missing_ok=True)
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


def _torn(data: bytes, pos: int, after: int) -> bool:
    """Whether the bytes from ``pos`` to the end (nothing valid after them)
    are a write cut short: ``after`` is the last sequence read before them.

    The entries of an open keyed batch that check out are passed over; then
    what is left is cut in its header, a header naming the next sequence
    whose payload runs past the end of the file (and is not a whole payload
    under a damaged length), or zeros to the end (a file extended, its data
    never written). A payload whole in length that fails its CRC, or a
    header naming any other sequence, is damage.
    """
    while (entry := _entry_at(data, pos, after, SKIP_RECORDS)) is not None:
        after = entry[0] - 1 if entry[1] == KEY_ENTRY else entry[0]
        pos = entry[3]
    rest = data[pos:]
    if not rest.strip(b"\0") or len(rest) < HEADER.size:
        return True
    length, crc, seq = HEADER.unpack_from(rest)
    if seq != after + 1:
        return False
    body = rest[HEADER.size:]
    if len(body) < length:
        return zlib.crc32(body) != crc
    # A payload ends in "]": a zero there, and after it, never landed.
    return not body[length - 1:].strip(b"\0")


def _last_named(data: bytes, pos: int, after: int) -> int | None:
    """The highest sequence the headers of a damaged tail name, followed by
    their lengths, of those the tail has room for (a damaged header names none)."""
    most = after + (len(data) - pos) // (HEADER.size + 2)
    named = None
    while pos + HEADER.size <= len(data):
        length, _crc, seq = HEADER.unpack_from(data, pos)
        if not after < seq <= most:
            break
        named = max(named or 0, seq)
        pos += HEADER.size + length
    return named


def _between(before: int, after: int) -> tuple[int, int] | None:
    """The sequences lost between two entries read, or None."""
    return (before + 1, after - 1) if after > before + 1 else None


def _first_seq(path: Path) -> int:
    """A segment's first sequence: its name (1 for a name that is not one)."""
    try:
        return int(path.stem)
    except ValueError:
        return 1


def _next_first(path: Path) -> str:
    """The first sequence of the segment after ``path``: its name."""
    later = sorted(p.stem for p in path.parent.glob("*" + SUFFIX) if p.stem > path.stem)
    return later[0] if later else "0"


def _write_all(f, data: bytes | bytearray) -> None:
    """Write ``data`` whole to an unbuffered file: the OS may take part of
    a write (a short write), and the rest is written after it."""
    view = memoryview(data)
    while view:
        view = view[f.write(view):]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
