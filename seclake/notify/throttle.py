"""Throttling: at most one notification per rule and key (or summary) in a window.

A window opens with a notification; what the same rule would have sent for
the same key before the window ends is folded into it: counted on the
window's deliveries while they are still pending (a storm inside one save
of the detector is told by its first notification, "and 9,999 more"), and
otherwise kept on the window's row and told by the next window's
notification. The state is in ``notify_throttle`` and changes in the
notifier's transaction, so a restart neither forgets a window nor counts a
fold twice. A count folded after the window's notification was sent waits
for the next notification of that rule and key (none may ever come: the
page and the API show the row's count then).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Integer, String, delete, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from seclake.db.base import Base
from seclake.db.database import Database
from seclake.notify.alertrule import MAX_THROTTLE
from seclake.notify.outbox import PENDING, Delivery


def _insert(session: Session):
    """INSERT ... ON CONFLICT of the session's database (SQLite and PostgreSQL both have it)."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(ThrottleWindow)


class ThrottleWindow(Base):
    __tablename__ = "notify_throttle"

    rule: Mapped[str] = mapped_column(String(100), primary_key=True)
    ref: Mapped[str] = mapped_column(String(600), primary_key=True)
    window_start: Mapped[int] = mapped_column(BigInteger)
    # Folded after the window's notifications left: told by the next window's.
    folded: Mapped[int] = mapped_column(Integer)


class Throttle:
    """The windows one transaction reads and changes: one read per (rule, ref), one write at ``flush``."""

    def __init__(self, session: Session):
        self.session = session
        self._rows: dict[tuple[str, str], ThrottleWindow] = {}
        # (rule, ref) -> folds of this transaction, and the deliveries it opened the window with
        self._folds: dict[tuple[str, str], int] = {}
        self._opened: dict[tuple[str, str], list[Delivery]] = {}
        self.throttled = 0

    def admit(self, rule: str, ref: str, window_s: int, now_ms: int) -> tuple[bool, int, int]:
        """(send?, the window's start, the folded count the notification carries)."""
        if window_s <= 0:
            return True, now_ms, 0
        key = (rule, ref[:600])
        row = self._rows.get(key)
        if row is None:
            row = self.session.get(ThrottleWindow, key, with_for_update=True)
            if row is None:
                # Another node's transaction (a triage beside the detector's save, on PostgreSQL) may
                # open the same window now: insert-or-nothing, then the row whoever made it.
                made = self.session.execute(_insert(self.session).values(
                    rule=key[0], ref=key[1], window_start=now_ms, folded=0).on_conflict_do_nothing()
                    .returning(ThrottleWindow.rule)).first() is not None
                row = self.session.get(ThrottleWindow, key, with_for_update=True, populate_existing=True)
                assert row is not None
                self._rows[key] = row
                if made:
                    self._opened[key] = []
                    return True, now_ms, 0
            self._rows[key] = row
        if now_ms - row.window_start >= window_s * 1000 or now_ms < row.window_start:
            carried = row.folded + self._flush_folds(key, row)
            row.window_start, row.folded = now_ms, 0
            self._opened[key] = []
            return True, now_ms, carried
        self._folds[key] = self._folds.get(key, 0) + 1
        self.throttled += 1
        return False, row.window_start, 0

    def opened(self, rule: str, ref: str, delivery: Delivery) -> None:
        self._opened.setdefault((rule, ref[:600]), []).append(delivery)

    def _flush_folds(self, key: tuple[str, str], row: ThrottleWindow) -> int:
        """Put the folds counted so far on the window's pending deliveries; what is left over."""
        n = self._folds.pop(key, 0)
        if not n:
            return 0
        opened = self._opened.get(key)
        if opened:  # the window opened in this transaction: its deliveries are not sent yet
            for d in opened:
                d.folded += n
            return 0
        done = self.session.execute(
            update(Delivery).where(Delivery.rule == key[0], Delivery.ref == key[1],
                                   Delivery.window_start == row.window_start, Delivery.status == PENDING)
            .values(folded=Delivery.folded + n)).rowcount
        return 0 if done else n

    def flush(self) -> None:
        for key in list(self._folds):
            row = self._rows[key]
            row.folded += self._flush_folds(key, row)


def prune(db: Database, now_ms: int) -> int:
    """Delete windows older than the longest throttle with nothing folded to tell: they equal no window."""
    with db.session(write=True) as s:
        return s.execute(delete(ThrottleWindow).where(ThrottleWindow.window_start < now_ms - MAX_THROTTLE * 1000,
                                                      ThrottleWindow.folded == 0)).rowcount
