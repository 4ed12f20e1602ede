"""The detector as a server component: restored at start, saved every interval."""

from __future__ import annotations

import logging

from seclake.detect.detector import Detector
from seclake.service.periodic import Periodic
from seclake.storage.lake import Lake

log = logging.getLogger("seclake.detect")


class Detection:
    def __init__(self, detector: Detector, lake: Lake, interval_seconds: float):
        self.detector = detector
        self.lake = lake
        self._saves = Periodic("seclake-detector", interval_seconds, detector.save, log, "saving the detector state")

    def start(self) -> None:
        # The log must keep what the detector has not saved yet.
        self.lake.wal_holds.append(self._hold)
        self.detector.restore(self.lake.wal.replay)
        self.detector.save()
        # The rule set's index (detect/ruleindex.py: ~2 s for every SigmaHQ rule) built now, at start,
        # not inside the first ingest that meets a rule.
        self.detector.freeze_rules = True
        self.detector.ruleset()
        self._saves.start()

    def _hold(self) -> int:
        return self.detector.saved_seq

    def stop(self) -> None:
        self._saves.stop()
        self.detector.save()
        if self._hold in self.lake.wal_holds:
            self.lake.wal_holds.remove(self._hold)
