"""The retention schedule: whole splits past the configured age are deleted,
and imports' idempotency keys past their window are forgotten."""

from __future__ import annotations

import logging

from seclake.service.idempotency import Idempotency
from seclake.service.periodic import Periodic
from seclake.storage.lake import Lake

log = logging.getLogger("seclake.retention")


class RetentionSchedule:
    def __init__(
        self, lake: Lake, max_age_days: int, interval_minutes: float, idempotency: Idempotency | None = None
    ):
        self.lake = lake
        self.max_age_days = max_age_days
        self.idempotency = idempotency
        self._rounds = Periodic("seclake-retention", interval_minutes * 60, self.run_once, log, "retention")

    def run_once(self) -> int:
        """Apply retention now; the number of splits deleted."""
        deleted = self.lake.retention(self.max_age_days)
        if deleted:
            log.info("retention deleted %d splits older than %d days", deleted, self.max_age_days)
        if self.idempotency is not None:
            forgotten = self.idempotency.expire()
            if forgotten:
                log.info("retention forgot %d import idempotency keys past their window", forgotten)
        return deleted

    def start(self) -> None:
        # Keys expire even when splits are kept forever.
        if self.max_age_days <= 0 and self.idempotency is None:
            return
        self._rounds.start()

    def stop(self) -> None:
        self._rounds.stop()
