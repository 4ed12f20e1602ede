"""The server's retention schedule deletes old splits by itself."""

from __future__ import annotations

import time

from seclake.db.database import Database
from seclake.service.retention import RetentionSchedule
from seclake.storage.lake import Lake

DAY = 86_400_000


def test_schedule_deletes_splits_past_the_age(tmp_path, database_url):
    db = Database(database_url)
    db.migrate()
    lake = Lake(tmp_path, db)
    lake.start(background=False)
    now = int(time.time() * 1000)
    lake.append([("event", {"@timestamp": now - 40 * DAY}), ("event", {"@timestamp": now - DAY})])
    lake.flush()
    assert len(lake.splits("event")) == 2
    schedule = RetentionSchedule(lake, max_age_days=30, interval_minutes=0.001)
    schedule.start()
    try:
        deadline = time.monotonic() + 5
        while len(lake.splits("event")) == 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        schedule.stop()
        lake.stop()
        db.dispose()
    assert [s.meta.time_max for s in lake.splits("event")] == [now - DAY]


def test_zero_days_keeps_everything(tmp_path, database_url):
    db = Database(database_url)
    db.migrate()
    lake = Lake(tmp_path, db)
    lake.start(background=False)
    lake.append([("event", {"@timestamp": 0})])
    lake.flush()
    schedule = RetentionSchedule(lake, max_age_days=0, interval_minutes=0.001)
    schedule.start()
    time.sleep(0.2)
    schedule.stop()
    assert schedule.run_once() == 0 and len(lake.splits("event")) == 1
    lake.stop()
    db.dispose()


def test_schedule_forgets_expired_idempotency_keys_even_when_splits_are_kept(tmp_path, database_url):
    from seclake.service.idempotency import Idempotency, IdempotencyKey, attempt
    from seclake.service.ingestion import Ingestion

    db = Database(database_url)
    db.migrate()
    lake = Lake(tmp_path, db)
    lake.start(background=False)
    now = [int(time.time() * 1000)]
    keys = Idempotency(db, lake, window_hours=1, clock=lambda: now[0])
    keys.start()
    ingestion = Ingestion(lake, idempotency=keys)
    ingestion.append_once([("event", {"@timestamp": now[0]})], attempt("user:1:0", "old", "d", {}, 1))
    now[0] += 2 * 3_600_000
    ingestion.append_once([("event", {"@timestamp": now[0]})], attempt("user:1:0", "new", "d", {}, 1))
    schedule = RetentionSchedule(lake, max_age_days=0, interval_minutes=0.001, idempotency=keys)
    schedule.start()

    def left() -> list[str]:
        with db.session() as s:
            return sorted(k.key for k in s.query(IdempotencyKey))

    try:
        deadline = time.monotonic() + 5
        while left() != ["new"] and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        schedule.stop()
        keys.stop()
        lake.stop()
    assert left() == ["new"]
    db.dispose()
