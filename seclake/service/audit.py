"""The audit log: every login attempt and every call, kept in the database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from seclake.db.database import Database
from seclake.db.models import AuditEntry
from seclake.service.clock import Clock, iso


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
