from __future__ import annotations

from datetime import UTC, datetime

import pytest

from seclake.demo.clock import DAY_MS, Minute, rhythm


@pytest.mark.parametrize("ms", [0, 1_700_000_000_123, 1_704_067_199_999, 1_709_164_800_500])
def test_minute_formats_agree_with_datetime(ms: int) -> None:
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    m = Minute(ms)
    assert m.rfc3164_at(ms) == f"{dt:%b} {dt.day:2d} {dt:%H:%M:%S}"
    assert m.iso_at(ms) == f"{dt:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"
    assert m.date == f"{dt:%Y-%m-%d}"
    assert m.time_at(ms) == f"{dt:%H:%M:%S}"


def test_rfc3164_pads_single_digit_days_with_a_space() -> None:
    assert Minute(1_704_412_800_000).rfc3164_at(1_704_412_800_000) == "Jan  5 00:00:00"


def test_rhythm_averages_one_over_a_week_and_is_quiet_at_night() -> None:
    monday = 1_699_833_600_000  # 2023-11-13 00:00 UTC
    hours = [rhythm(monday + h * 3_600_000) for h in range(7 * 24)]
    assert sum(hours) / len(hours) == pytest.approx(1.0)
    assert rhythm(monday + 3 * 3_600_000) < rhythm(monday + 14 * 3_600_000) / 4
    assert rhythm(monday + 5 * DAY_MS + 14 * 3_600_000) < rhythm(monday + 14 * 3_600_000)  # Saturday
