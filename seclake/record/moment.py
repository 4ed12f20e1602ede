"""Record times as text: epoch milliseconds, written in ISO 8601 (UTC)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# Years 1970..9999 can be written; times outside are clamped, not refused:
# what writes them (summaries on the ingestion path, log lines) must never fail.
MAX_MS = 253_402_300_799_999
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def clamped(ms: int) -> int:
    return min(max(int(ms), 0), MAX_MS)


def utc(ms: int) -> datetime:
    """The moment of an epoch-ms time (clamped), in UTC."""
    # Whole milliseconds: fromtimestamp(ms / 1000) goes through a float, off by one near the end.
    return _EPOCH + timedelta(milliseconds=clamped(ms))


def iso(ms: int) -> str:
    """``2026-11-21T10:00:00.123Z``."""
    return utc(ms).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
