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
waits, its thread off the interpreter, until none is or ``max_wait`` has
passed. The bound keeps ingest going under any search load (at least
``EVERY`` lines per ``max_wait``), and what an import waited is only
delay: nothing it sent is refused or dropped, and its reply comes when its
records are durable, as always. The time ingest spent waiting is counted
(``seclake_ingest_yield_seconds_total``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

T = TypeVar("T")

EVERY = 256  # lines parsed between checkpoints: ~3-10 ms of one core


class Priority(Collector):
    """The searches in flight, and ingest's checkpoints that wait for them."""

    def __init__(self, max_wait_seconds: float = 0.25):
        self.max_wait = max_wait_seconds
        self._cond = threading.Condition()
        self._active = 0
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
        """Wait while searches run, at most ``max_wait``; at once when none does (no lock taken)."""
        if not self._active or self.max_wait <= 0:
            return
        started = time.monotonic()
        deadline = started + self.max_wait
        with self._cond:
            while self._active and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
            self.yields += 1
            self.yield_seconds += time.monotonic() - started

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
