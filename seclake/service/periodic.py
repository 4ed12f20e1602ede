"""Work a server component repeats every interval on a thread of its own.

The detector's saves, retention and the cluster's warmer all run the same
way: a daemon thread that waits ``interval`` seconds (or until stopped),
runs one round, and logs a round that failed instead of dying, so the next
round runs on time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable


class Periodic:
    def __init__(self, name: str, interval: float, work: Callable[[], object], log: logging.Logger, what: str):
        self.name = name
        self.interval = interval
        self.work = work
        self.log = log
        self.what = what  # for the log: "<what> failed; will retry"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.work()
            except Exception:  # noqa: BLE001 - logged; the next round is the retry
                self.log.exception("%s failed; will retry", self.what)

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
