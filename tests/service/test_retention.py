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
