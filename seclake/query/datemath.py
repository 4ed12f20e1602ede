"""Dates in queries: epoch milliseconds, ISO 8601, and Elasticsearch date math.

A date expression names an *interval* of milliseconds, not an instant:
``2024-05-01`` is that whole day, ``2024-05-01T10:00`` that minute,
``now/d`` today, ``1714557600000`` and ``now-1h`` a single millisecond.
Range bounds then follow Elasticsearch's rounding rules, so a bound never
cuts an interval in half:

    gte (``[x``)  start of x        gt (``{x``)  after the end of x
    lte (``x]``)  end of x          lt (``x}``)  before the start of x

All times are UTC unless the ISO text carries an offset. A bare integer is
epoch milliseconds (write a year as ``2024-01``, not ``2024``).
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import datetime, timedelta, timezone

_UNITS = "yMwdhHms"
_ISO = re.compile(
    r"""^(?P<y>\d{4})
    (?:-(?P<mo>\d{2})
      (?:-(?P<d>\d{2})
        (?:[T ](?P<h>\d{2})
          (?::(?P<mi>\d{2})
            (?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?)?
          )?
        )?
      )?
    )?
    (?P<tz>Z|[+-]\d{2}(?::?\d{2})?)?$""",
    re.VERBOSE,
)
_EPOCH = re.compile(r"^-?\d{1,15}$")
_MATH = re.compile(r"([+-])(\d{1,9})([yMwdhHms])|/([yMwdhHms])")
# Earliest and latest instants we accept, well inside datetime's range so that
# arithmetic and rounding can never overflow.
_MIN_MS = -62135596800000 + 366 * 86400000  # 0002-01-01
_MAX_MS = 253402300799999 - 366 * 86400000  # 9998-12-31


class DateError(ValueError):
    """A date expression that does not read; the parser adds the position."""


def now_ms() -> int:
    return int(datetime.now(timezone.utc).timestamp() * 1000)


def interval(text: str, now: int) -> tuple[int, int]:
    """The first and last millisecond (both inclusive) that ``text`` names."""
    text = text.strip()
    if "||" in text:
        anchor_text, math = text.split("||", 1)
        start, end = _anchor(anchor_text)
    elif text.startswith("now"):
        start = end = now
        math = text[3:]
    else:
        start, end = _anchor(text)
        math = ""
    if math:
        start = _apply(math, start, round_up=False)
        end = _apply(math, end, round_up=True)
    return _check(start, text), _check(end, text)


def bound(text: str, now: int, *, lower: bool, inclusive: bool) -> int:
    """One range bound in epoch ms, rounded the Elasticsearch way (module doc)."""
    start, end = interval(text, now)
    if lower:
        return start if inclusive else end
    return end if inclusive else start


def instant(text: str) -> int | None:
    """Epoch ms of a date stored as ISO text in a record (its first millisecond)."""
    try:
        return _anchor(text)[0]
    except DateError:
        return None


def _check(ms: int, text: str) -> int:
    if not _MIN_MS <= ms <= _MAX_MS:
        raise DateError(f"date {text!r} is out of range")
    return ms


def _anchor(text: str) -> tuple[int, int]:
    if _EPOCH.match(text):
        ms = int(text)
        return ms, ms
    m = _ISO.match(text)
    if not m:
        raise DateError(f"{text!r} is not a date")
    g = m.groupdict()
    try:
        year = int(g["y"])
        month = int(g["mo"] or 1)
        day = int(g["d"] or 1)
        hour = int(g["h"] or 0)
        minute = int(g["mi"] or 0)
        second = int(g["s"] or 0)
        frac = g["f"] or ""
        micro = int((frac + "000000")[:6])
        start_dt = datetime(year, month, day, hour, minute, second, micro, tzinfo=_zone(g["tz"]))
    except ValueError as exc:
        raise DateError(f"{text!r} is not a valid date: {exc}") from None
    start = _ms(start_dt)
    # The interval is as long as the least significant part written.
    try:
        if frac:
            step = timedelta(milliseconds=1) if len(frac) >= 3 else timedelta(milliseconds=10 ** (3 - len(frac)))
            end_dt = start_dt + step
        elif g["s"]:
            end_dt = start_dt + timedelta(seconds=1)
        elif g["mi"]:
            end_dt = start_dt + timedelta(minutes=1)
        elif g["h"]:
            end_dt = start_dt + timedelta(hours=1)
        elif g["d"]:
            end_dt = start_dt + timedelta(days=1)
        elif g["mo"]:
            end_dt = _add_months(start_dt, 1)
        else:
            end_dt = _add_months(start_dt, 12)
    except (ValueError, OverflowError):
        raise DateError(f"{text!r} is out of the supported date range") from None
    return start, _ms(end_dt) - 1


def _zone(tz: str | None) -> timezone:
    if not tz or tz == "Z":
        return timezone.utc
    sign = -1 if tz[0] == "-" else 1
    digits = tz[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(f"offset {tz} out of range")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _apply(math: str, ms: int, *, round_up: bool) -> int:
    pos = 0
    dt = _dt(ms)
    while pos < len(math):
        m = _MATH.match(math, pos)
        if not m:
            raise DateError(
                f"bad date math {math[pos:]!r} (+N<unit>, -N<unit> or /<unit>, unit one of {_UNITS})"
            )
        pos = m.end()
        try:
            if m.group(4):
                dt = _round(dt, m.group(4), up=round_up)
            else:
                n = int(m.group(2)) * (1 if m.group(1) == "+" else -1)
                dt = _add(dt, n, m.group(3))
        except (OverflowError, ValueError):
            raise DateError(f"date math {math!r} leaves the supported date range") from None
    return _ms(dt)


def _add(dt: datetime, n: int, unit: str) -> datetime:
    if unit == "y":
        return _add_months(dt, 12 * n)
    if unit == "M":
        return _add_months(dt, n)
    seconds = {"w": 604800, "d": 86400, "h": 3600, "H": 3600, "m": 60, "s": 1}[unit]
    return dt + timedelta(seconds=seconds * n)


def _add_months(dt: datetime, n: int) -> datetime:
    # Calendar arithmetic, clamping the day like java.time (Jan 31 + 1M = Feb 29).
    total = dt.year * 12 + dt.month - 1 + n
    year, month = divmod(total, 12)
    month += 1
    day = min(dt.day, monthrange(year, month)[1]) if 1 <= year <= 9999 else dt.day
    return dt.replace(year=year, month=month, day=day)


def _round(dt: datetime, unit: str, *, up: bool) -> datetime:
    if unit == "y":
        floor = dt.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = _add_months(floor, 12)
    elif unit == "M":
        floor = dt.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = _add_months(floor, 1)
    elif unit == "w":  # ISO weeks start on Monday, as in Elasticsearch
        day = dt.replace(hour=0, minute=0, second=0, microsecond=0)
        floor = day - timedelta(days=day.weekday())
        nxt = floor + timedelta(days=7)
    elif unit == "d":
        floor = dt.replace(hour=0, minute=0, second=0, microsecond=0)
        nxt = floor + timedelta(days=1)
    elif unit in "hH":
        floor = dt.replace(minute=0, second=0, microsecond=0)
        nxt = floor + timedelta(hours=1)
    elif unit == "m":
        floor = dt.replace(second=0, microsecond=0)
        nxt = floor + timedelta(minutes=1)
    else:
        floor = dt.replace(microsecond=0)
        nxt = floor + timedelta(seconds=1)
    # Rounding up lands on the last millisecond of the unit, as Elasticsearch does.
    return nxt - timedelta(milliseconds=1) if up else floor


def _dt(ms: int) -> datetime:
    if not _MIN_MS <= ms <= _MAX_MS:
        raise DateError(f"{ms} is out of the supported date range")
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)


def _ms(dt: datetime) -> int:
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
