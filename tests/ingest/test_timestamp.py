from __future__ import annotations

import pytest

from seclake.ingest.timestamp import MAX_MS, civil_ms, from_epoch, parse_time

RECEIVED = 1714564801000  # 2024-05-01T12:00:01Z
NEW_YEAR = 1704067205000  # 2024-01-01T00:00:05Z


@pytest.mark.parametrize(
    "value, expected",
    [
        (1714564740, 1714564740000),  # seconds
        (1714564740.25, 1714564740250),
        (1714564740123, 1714564740123),  # ms
        (1714564740123456, 1714564740123),  # µs
        (1714564740123456789, 1714564740123),  # ns, exact with integers
        ("1714564740", 1714564740000),
        ("1714564740.5", 1714564740500),
        ("1714564740123456789", 1714564740123),
        ("2024-05-01T11:59:00Z", 1714564740000),
        ("2024-05-01T11:59:00.123Z", 1714564740123),
        ("2024-05-01T13:59:00.123+02:00", 1714564740123),
        ("2024-05-01T13:59:00+0200", 1714564740000),
        ("2024-05-01 11:59:00", 1714564740000),  # naive: UTC
        ("2024-05-01T11:59:00.123456789Z", 1714564740123),  # digits past µs ignored
        ("May  1 11:59:00", 1714564740000),  # 3164, year from receive time
        ("May 01 2024 11:59:00", 1714564740000),  # CEF
        ("May 01 2024 11:59:00.250", 1714564740250),
        ("May 01 2024 13:59:00 +02:00", 1714564740000),
    ],
)
def test_accepted_spellings(value: object, expected: int) -> None:
    assert parse_time(value, RECEIVED) == expected


@pytest.mark.parametrize(
    "value",
    [
        None, True, False, [], {}, "", "   ", "yesterday", "12:00:01", "2024-13-01T00:00:00Z",
        "Foo  1 12:00:00", "May 32 12:00:00", "May  1 25:00:00", -5, 0.0 - 1, float("nan"),
        float("inf"), 10**30, "9" * 65, 4102444800,  # 2100-01-01: out of range
    ],
)  # fmt: skip
def test_refused(value: object) -> None:
    assert parse_time(value, RECEIVED) is None


def test_range_bounds() -> None:
    assert from_epoch(0) == 0
    assert from_epoch(MAX_MS - 1) == MAX_MS - 1
    assert from_epoch(MAX_MS) is None


def test_3164_year_is_the_one_nearest_the_receive_time() -> None:
    # Dec 31 received on Jan 1: last year.
    assert parse_time("Dec 31 23:59:59", NEW_YEAR) == 1704067199000
    # Jan 1 received on Dec 31 (sender clock ahead): next year.
    dec31 = 1735689590000  # 2024-12-31T23:59:50Z
    assert parse_time("Jan  1 00:00:02", dec31) == 1735689602000
    # Feb 29 only exists in leap years: 2024 is one.
    assert parse_time("Feb 29 12:00:00", RECEIVED) == 1709208000000
    # Received in 2025: the nearest Feb 29 is 2024's.
    assert parse_time("Feb 29 12:00:00", 1740830400000) == 1709208000000


def test_civil_ms_leap_second_is_folded() -> None:
    assert civil_ms(6, 30, 23, 59, 60, None, 2015, RECEIVED) == civil_ms(6, 30, 23, 59, 59, None, 2015, RECEIVED)
