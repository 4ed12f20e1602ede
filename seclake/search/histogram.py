"""Date histogram buckets: interval names, durations, and UTC-aligned starts.

Buckets cover the requested range, empty ones included, aligned to the
interval in UTC (weeks start on Monday, months on the 1st). With no interval
the one giving a readable number of buckets (at most ``TARGET``) is chosen.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from seclake.errors import LimitExceeded, ValidationFailed

SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
WEEK = 7 * DAY
NAMED = {"second": SECOND, "minute": MINUTE, "hour": HOUR, "day": DAY, "week": WEEK}
UNITS = {"ms": 1, "s": SECOND, "m": MINUTE, "h": HOUR, "d": DAY, "w": WEEK}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
# Ladder of readable intervals for the automatic choice.
LADDER = [SECOND, 5 * SECOND, 10 * SECOND, 30 * SECOND, MINUTE, 5 * MINUTE, 10 * MINUTE, 30 * MINUTE,
          HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, WEEK]
TARGET = 100
EPOCH_MONDAY = 4 * DAY  # 1970-01-01 was a Thursday; the first Monday is 1970-01-05


def parse_interval(text: str | None, range_from: int, range_to: int) -> int | str:
    """Milliseconds, or "month"; ``None`` picks an interval for the range."""
    if text is None or text == "" or text == "auto":
        span = max(range_to - range_from, 1)
        for ms in LADDER:
            if span / ms <= TARGET:
                return ms
        return "month"
    if not isinstance(text, str):
        raise ValidationFailed("dateFacets.interval", f"must be a string, not {type(text).__name__}")
    t = text.strip()
    if t in NAMED:
        return NAMED[t]
    if t == "month":
        return "month"
    m = _DURATION.match(t)
    if not m:
        raise ValidationFailed(
            "dateFacets.interval",
            f"{text!r} is not minute, hour, day, week, month or a duration such as 30m or 1.5h",
        )
    ms = int(float(m.group(1)) * UNITS[m.group(2)])
    if ms < 1:
        raise ValidationFailed("dateFacets.interval", f"{text!r} is shorter than a millisecond")
    return ms


def bucket_starts(interval: int | str, range_from: int, range_to: int, max_buckets: int) -> tuple[tuple[int, ...], int]:
    """Bucket start times covering [range_from, range_to] and the end of the last bucket."""
    if interval == "month":
        return _month_starts(range_from, range_to, max_buckets)
    assert isinstance(interval, int)
    origin = EPOCH_MONDAY if interval % WEEK == 0 else 0
    first = range_from - ((range_from - origin) % interval)
    count = (range_to - first) // interval + 1
    if count > max_buckets:
        raise LimitExceeded("date histogram bucket count", count, max_buckets)
    starts = tuple(first + i * interval for i in range(count))
    return starts, starts[-1] + interval


def _month_starts(range_from: int, range_to: int, max_buckets: int) -> tuple[tuple[int, ...], int]:
    d = datetime.fromtimestamp(range_from / 1000, UTC)
    cur = datetime(d.year, d.month, 1, tzinfo=UTC)
    starts = []
    end_ms = range_to
    while True:
        ms = int(cur.timestamp() * 1000)
        if ms > end_ms:
            return tuple(starts), ms
        starts.append(ms)
        if len(starts) > max_buckets:
            raise LimitExceeded("date histogram bucket count", len(starts), max_buckets)
        cur = (cur + timedelta(days=32)).replace(day=1)
