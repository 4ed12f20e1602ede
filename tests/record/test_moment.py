"""Record times as text."""

from seclake.record.moment import iso


def test_iso_writes_milliseconds_in_utc_and_clamps_what_cannot_be_written():
    assert iso(1_763_683_200_123) == "2025-11-21T00:00:00.123Z"
    # A device's clock far off must not fail what writes the time (a summary, a log line).
    assert iso(-1) == "1970-01-01T00:00:00.000Z"
    assert iso(10**18) == "9999-12-31T23:59:59.999Z"
