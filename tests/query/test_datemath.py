"""Dates in queries: intervals, date math and Elasticsearch's bound rounding."""

from __future__ import annotations

import pytest

from seclake.query.datemath import DateError, bound, instant, interval

NOW = 1_700_000_000_000  # 2023-11-14T22:13:20Z, a Tuesday
DAY = 86_400_000
TODAY = 1_699_920_000_000  # 2023-11-14T00:00:00Z


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("1699920000000", TODAY, TODAY),
        ("-1000", -1000, -1000),
        ("2023-11-14", TODAY, TODAY + DAY - 1),
        ("2023-11", 1_698_796_800_000, TODAY + 17 * DAY - 1),  # all of November
        ("2023-11-14T05", TODAY + 5 * 3_600_000, TODAY + 6 * 3_600_000 - 1),
        ("2023-11-14T05:30", TODAY + 19_800_000, TODAY + 19_860_000 - 1),
        ("2023-11-14T05:30:15Z", TODAY + 19_815_000, TODAY + 19_815_999),
        ("2023-11-14T05:30:15.25Z", TODAY + 19_815_250, TODAY + 19_815_259),
        ("2023-11-14T05:30:15.123456Z", TODAY + 19_815_123, TODAY + 19_815_123),
        ("2023-11-14 05:30:15", TODAY + 19_815_000, TODAY + 19_815_999),
        ("2023-11-14T05:30:15+02:00", TODAY + 19_815_000 - 7_200_000, TODAY + 19_815_999 - 7_200_000),
        ("2023-11-14T05:30:15-0130", TODAY + 19_815_000 + 5_400_000, TODAY + 19_815_999 + 5_400_000),
        ("now", NOW, NOW),
        ("now-1h", NOW - 3_600_000, NOW - 3_600_000),
        ("now+1d", NOW + DAY, NOW + DAY),
        ("now/d", TODAY, TODAY + DAY - 1),
        ("now-1d/d", TODAY - DAY, TODAY - 1),
        ("now/w", TODAY - DAY, TODAY + 6 * DAY - 1),  # Monday 13th to Sunday 19th
        ("now/M", 1_698_796_800_000, TODAY + 17 * DAY - 1),
        ("now/y", 1_672_531_200_000, 1_704_067_200_000 - 1),
        ("now/H", TODAY + 22 * 3_600_000, TODAY + 23 * 3_600_000 - 1),
        ("now/m", NOW - 20_000, NOW + 40_000 - 1),
        ("now/s", NOW, NOW + 999),
        ("now-1d/d+2h", TODAY - DAY + 7_200_000, TODAY - 1 + 7_200_000),
        ("2023-11-14||+1d", TODAY + DAY, TODAY + 2 * DAY - 1),
        ("2023-11-14||/M", 1_698_796_800_000, TODAY + 17 * DAY - 1),
    ],
)
def test_interval(text, start, end):
    assert interval(text, NOW) == (start, end)


def test_months_clamp_to_the_last_day():
    jan31 = interval("2024-01-31", NOW)[0]
    assert interval("2024-01-31||+1M", NOW)[0] == jan31 + 29 * DAY  # 2024-02-29
    assert interval("2024-02-29||+1y", NOW)[0] == interval("2025-02-28", NOW)[0]


@pytest.mark.parametrize(
    ("lower", "inclusive", "expected"),
    [
        (True, True, TODAY),  # gte now/d: from the start of today
        (True, False, TODAY + DAY - 1),  # gt now/d: after today (exclusive of its last ms)
        (False, True, TODAY + DAY - 1),  # lte now/d: through the end of today
        (False, False, TODAY),  # lt now/d: before today (exclusive of its first ms)
    ],
)
def test_bounds_round_like_elasticsearch(lower, inclusive, expected):
    assert bound("now/d", NOW, lower=lower, inclusive=inclusive) == expected


@pytest.mark.parametrize(
    "text",
    ["", "abc", "now-", "now-1x", "now/", "now+1", "2023-13-01", "2023-02-30", "2023-11-14T25:00", "now-1d//d",
     "9999-12-31||+1y", "now+999999999y", "2023-11-14T05:30+24:00", "||+1d", "now-1d/d||+1d"],
)
def test_bad_dates_raise_date_error(text):
    with pytest.raises(DateError):
        interval(text, NOW)


def test_instant_reads_iso_record_values():
    assert instant("2023-11-14T00:00:00Z") == TODAY
    assert instant("not a date") is None
