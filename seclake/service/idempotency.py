"""Exactly-once imports: an ``Idempotency-Key`` makes a retried import a replay, not a second copy.

A client that lost the answer to an import (its connection dropped, or the
ingest node died after logging the records but before replying) cannot tell
whether the records are stored. With a key (the ``Idempotency-Key`` request
header of the IETF httpapi draft, or ``seclake import --idempotency-key``)
it can simply send the same import again:

* the first request with a key is stored as without one; its reply (the
  counts) is remembered with the key and a digest of the request (the
  parameters that change the outcome and the body's lines after gzip,
  ``RequestDigest``);
* the same key and the same request again: the remembered reply, nothing
  stored again (the API adds ``Idempotent-Replayed: true``);
* the same key with a different request: ``KeyReused`` (422), nothing stored;
* the same key while the first is still being stored: ``Conflict`` (409),
  nothing stored.

Keys are scoped to the caller (``user_scope``: the user's id and creation
time, so a user deleted and made again does not inherit keys; ``LOCAL`` for
the CLI), so users can neither collide with nor probe each other's keys.
They are kept ``idempotency_key_hours`` (default 24) and deleted by the
retention schedule afterwards; an expired key is a new key.

Where the decision is taken: only where the lake is written, the one
writer (embedded server, CLI, or a cluster's ingest node, to which the
``ingestor`` forwards the key with the records). The keys in use are held
in memory there, so two API nodes receiving the same retry cannot both
store it: the second finds the first in flight (409) or stored (replay).

Why a crash cannot store twice or forget a key
----------------------------------------------

The key must be durable *together with* the records, so it is written into
the write-ahead log in the same write and fsync as them: a key entry at the
head of the batch naming how many entries follow (``storage/wal.py``). At
open, the log keeps a keyed batch only whole: a crash mid-write (before the
fsync that acknowledges it) cuts the key entry off with every record of the
batch. So after any crash, either

* the batch is in the log whole, key included: the log's open hands the key
  back (``WriteAheadLog.keys``), ``start`` records it here, and the retry is
  a replay (so is a retry of an import that failed *after* the fsync, in
  the same process: the log says so with ``Logged``); or
* nothing of it is: the retry finds no key and stores the records once.

The database row (table ``idempotency_keys``) is the long-term home of a
key, because the log is trimmed once its records are published in splits.
The row is written just after the fsync, outside the log's lock; until it
is written the key lives in memory (``_unrecorded``) and ``hold`` keeps the
lake from trimming the log segment that holds the key entry (a lower bound
of the batch's sequence is held from before its append). So a key is always
in at least one durable place: the log segment, until the row is committed.
A crash between the fsync and the row finds the key in the log at restart;
a database that refuses the row leaves the key in memory and the segment
kept, and the write is tried again on the next keyed import and by the
retention schedule. A batch with no accepted record (every line rejected)
writes nothing to the log; its key goes to the database directly, best
effort, since a retry of it stores nothing either way.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import orjson
from sqlalchemy import BigInteger, String, delete, select
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import JSON

from seclake.db.base import Base
from seclake.db.database import Database
from seclake.db.models import User
from seclake.errors import Conflict, Unprocessable, ValidationFailed
from seclake.ingest.reader import Line
from seclake.storage.wal import Logged

log = logging.getLogger("seclake.idempotency")

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY = 255
# Letters, digits and a few URL-safe marks: UUIDs, ULIDs, base64 and
# "run.file.batch" names fit; nothing that needs escaping in logs or SQL.
KEY_PATTERN = re.compile(r"[A-Za-z0-9._:~+/=-]{1,%d}" % MAX_KEY)
# The scope of keys given to ``seclake import`` (the operator at the shell).
LOCAL = "local"


class IdempotencyKey(Base):
    """A key's remembered outcome: kept ``idempotency_key_hours`` after its import."""

    __tablename__ = "idempotency_keys"

    scope: Mapped[str] = mapped_column(String(100), primary_key=True)
    key: Mapped[str] = mapped_column(String(MAX_KEY), primary_key=True)
    digest: Mapped[str] = mapped_column(String(64))
    reply: Mapped[dict[str, Any]] = mapped_column(JSON)
    first_doc: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    last_doc: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created_ms: Mapped[int] = mapped_column(BigInteger, index=True)


