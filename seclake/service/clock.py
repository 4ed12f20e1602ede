"""The time source of the services, and how timestamps are written on the wire.

Services take a clock (a function returning an aware UTC datetime) so that
tests can move time forward instead of sleeping through a lockout.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC, always with microseconds: 2026-11-21T10:00:00.123000Z."""
    if moment is None:
        return None
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
