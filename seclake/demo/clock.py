"""Timestamps in each log format, and the day/night rhythm of traffic.

Lines come out in time order, so the expensive part of every timestamp (the
date and the hour and minute) is formatted once per minute and only the
seconds and milliseconds per line.
"""

from __future__ import annotations

import time

MINUTE_MS = 60_000
DAY_MS = 86_400_000

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# Relative traffic per UTC hour: quiet nights, a morning ramp, a lunch dip.
_HOURS = (0.25, 0.2, 0.18, 0.18, 0.2, 0.3, 0.5, 0.8, 1.2, 1.5, 1.6, 1.6,
          1.4, 1.5, 1.6, 1.55, 1.4, 1.1, 0.8, 0.6, 0.5, 0.4, 0.35, 0.3)
HOUR_WEIGHT = tuple(h * 24 / sum(_HOURS) for h in _HOURS)  # mean 1
# Monday first; weekends are quieter. Mean over a week is 1.
WEEKDAY_WEIGHT = (1.16, 1.16, 1.16, 1.16, 1.16, 0.6, 0.6)


def rhythm(ms: int) -> float:
    """How busy the network is at ``ms`` relative to the average (mean 1 over a week)."""
    day, in_day = divmod(ms, DAY_MS)
    return HOUR_WEIGHT[in_day // 3_600_000] * WEEKDAY_WEIGHT[(day + 3) % 7]  # 1970-01-01 was a Thursday


class Minute:
    """The per-minute prefixes of every timestamp format, for one UTC minute."""

    __slots__ = ("ms", "rfc3164", "date", "hhmm", "iso")

    def __init__(self, ms: int) -> None:
        ms -= ms % MINUTE_MS
        t = time.gmtime(ms // 1000)
        self.ms = ms
        # RFC 3164: "Jan  5 13:22:01" (day padded with a space, no year).
        self.rfc3164 = f"{_MONTHS[t.tm_mon - 1]} {t.tm_mday:2d} {t.tm_hour:02d}:{t.tm_min:02d}:"
        self.date = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
        self.hhmm = f"{t.tm_hour:02d}:{t.tm_min:02d}:"
        self.iso = f"{self.date}T{self.hhmm}"

    def rfc3164_at(self, ts: int) -> str:
        return f"{self.rfc3164}{(ts - self.ms) // 1000:02d}"

    def time_at(self, ts: int) -> str:
        return f"{self.hhmm}{(ts - self.ms) // 1000:02d}"

    def iso_at(self, ts: int) -> str:
        """RFC 5424 / ISO 8601 with milliseconds, UTC: 2024-01-05T13:22:01.123Z."""
        return f"{self.iso}{(ts - self.ms) // 1000:02d}.{ts % 1000:03d}Z"