def parse_key(values: list[str], where: str = HEADER) -> str | None:
    """The key of a request's header values (none: None); a bad one is a ValidationFailed naming the header.

    The draft makes the value a structured-header string (``"..."``); a
    bare token is accepted too, as most clients send one.
    """
    if not values:
        return None
    if len(values) > 1:
        raise ValidationFailed(where, "sent more than once; send one key per request")
    value = values[0].strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if not KEY_PATTERN.fullmatch(value):
        raise ValidationFailed(
            where,
            f"must be 1 to {MAX_KEY} characters of letters, digits and - _ . : ~ + / = "
            f"(optionally in double quotes), not {values[0][:80]!r}",
        )
    return value


def user_scope(db: Database, username: str) -> str:
    """The key scope of a user: its id and creation time (ids of deleted users can come back on SQLite)."""
    with db.session() as s:
        row = s.execute(select(User.id, User.created_on).where(User.username == username)).one()
    return f"user:{row.id}:{int(row.created_on.timestamp() * 1_000_000)}"


class RequestDigest:
    """SHA-256 of what decides an import's outcome: its parameters, then its lines as read (after gzip).

    Lines, not body bytes: a client that compresses its retry again (a new
    gzip timestamp) sends the same import. ``take`` ends one digest and
    starts the next (the CLI's batches each have one).
    """

    def __init__(self, **params: Any):
        self._start = orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
        self._hash = hashlib.sha256(self._start)

    def lines(self, lines: Iterable[Line]) -> Iterator[Line]:
        for line in lines:
            self._hash.update(b"%d %d " % (line.number, line.truncated))
            self._hash.update(line.text.encode("utf-8", "surrogatepass"))
            self._hash.update(b"\n")
            yield line

    def take(self) -> str:
        done = self._hash.hexdigest()
        self._hash = hashlib.sha256(self._start)
        return done


def attempt(scope: str, key: str, digest: str, reply: dict[str, Any], records: int) -> dict[str, Any]:
    """What a keyed import carries to the lake's writer (plain JSON: it crosses Ray and goes into the log)."""
    return {"scope": scope, "key": key, "digest": digest, "reply": reply, "records": records}


class Stored(NamedTuple):
    """The outcome of a keyed append: docIds, the reply, and whether it was remembered rather than stored."""

    first: int | None
    last: int | None
    reply: dict[str, Any]
    replayed: bool


