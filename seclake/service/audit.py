"""The audit log: every login attempt and every call, kept in the database."""

from __future__ import annotations

import atexit
import logging
import re
import threading
from typing import Any

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, insert, select

from seclake.db.database import Database
from seclake.db.models import AuditEntry, User
from seclake.errors import LimitExceeded
from seclake.service.clock import Clock, iso

# Ids as record ids: zero-padded, so ordering them as strings orders them as numbers.
ID_WIDTH = 20


log = logging.getLogger("seclake.audit")


# C0, DEL, C1 and the bidirectional overrides: a name sent with them would
# move the cursor, clear the screen or reorder the line where entries are
# read (`fluency audit list`, a terminal, the web page).
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _cut(text: str | None, length: int) -> str | None:
    return None if text is None else text[:length]


def _shown(text: str | None, length: int) -> str | None:
    """A client-sent name as the audit keeps it: unprintables removed, cut."""
    return None if text is None else UNPRINTABLE.sub("", text[:4 * length])[:length]


class Audit:
    """Audit entries are written by a background writer, a batch per transaction.

    A call's answer does not wait for its audit row: entries are queued and
    committed within ``FLUSH_SECONDS`` (or at once past ``FLUSH_BATCH``), in
    order. Every read of the audit flushes first, and so do ``close()`` and
    the process's exit; a crash loses at most the last fraction of a second.
    """

    FLUSH_SECONDS = 0.1
    FLUSH_BATCH = 500

    def __init__(self, db: Database, clock: Clock):
        self.db = db
        self.clock = clock
        self._queue: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._closed = False

    def login(
        self, username: str, client: str, succeeded: bool, detail: str | None = None, call: str = "auth/login",
    ) -> None:
        """A sign-in attempt; ``call`` names the way (auth/login, auth/oidc/<provider>)."""
        self._add(
            kind="login", username=username, call=call, client=client,
            outcome="OK" if succeeded else "ERROR", status=200 if succeeded else 401,
            duration_ms=0, detail=detail,
        )

    def call(
        self, username: str | None, call: str, client: str, outcome: str, status: int,
        duration_ms: int, detail: str | None = None,
    ) -> None:
        self._add(
            kind="call", username=username, call=call, client=client, outcome=outcome,
            status=status, duration_ms=duration_ms, detail=detail,
        )

    def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest entries first."""
        self.flush()
        with self.db.session() as s:
            rows = s.scalars(select(AuditEntry).order_by(AuditEntry.id.desc()).limit(limit))
            return [
                {
                    "id": e.id, "createdOn": iso(e.created_on), "kind": e.kind, "username": e.username,
                    "call": e.call, "client": e.client, "outcome": e.outcome, "status": e.status,
                    "durationMs": e.duration_ms, "detail": e.detail,
                }
                for e in rows
            ]

    def records(self, range_from: int | None, range_to: int | None, cap: int) -> list[tuple[str, dict[str, Any]]]:
        """The entries created in [range_from, range_to] (epoch ms), as searchable records.

        Past ``cap`` entries the search is refused; the message does not say
        how many there are (a data policy may hide some of them).
        """
        self.flush()
        query = select(AuditEntry)
        if range_from is not None:
            query = query.where(AuditEntry.created_on >= _moment(range_from))
        if range_to is not None:
            # created_on keeps microseconds; the range is inclusive of its last millisecond.
            query = query.where(AuditEntry.created_on < _moment(range_to + 1))
        query = query.add_columns(User.email, User.roles).outerjoin(User, User.username == AuditEntry.username)
        with self.db.session() as s:
            rows = list(s.execute(query.order_by(AuditEntry.id).limit(cap + 1)))
        if len(rows) > cap:
            raise LimitExceeded("number of audit entries in the range", f"more than {cap}", cap)
        return [(str(e.id).zfill(ID_WIDTH), audit_record(e, email, roles)) for e, email, roles in rows]

    def time_bounds(self) -> tuple[int, int] | None:
        self.flush()
        with self.db.session() as s:
            lo, hi = s.execute(select(func.min(AuditEntry.created_on), func.max(AuditEntry.created_on))).one()
        return None if lo is None else (_ms(lo), _ms(hi))

    def _add(self, *, username: str | None, call: str, client: str, detail: str | None, **rest: Any) -> None:
        # Client-supplied strings are cut to the column sizes, never refused:
        # the audit must record the odd requests too; names lose what would
        # garble their display.
        entry = dict(
            created_on=self.clock(), username=_shown(username, 128), call=_shown(call, 200) or "",
            client=_shown(client, 64) or "", detail=_cut(detail, 500), **rest,
        )
        with self._cond:
            if self._closed:
                self._write([entry])
                return
            self._queue.append(entry)
            if self._writer is None:
                self._writer = threading.Thread(target=self._run, name="seclake-audit", daemon=True)
                self._writer.start()
                atexit.register(self._flush_at_exit)
            if len(self._queue) >= self.FLUSH_BATCH:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                self._cond.wait(self.FLUSH_SECONDS)
            try:
                self.flush()
            except Exception:
                log.exception("writing audit entries failed; will retry")

    def flush(self) -> None:
        """Write every queued entry now, in order."""
        with self._write_lock:
            with self._cond:
                batch, self._queue = self._queue, []
            if batch:
                try:
                    self._write(batch)
                except Exception:
                    with self._cond:
                        self._queue[:0] = batch
                    raise

    def _write(self, batch: list[dict[str, Any]]) -> None:
        # One bulk INSERT: building ORM objects cost more than the write.
        with self.db.session(write=True) as s:
            s.execute(insert(AuditEntry), batch)

    def _flush_at_exit(self) -> None:
        try:
            self.flush()
        except Exception:
            # The database may be gone by now (a test dropped it); say so, quietly.
            log.warning("audit entries could not be written at exit", exc_info=True)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._writer is not None:
            self._writer.join()
            self._writer = None
        self.flush()


def audit_record(e: AuditEntry, email: str | None = None, roles: list[str] | None = None) -> dict[str, Any]:
    """One entry as ds/audit_search answers and searches it (dataset ``audit``):
    seclake's own fields, then the same facts under the names of the clients'
    audit record (``email`` and ``role`` are the user's now, when it exists)."""
    created = _ms(e.created_on)
    return {
        "createdOn": created, "kind": e.kind, "username": e.username, "call": e.call,
        "client": e.client, "outcome": e.outcome, "status": e.status, "durationMs": e.duration_ms,
        "detail": e.detail,
        "account": "", "email": email or "", "role": ",".join(roles or []), "clientIP": e.client,
        "country": "", "city": "", "dur": e.duration_ms, "category": e.kind,
        "error": e.detail if e.outcome != "OK" and e.detail else "",
        "dayIndex": e.created_on.strftime("%Y-%m-%d"), "partition": "default",
        "action": e.call, "action_type": e.outcome, "action_info": e.detail or "",
    }


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)


def _ms(moment: datetime) -> int:
    return (moment - EPOCH) // MS


def _moment(ms: int) -> datetime:
    # Bounds far outside what datetime holds clamp to its ends.
    ms = max(min(ms, 253402300799000), -62135596800000)
    return EPOCH + ms * MS
