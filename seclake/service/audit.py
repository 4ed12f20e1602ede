"""The audit log: every login attempt and every call, kept in the database."""

from __future__ import annotations

from typing import Any

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from seclake.db.database import Database
from seclake.db.models import AuditEntry
from seclake.errors import LimitExceeded
from seclake.service.clock import Clock, iso

# Ids as record ids: zero-padded, so ordering them as strings orders them as numbers.
ID_WIDTH = 20


def _cut(text: str | None, length: int) -> str | None:
    return None if text is None else text[:length]


class Audit:
    def __init__(self, db: Database, clock: Clock):
        self.db = db
        self.clock = clock

    def login(self, username: str, client: str, succeeded: bool, detail: str | None = None) -> None:
        self._add(
            kind="login", username=username, call="auth/login", client=client,
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
        query = select(AuditEntry)
        if range_from is not None:
            query = query.where(AuditEntry.created_on >= _moment(range_from))
        if range_to is not None:
            # created_on keeps microseconds; the range is inclusive of its last millisecond.
            query = query.where(AuditEntry.created_on < _moment(range_to + 1))
        with self.db.session() as s:
            rows = list(s.scalars(query.order_by(AuditEntry.id).limit(cap + 1)))
        if len(rows) > cap:
            raise LimitExceeded("number of audit entries in the range", f"more than {cap}", cap)
        return [(str(e.id).zfill(ID_WIDTH), audit_record(e)) for e in rows]

    def time_bounds(self) -> tuple[int, int] | None:
        with self.db.session() as s:
            lo, hi = s.execute(select(func.min(AuditEntry.created_on), func.max(AuditEntry.created_on))).one()
        return None if lo is None else (_ms(lo), _ms(hi))

    def _add(self, *, username: str | None, call: str, client: str, detail: str | None, **rest: Any) -> None:
        # Client-supplied strings are cut to the column sizes, never refused:
        # the audit must record exactly the odd requests.
        with self.db.session(write=True) as s:
            s.add(
                AuditEntry(
                    created_on=self.clock(), username=_cut(username, 128), call=_cut(call, 200) or "",
                    client=_cut(client, 64) or "", detail=_cut(detail, 500), **rest,
                )
            )


def audit_record(e: AuditEntry) -> dict[str, Any]:
    """One entry as ds/audit_search answers and searches it (dataset ``audit``)."""
    return {
        "createdOn": _ms(e.created_on), "kind": e.kind, "username": e.username, "call": e.call,
        "client": e.client, "outcome": e.outcome, "status": e.status, "durationMs": e.duration_ms,
        "detail": e.detail,
    }


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)


def _ms(moment: datetime) -> int:
    return (moment - EPOCH) // MS


def _moment(ms: int) -> datetime:
    # Bounds far outside what datetime holds clamp to its ends.
    ms = max(min(ms, 253402300799000), -62135596800000)
    return EPOCH + ms * MS
