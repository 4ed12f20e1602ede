"""Event times: the time a log line carries, as epoch milliseconds.

Every parser hands the text or number it found here and gets back epoch
milliseconds, or None when the value is not a time we understand; the caller
then falls back to the receive time. Accepted spellings:

- epoch numbers (or numeric strings) in seconds, milliseconds, microseconds or
  nanoseconds, told apart by magnitude (see ``from_epoch``);
- ISO 8601 / RFC 3339 / RFC 5424 timestamps (``2024-05-01T12:00:00.123Z``,
  with or without offset; no offset means UTC);
- RFC 3164 ``MMM dd HH:MM:SS`` (optionally ``.ffffff`` and a year), with the
  year inferred from the receive time;
- CEF's ``MMM dd yyyy HH:MM:SS[.SSS]`` (``rt=`` and friends).

Times without an offset are taken as UTC: a log line gives no way to know the
sender's zone, and UTC at least makes the guess the same on every server.

Times outside [1970, 2100) are refused: they come from broken clocks or from
fields that are not times at all, and a record filed decades away from its
neighbours is worse than one filed at its receive time.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from functools import lru_cache

MIN_MS = 0
MAX_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z

DAY_MS = 86_400_000

MONTHS: dict[str, int] = {}
for _i, _name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1):
    # The three spellings seen in the wild; a dict hit is cheaper than .lower().
    MONTHS[_name] = MONTHS[_name.capitalize()] = MONTHS[_name.upper()] = _i

_NUMERIC = re.compile(r"[+-]?\d+(?:\.\d*)?")
# "May  1 12:00:00[.123][ 2024]" (3164) and "May 01 2024 12:00:00[.123]" (CEF).
_BSD = re.compile(
    r"([A-Za-z]{3}) {1,2}(\d{1,2})"
    r"(?: (\d{4}))? (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?: (\d{4}))?"
    r"(?: (Z|UTC|GMT|[+-]\d{2}:?\d{2}))?$"
)


def _in_range(ms: int) -> int | None:
    return ms if MIN_MS <= ms < MAX_MS else None


def from_epoch(number: int | float) -> int | None:
    """Epoch seconds, ms, µs or ns, told apart by magnitude.

    Below 1e11 it is seconds (1e11 ms would be 1973, 1e11 s is year 5138);
    below 1e14 milliseconds; below 1e17 microseconds; below 1e20 nanoseconds.
    Integers are scaled with integer arithmetic so nanoseconds lose nothing
    but the sub-millisecond part.
    """
    if isinstance(number, bool):
        return None
    if isinstance(number, int):
        a = -number if number < 0 else number
        if a < 100_000_000_000:
            return _in_range(number * 1000)
        if a < 100_000_000_000_000:
            return _in_range(number)
        if a < 100_000_000_000_000_000:
            return _in_range(number // 1000)
        if a < 100_000_000_000_000_000_000:
            return _in_range(number // 1_000_000)
        return None
    if not isinstance(number, float) or number != number:  # NaN
        return None
    a = abs(number)
    if a < 1e11:
        ms = number * 1000.0
    elif a < 1e14:
        ms = number
    elif a < 1e17:
        ms = number / 1000.0
    elif a < 1e20:
        ms = number / 1e6
    else:
        return None  # also inf
    return _in_range(int(ms))


def from_iso(text: str) -> int | None:
    """ISO 8601 / RFC 3339 / RFC 5424; naive times are UTC."""
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    # timestamp() is a float; round() keeps .123 from becoming 122.
    return _in_range(round(dt.timestamp() * 1000))


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).

    Plain arithmetic: about ten times cheaper than building a datetime per line.
    """
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _valid_date(y: int, m: int, d: int) -> bool:
    if not (1 <= m <= 12 and 1 <= d <= _MONTH_DAYS[m - 1]):
        return False
    if m == 2 and d == 29:
        return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return True


@lru_cache(maxsize=64)
def _year_of_day(day: int) -> int:
    # Cached per receive day: an import shares one receive time.
    return datetime.fromtimestamp(day * 86400, tz=timezone.utc).year


def civil_ms(
    month: int,
    day: int,
    hour: int,
    minute: int,
    second: int,
    fraction: str | None,
    year: int | None,
    received_ms: int,
) -> int | None:
    """Epoch ms of a calendar time in UTC; without a year, the one nearest the receive time.

    RFC 3164 times carry no year. Of last year, this year and next year we
    take the one that puts the event nearest to its receive time: a line
    stamped "Dec 31 23:59:59" that arrives on January 1st is from last year,
    and a sender whose clock runs a little ahead across New Year is from next.
    """
    if hour > 23 or minute > 59 or second > 60:  # 60: leap second, folded below
        return None
    tod = (hour * 3600 + min(second, 59) + minute * 60) * 1000
    if fraction:
        tod += int((fraction + "00")[:3])
    if year is not None:
        if not _valid_date(year, month, day):
            return None
        return _in_range(_days_from_civil(year, month, day) * DAY_MS + tod)
    epoch_day = _nearest_day(month, day, received_ms // DAY_MS)
    return None if epoch_day is None else _in_range(epoch_day * DAY_MS + tod)


@lru_cache(maxsize=1024)
def _nearest_day(month: int, day: int, received_day: int) -> int | None:
    """Epoch day of month/day in the year that puts it nearest the receive day.

    Cached: the lines of an import share a receive day and a handful of dates.
    """
    this = _year_of_day(received_day)
    best: int | None = None
    for y in (this - 1, this, this + 1):
        if _valid_date(y, month, day):
            d = _days_from_civil(y, month, day)
            if best is None or abs(d - received_day) < abs(best - received_day):
                best = d
    return best


def _offset_ms(zone: str | None) -> int:
    if not zone or zone in ("Z", "UTC", "GMT"):
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return sign * (int(digits[:2]) * 60 + int(digits[2:])) * 60_000


def from_bsd(text: str, received_ms: int) -> int | None:
    """``MMM dd HH:MM:SS`` (RFC 3164) or ``MMM dd yyyy HH:MM:SS`` (CEF)."""
    m = _BSD.match(text)
    if m is None:
        return None
    month = MONTHS.get(m.group(1))
    if month is None:
        return None
    year = m.group(3) or m.group(8)
    ms = civil_ms(
        month,
        int(m.group(2)),
        int(m.group(4)),
        int(m.group(5)),
        int(m.group(6)),
        m.group(7),
        int(year) if year else None,
        received_ms,
    )
    if ms is None:
        return None
    return _in_range(ms - _offset_ms(m.group(9)))


def parse_time(value: object, received_ms: int) -> int | None:
    """Epoch ms of any accepted time spelling, else None (the caller falls back)."""
    if isinstance(value, (int, float)):
        return from_epoch(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text) > 64:
        return None
    first = text[0]
    if first.isdigit() or first in "+-":
        if _NUMERIC.fullmatch(text):
            return from_epoch(float(text) if "." in text else int(text))
        if len(text) >= 10 and text[4] == "-":
            return from_iso(text)
        return None
    if first.isalpha():
        return from_bsd(text, received_ms)
    return None
