"""The outbox keeps sent and failed deliveries 30 days, pending ones always;
throttle windows are dropped once older than the longest throttle with nothing to tell."""

from __future__ import annotations

from seclake.notify import outbox, throttle
from seclake.notify.throttle import ThrottleWindow

DAY = 86_400_000


def test_old_history_is_pruned_and_pending_is_kept(services) -> None:
    db = services.db
    now = 100 * DAY
    with db.session(write=True) as s:
        for status, age in (("sent", 31), ("failed", 31), ("pending", 31), ("sent", 29)):
            row = outbox.add(s, rule="r", destination="d", subject="behavior", ref="x", event={}, now_ms=now - age * DAY)
            row.status = status
        s.add(ThrottleWindow(rule="r", ref="old", window_start=now - 8 * DAY, folded=0))
        s.add(ThrottleWindow(rule="r", ref="owed", window_start=now - 8 * DAY, folded=3))
        s.add(ThrottleWindow(rule="r", ref="live", window_start=now - DAY, folded=0))
    assert outbox.prune(db, now) == 2
    assert outbox.counts(db) == {"pending": 1, "sent": 1, "failed": 0}
    assert throttle.prune(db, now) == 1
    with db.session() as s:
        assert sorted(w.ref for w in s.query(ThrottleWindow)) == ["live", "owed"]
