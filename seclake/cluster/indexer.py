"""Indexer actors: split building on the cluster's nodes, for the ingest node.

The ingest node logs, detects and publishes; turning a large batch (or a
merge) into a split is most of the CPU an import costs (measured: ~130 us
per record, against ~110 us for everything else). In cluster mode the
ingest node's ``SplitBuilder`` sends those builds to indexer actors
(``seclake searcher --indexers N`` starts them on a node): the (docId,
record) pairs travel to the indexer, it builds the split in a scratch
directory on its node and returns the split's files, which the ingest node
seals into its lake and publishes as if built there. Nothing an indexer
does is durable or visible on its own, so an indexer that dies or is gone
loses nothing: the build is redone on the ingest node (the records are
still pending and in the write-ahead log until the split is published).

Jobs go to the live indexer with the fewest jobs this ingest node has in
flight on it (ties by name), so a backlog spreads over every node's CPU.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from seclake.cluster import INDEXER_PREFIX, NAMESPACE, current_node_id
from seclake.cluster.placement import ActorDirectory, start_pinned
from seclake.storage.builder import split_files
from seclake.storage.split import SplitMeta


class Indexer:
    """Made a Ray actor by ``start_indexers``; a plain class, so tests can call it directly."""

    def __init__(self, scratch: str | None = None):
        self.scratch = scratch
        if scratch:
            Path(scratch).mkdir(parents=True, exist_ok=True)
        self.built = 0
        self.records = 0

    def info(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "node_id": current_node_id(), "built": self.built, "records": self.records}

    def build(self, dataset: str, payload: list[tuple[int, bytes]], split_id: str) -> tuple[SplitMeta, dict[str, bytes]]:
        meta, files = split_files(dataset, payload, split_id, self.scratch)
        self.built += 1
        self.records += meta.num_records
        return meta, files


def start_indexers(
    address: str,
    *,
    count: int = 1,
    node_id: str | None = None,
    scratch: Path | None = None,
    namespace: str = NAMESPACE,
    ready_timeout: float = 120.0,
) -> list[dict[str, Any]]:
    """Start (or find running) ``count`` indexers pinned to a node; return their info.

    One build at a time each (a build keeps about one core busy); several
    on a node build side by side. ``scratch``: where builds are written
    before their files are sent back (default: the system temp directory).
    """

    def args(name: str) -> tuple:
        return (str(scratch / name) if scratch else None,)

    return start_pinned(
        address, Indexer, INDEXER_PREFIX, args,
        count=count, node_id=node_id, concurrency=1, namespace=namespace, ready_timeout=ready_timeout,
    )


class RayIndexers:
    """The ingest node's side: ``Indexers`` for ``SplitBuilder`` over the live indexer actors."""

    def __init__(self, directory: ActorDirectory | None = None):
        self.directory = directory or ActorDirectory(INDEXER_PREFIX)
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}

    def submit(self, dataset: str, payload: list[tuple[int, bytes]], split_id: str) -> Future | None:
        handles = self.directory.live()
        if not handles:
            return None
        with self._lock:
            name = min(handles, key=lambda n: (self._in_flight.get(n, 0), n))
            self._in_flight[name] = self._in_flight.get(name, 0) + 1
        try:
            fut = handles[name].build.remote(dataset, payload, split_id).future()
        except BaseException:
            self._done(name)
            raise

        def done(f: Future) -> None:
            self._done(name)
            if f.exception() is not None:
                # Gone for good or restarting: list the indexers again next time.
                self.directory.forget()

        fut.add_done_callback(done)
        return fut

    def _done(self, name: str) -> None:
        with self._lock:
            self._in_flight[name] -= 1
