"""Warming searchers: each is asked to open its splits before a search needs them.

Without it a searcher opens a split (with a split store: downloads it) on
the first search that touches it, inside that search's deadline: the first
searches after a searcher joins, restarts elsewhere or takes over a leaving
one's splits are slow, and with large stored splits can miss the deadline
and come back partial. The ingest node (it has the catalog and publishes
every split) runs a ``Warmer``: every ``interval`` seconds it lists the
live searchers, assigns the published splits of the last ``days`` days as
every root does (rendezvous over the same sorted names), and sends each
searcher the ones it owns and was not sent yet, newest first. A searcher
opens them in the background (``Searcher.warm``), never past its byte
budget or open-split limit, so warming never pushes out what searches use.
A new split (a flush, a merge) reaches its owner within one interval.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from seclake.cluster.rendezvous import assign
from seclake.service.periodic import Periodic
from seclake.storage.catalog import PUBLISHED, Catalog
from seclake.storage.merge import DAY_MS

log = logging.getLogger("seclake.cluster")


def ray_send(handle: Any, splits: list[tuple[str, str, int]]) -> None:
    # Fire and forget: an answer would only say how many were queued.
    handle.warm.remote(splits)


class Warmer:
    def __init__(
        self,
        catalog: Catalog,
        directory: Any,
        *,
        days: float = 7.0,
        interval: float = 5.0,
        send: Callable[[Any, list[tuple[str, str, int]]], None] = ray_send,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ):
        self.catalog = catalog
        self.directory = directory
        self.days = days
        self.send = send
        self.now_ms = now_ms
        # searcher name -> split ids already sent to it
        self._sent: dict[str, set[str]] = {}
        self._rounds = Periodic("seclake-warmer", interval, self.tick, log, "warming searchers")

    def tick(self) -> dict[str, int]:
        """One round; how many splits each searcher was sent."""
        handles = self.directory.live()
        names = sorted(handles)
        if not names:
            return {}
        since = self.now_ms() - int(self.days * DAY_MS)
        entries = sorted(
            (e for e in self.catalog.entries(PUBLISHED) if e.time_max >= since),
            key=lambda e: (-e.time_max, e.split_id),
        )
        owner = assign([e.split_id for e in entries], names)
        current = {e.split_id for e in entries}
        out = {}
        for name in names:
            sent = self._sent.setdefault(name, set())
            sent &= current  # merged away or past the window: forget them
            mine = [(e.dataset, e.split_id, e.size_bytes) for e in entries if owner[e.split_id] == name and e.split_id not in sent]
            if not mine:
                continue
            try:
                self.send(handles[name], mine)
            except Exception as e:  # noqa: BLE001 - tried again next round
                log.warning("could not ask %s to warm %d splits: %s", name, len(mine), e)
                continue
            sent.update(sid for _d, sid, _b in mine)
            out[name] = len(mine)
        for gone in set(self._sent) - set(names):
            del self._sent[gone]
        return out

    def start(self) -> None:
        if self.days > 0:
            self._rounds.start()

    def stop(self) -> None:
        self._rounds.stop()
