"""The outbox: every notification decided, kept until it is delivered or given up.

A row of ``notify_deliveries`` is written in the detector's save (or a
triage) transaction, so a crash loses none and makes none twice; the sender
(``sender.py``) reads the due ones and marks each sent right after its
destination accepted it. Statuses: ``pending`` (to send at ``next_ms``),
``sent``, ``failed`` (retries ran out: kept, shown, resendable). While an
attempt runs the row is ``sending`` (shown as pending).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Index, Integer, String, delete, func, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from seclake.db.base import Base
from seclake.db.database import Database
from seclake.errors import NotFound

PENDING, SENT, FAILED = "pending", "sent", "failed"
STATUSES = (PENDING, SENT, FAILED)
# Taken by the sender for one attempt (``claim``): the notifier folds no more into it, since
# the message may already be on its way. Shown as pending; back to pending at a start.
SENDING = "sending"
# What callers name "pending".
WAITING = (PENDING, SENDING)
MAX_ERROR = 1000
# Sent deliveries are kept this long (the page's and the API's history), then deleted;
# failed ones stay until resent or deleted with them once that old, pending ones always.
KEEP_DAYS = 30


class Delivery(Base):
    __tablename__ = "notify_deliveries"
    __table_args__ = (Index("ix_notify_deliveries_status_next_ms", "status", "next_ms"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    rule: Mapped[str] = mapped_column(String(100))
    destination: Mapped[str] = mapped_column(String(100))
    # behavior, summary, resolve (PagerDuty's resolve of a summary), test
    subject: Mapped[str] = mapped_column(String(16))
    # What the throttle counts by: a behavior's customer and key, a summary's id.
    ref: Mapped[str] = mapped_column(String(600))
    window_start: Mapped[int] = mapped_column(BigInteger)
    event: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(8))
    attempts: Mapped[int] = mapped_column(Integer)
    # Notifications of this rule and ref held back by the throttle, told with this one.
    folded: Mapped[int] = mapped_column(Integer)
    created_ms: Mapped[int] = mapped_column(BigInteger)
    next_ms: Mapped[int] = mapped_column(BigInteger)
    sent_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(MAX_ERROR), nullable=True)

    def record(self) -> dict[str, Any]:
        """As the API and the page show it."""
        return {"id": self.id, "rule": self.rule, "destination": self.destination, "subject": self.subject,
                "ref": self.ref, "status": PENDING if self.status == SENDING else self.status, "attempts": self.attempts, "folded": self.folded,
                "createdOn": self.created_ms, "nextAttempt": self.next_ms, "sentOn": self.sent_ms,
                "lastError": self.last_error, "title": about(self.event)}


def about(event: dict[str, Any]) -> str:
    """What a delivery is about, in a few words (the page's and the CLI's list)."""
    b, s = event.get("behavior"), event.get("summary")
    if isinstance(b, dict):
        return f"{b.get('behavior')} on {b.get('keyType')} {b.get('key')}"[:300]
    if isinstance(s, dict):
        what = {"summary": s.get("scoreLevel"), "status": s.get("status"), "resolve": "resolved"}.get(
            str(event.get("kind")), "")
        return f"{s.get('keyType')} {s.get('key')} {s.get('dayIndex')}: {what}"[:300]
    return str(event.get("kind") or "")


def add(session: Session, *, rule: str, destination: str, subject: str, ref: str, event: dict[str, Any],
        now_ms: int, window_start: int = 0, folded: int = 0) -> Delivery:
    row = Delivery(rule=rule, destination=destination, subject=subject, ref=ref[:600], window_start=window_start,
                   event=event, status=PENDING, attempts=0, folded=folded, created_ms=now_ms, next_ms=now_ms)
    session.add(row)
    return row


def due(db: Database, now_ms: int, limit: int) -> list[Delivery]:
    with db.session() as s:
        rows = s.scalars(select(Delivery).where(Delivery.status == PENDING, Delivery.next_ms <= now_ms)
                         .order_by(Delivery.next_ms, Delivery.id).limit(limit)).all()
        s.expunge_all()
        return list(rows)


def next_due(db: Database) -> int | None:
    with db.session() as s:
        return s.scalar(select(func.min(Delivery.next_ms)).where(Delivery.status == PENDING))


def claim(db: Database, delivery_id: int) -> Delivery | None:
    """Take a pending delivery for one attempt, as it is now (its folded count final); None if it is not
    pending any more. In a write transaction: the notifier's fold into it commits before or not at all."""
    with db.session(write=True) as s:
        row = s.get(Delivery, delivery_id, with_for_update=True)
        if row is None or row.status != PENDING:
            return None
        row.status = SENDING
        s.flush()
        s.expunge(row)
        return row


def release(db: Database) -> int:
    """At a start: attempts a stop or crash cut short are pending again (sent again: at least once)."""
    with db.session(write=True) as s:
        return s.execute(update(Delivery).where(Delivery.status == SENDING).values(status=PENDING)).rowcount


def settle(db: Database, delivery_id: int, *, status: str, attempts: int, now_ms: int,
           next_ms: int | None = None, error: str | None = None) -> None:
    """Record one attempt's outcome (only on the row claimed: a resend or delete meanwhile wins)."""
    values: dict[str, Any] = {"status": status, "attempts": attempts,
                              "last_error": error[:MAX_ERROR] if error else None}
    if status == SENT:
        values["sent_ms"] = now_ms
    if next_ms is not None:
        values["next_ms"] = next_ms
    with db.session(write=True) as s:
        s.execute(update(Delivery).where(Delivery.id == delivery_id, Delivery.status == SENDING).values(**values))


def resend(db: Database, delivery_id: int, now_ms: int) -> dict[str, Any]:
    """Send a delivery again from now (a failed one, or a sent one on purpose), its retries afresh."""
    with db.session(write=True) as s:
        row = s.get(Delivery, delivery_id, with_for_update=True)
        if row is None:
            raise NotFound(f"no delivery with id {delivery_id}")
        row.status, row.attempts, row.next_ms, row.created_ms = PENDING, 0, now_ms, now_ms
        return row.record()


def listing(db: Database, status: str | None, limit: int, before: int | None = None) -> tuple[list[dict], dict]:
    """The newest deliveries (of one status), and how many there are of each status."""
    with db.session() as s:
        query = select(Delivery).order_by(Delivery.id.desc()).limit(limit)
        if status is not None:
            query = query.where(Delivery.status.in_(WAITING if status == PENDING else (status,)))
        if before is not None:
            query = query.where(Delivery.id < before)
        rows = [r.record() for r in s.scalars(query)]
    return rows, counts(db)


def counts(db: Database) -> dict[str, int]:
    with db.session() as s:
        found = dict(s.execute(select(Delivery.status, func.count()).group_by(Delivery.status)).all())
    found[PENDING] = found.get(PENDING, 0) + found.pop(SENDING, 0)
    return {st: found.get(st, 0) for st in STATUSES}


def prune(db: Database, now_ms: int, keep_days: int = KEEP_DAYS) -> int:
    """Delete sent and failed deliveries made more than ``keep_days`` ago; how many."""
    with db.session(write=True) as s:
        return s.execute(delete(Delivery).where(Delivery.status.in_((SENT, FAILED)),
                                                Delivery.created_ms < now_ms - keep_days * 86_400_000)).rowcount
