"""The detector as a server component: restored at start, saved every interval."""

from __future__ import annotations

import logging
import threading

from seclake.detect.detector import Detector
from seclake.storage.lake import Lake

log = logging.getLogger("seclake.detect")


class Detection:
    def __init__(self, detector: Detector, lake: Lake, interval_seconds: float):
        self.detector = detector
        self.lake = lake
        self.interval = interval_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        # The log must keep what the detector has not saved yet.
        self.lake.wal_floor = lambda: self.detector.saved_seq
        self.detector.restore(self.lake.wal.replay(0))
        self.detector.save()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="seclake-detector", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.detector.save()
            except Exception:
                log.exception("saving the detector state failed; will retry")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.detector.save()
