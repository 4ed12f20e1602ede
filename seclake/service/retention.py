"""The retention schedule: whole splits past the configured age are deleted,
and imports' idempotency keys past their window are forgotten."""

from __future__ import annotations

import logging
import threading

from seclake.service.idempotency import Idempotency
from seclake.storage.lake import Lake

log = logging.getLogger("seclake.retention")


class RetentionSchedule:
    def __init__(
        self, lake: Lake, max_age_days: int, interval_minutes: float, idempotency: Idempotency | None = None
    ):
        self.lake = lake
        self.max_age_days = max_age_days
        self.idempotency = idempotency
        self.interval = interval_minutes * 60
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

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

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.run_once()
            except Exception:
                log.exception("retention failed; will retry")

    def start(self) -> None:
        # Keys expire even when splits are kept forever.
        if self.max_age_days <= 0 and self.idempotency is None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="seclake-retention", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
