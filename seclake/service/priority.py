"""Interactive work first: while searches run, bulk ingest in this process waits at its checkpoints.

Searches and ingest share one interpreter (HTTP, parsing when no parse
worker takes the body, the rules, the log, the search root and every
embedded leaf), and Python runs one thread at a time: an import parsing
beside a search halves the search's share of the interpreter, two imports
take two thirds. Elasticsearch keeps search and indexing in separate pools
and lets indexing slow down first; here the ingest threads step aside.

A search call holds ``interactive()`` while it runs. Ingest calls
``yield_to_interactive()`` at checkpoints (every ``EVERY`` lines it parses
here, and before each append to the log): with a search in flight it
waits, its thread off the interpreter, until none is, at most ``MAX_WAIT``
at a time and at most ``share`` of the time over all (a budget that fills
at ``share`` seconds per second, up to ``MAX_WAIT``). So under any search
load bulk ingest keeps at least ``1 - share`` of its time: searches take
their turn, not the import's whole rate (an early version that waited
for every search, with the rules matched under the log's lock, cut a
full-speed import under 4 searches a second to 12% of its rate; with the
matching between checkpoints, at a share of 0.5 that import kept 79-100% of
its rate and searches ran 1.6-1.8x slower than idle, against 90-101% and
1.8x before, docs/operations.md). What an import waited is only delay: nothing
it sent is refused or dropped, and its reply comes when its records are
durable, as always. The wait is counted (``seclake_ingest_yield_seconds_total``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

T = TypeVar("T")

# Lines parsed (and matched against the rules) between checkpoints: ~1.5 ms of one core. A search
# that starts waits for every import thread to reach its next checkpoint; at 256 lines (~10 ms each,
# two importers) that alone added ~10-20 ms to a 20 ms search. The check costs an attribute read.
EVERY = 32
# The interpreter's switch interval in the server (``favour_interactive``): how long a thread that
# wants the interpreter waits for a busy one to let go. At Python's 5 ms every step of a search that
# releases the interpreter (a split's search, a database read, the event loop's reads and writes)
# waited up to 5 ms to get it back from an ingest thread between checkpoints (the convoy effect).
SWITCH_INTERVAL = 0.0005
MAX_WAIT = 0.25  # seconds one checkpoint waits at most


def favour_interactive() -> None:
    """The server's switch interval (``SWITCH_INTERVAL``): set once at its start."""
    sys.setswitchinterval(SWITCH_INTERVAL)


class Priority(Collector):
    """The searches in flight, and ingest's checkpoints that wait for them."""

    def __init__(self, share: float = 0.5, max_wait_seconds: float = MAX_WAIT):
        self.share = share
        self.max_wait = max_wait_seconds
        self._cond = threading.Condition()
        self._active = 0
        self._budget = max_wait_seconds  # seconds ingest may still wait
        self._filled = time.monotonic()
        self.yields = 0
        self.yield_seconds = 0.0

    @contextmanager
    def interactive(self) -> Iterator[None]:
        """Held by a search while it runs."""
        with self._cond:
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if not self._active:
                    self._cond.notify_all()

    def yield_to_interactive(self) -> None:
        """Wait while searches run, within the budget; at once when none does (no lock taken)."""
        if not self._active or self.share <= 0:
            return
        with self._cond:
            started = time.monotonic()
            self._budget = min(self.max_wait, self._budget + (started - self._filled) * self.share)
            self._filled = started
            deadline = started + self._budget
            if self._budget <= 0:
                return
            while self._active and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
            waited = time.monotonic() - started
            self._budget -= waited
            self.yields += 1
            self.yield_seconds += waited

    def paced(self, items: Iterable[T], every: int = EVERY) -> Iterator[T]:
        """``items``, with a checkpoint before every ``every``-th."""
        for i, item in enumerate(items):
            if not i % every:
                self.yield_to_interactive()
            yield item

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Any]:
        waited = CounterMetricFamily("seclake_ingest_yield_seconds",
                                     "Seconds ingest waited at its checkpoints for searches to finish.")
        waited.add_metric([], self.yield_seconds)
        yield waited
        yields = CounterMetricFamily("seclake_ingest_yields", "Checkpoints at which ingest waited for searches.")
        yields.add_metric([], self.yields)
        yield yields
        active = GaugeMetricFamily("seclake_searches_in_flight", "Search calls running now.")
        active.add_metric([], self._active)
        yield active