class Idempotency:
    """The keys of one lake's writer; a component started after the lake (it reads the log's keys)."""

    def __init__(self, db: Database, lake: Any, window_hours: float, clock: Callable[[], int] | None = None):
        self.db = db
        self.lake = lake
        self.window_ms = int(window_hours * 3_600_000)
        self.clock = clock or (lambda: int(time.time() * 1000))
        self._lock = threading.Lock()
        self._recording = threading.Lock()
        # (scope, key) -> the lowest log sequence its batch can get.
        self._in_flight: dict[tuple[str, str], int] = {}
        # (scope, key) -> its log key entry with "first" and "last": durable, not yet a row.
        self._unrecorded: dict[tuple[str, str], dict[str, Any]] = {}

    # -- life cycle -------------------------------------------------------

    def start(self) -> None:
        self.lake.wal_holds.append(self.hold)
        cutoff = self._cutoff()
        with self._lock:
            for seq, entry in self.lake.wal.keys:
                if entry["at"] >= cutoff:
                    self._unrecorded[(entry["scope"], entry["key"])] = _placed(entry, seq)
        if self._unrecorded:
            log.info("recording %d import keys found in the write-ahead log", len(self._unrecorded))
        self.record()

    def stop(self) -> None:
        self.record()
        if self.hold in self.lake.wal_holds:
            self.lake.wal_holds.remove(self.hold)

    # -- the one decision ---------------------------------------------------

    def once(self, request: dict[str, Any], append: Callable[[dict[str, Any]], tuple[int | None, int | None]]) -> Stored:
        """Store a keyed import with ``append(key entry)`` unless its key says it is stored already.

        ``append`` logs the records with the key entry in the same fsync and
        returns their first and last docId ((None, None) when there is none).
        """
        ident = (request["scope"], request["key"])
        shown = request["key"][:80]
        with self._lock:
            if ident in self._in_flight:
                raise Conflict(
                    f"{HEADER} {shown!r} belongs to an import still being stored; nothing was stored "
                    "for this request: send it again once the first one is answered"
                )
            known = self._unrecorded.get(ident) or self._row(ident)
            if known is not None and known["at"] < self._cutoff():
                known = None
            if known is not None:
                if known["digest"] != request["digest"]:
                    raise Unprocessable(
                        f"{HEADER} {shown!r} was used for a different import (other body or parameters) "
                        "in the last keys' window; nothing was stored: use a new key for a new import"
                    )
                return Stored(known["first"], known["last"], known["reply"], True)
            self._in_flight[ident] = self.lake.wal.next_seq
        try:
            entry = {**request, "at": self.clock()}
            try:
                first, last = append(entry)
            except Logged as e:
                # Stored with its key even though what followed the fsync
                # failed: the retry of this failed import is a replay.
                with self._lock:
                    self._unrecorded[ident] = _placed(entry, e.first)
                self.record()
                raise
            with self._lock:
                self._unrecorded[ident] = {**entry, "first": first, "last": last}
        finally:
            with self._lock:
                self._in_flight.pop(ident, None)
        self.record()
        return Stored(first, last, request["reply"], False)

    def _row(self, ident: tuple[str, str]) -> dict[str, Any] | None:
        with self.db.session() as s:
            row = s.get(IdempotencyKey, ident)
            if row is None:
                return None
            return {
                "digest": row.digest, "reply": row.reply, "first": row.first_doc,
                "last": row.last_doc, "at": row.created_ms,
            }

    # -- durability -----------------------------------------------------------

    def hold(self) -> int:
        """The newest log sequence the keys no longer need (``Lake.wal_holds``)."""
        with self._lock:
            seqs = list(self._in_flight.values())
            seqs += [e["first"] for e in self._unrecorded.values() if e["first"] is not None]
        return min(seqs) - 1 if seqs else sys.maxsize

    def record(self) -> int:
        """Write the keys known only to the log (and memory) as rows; the number written.

        A refusal is logged and leaves them for the next try: the log keeps
        them meanwhile (``hold``).
        """
        with self._recording:
            with self._lock:
                pending = list(self._unrecorded.items())
            if not pending:
                return 0
            try:
                with self.db.session(write=True) as s:
                    for (scope, key), e in pending:
                        row = s.get(IdempotencyKey, (scope, key))
                        if row is not None:
                            if row.created_ms >= e["at"]:
                                continue  # recorded before a crash; the log still had it
                            s.delete(row)  # an expired use of the same key
                            s.flush()
                        s.add(IdempotencyKey(
                            scope=scope, key=key, digest=e["digest"], reply=e["reply"],
                            first_doc=e["first"], last_doc=e["last"], created_ms=e["at"],
                        ))
            except Exception as exc:  # noqa: BLE001 - the log keeps the keys; tried again later
                log.warning("could not record %d import keys (%s); the write-ahead log keeps them", len(pending), exc)
                return 0
            with self._lock:
                for ident, e in pending:
                    if self._unrecorded.get(ident) is e:
                        del self._unrecorded[ident]
            return len(pending)

    # -- expiry ---------------------------------------------------------------

    def _cutoff(self) -> int:
        return self.clock() - self.window_ms

    def expire(self) -> int:
        """Forget keys older than the window (the retention schedule calls this); the rows deleted."""
        self.record()
        cutoff = self._cutoff()
        with self._lock:
            for ident in [i for i, e in self._unrecorded.items() if e["at"] < cutoff]:
                del self._unrecorded[ident]
        with self.db.session(write=True) as s:
            return s.execute(delete(IdempotencyKey).where(IdempotencyKey.created_ms < cutoff)).rowcount or 0


def _placed(entry: dict[str, Any], first: int) -> dict[str, Any]:
    """A key entry read back from the log, with its batch's docIds (the records come first, then behaviors)."""
    records = entry["records"]
    return {**entry, "first": first, "last": first + records - 1}
