"""An API node that does not write the lake: splits from the catalog, no imports.

In a cluster one API node owns ingestion (setting ``ingest``, the default):
it holds the lake's file lock, the write-ahead log, the indexer, the
detector and retention. Every other API node runs with ``ingest = false``:
it lists published splits from the shared catalog (PostgreSQL) on each
search and searches them on the cluster's searchers (or opens them itself
from shared storage when it has no Ray address). Its imports go to the
ingest node's ingestor (``remoteingestion.py``); without a Ray address
there is no way to reach it, and imports are refused with a message naming
what to do.
"""

from __future__ import annotations

from typing import Any

from seclake.errors import Conflict
from seclake.storage.catalog import PUBLISHED, Catalog, CatalogEntry
from seclake.storage.layout import Layout

NOT_HERE = (
    "this API node does not ingest (setting ingest = false) and is not in a cluster (no ray_address): "
    "send imports to the seclake node that owns the lake (ingest = true)"
)


class CatalogView:
    """What search calls need of the lake, read from the catalog."""

    def __init__(self, catalog: Catalog, layout: Layout):
        self.catalog = catalog
        self.layout = layout

    def splits(self, dataset: str, time_from: int | None = None, time_to: int | None = None) -> list[CatalogEntry]:
        return [
            e
            for e in self.catalog.entries(PUBLISHED, dataset)
            if (time_from is None or e.time_max >= time_from) and (time_to is None or e.time_min <= time_to)
        ]

    def time_bounds(self, dataset: str) -> tuple[int, int] | None:
        entries = self.catalog.entries(PUBLISHED, dataset)
        if not entries:
            return None
        return min(e.time_min for e in entries), max(e.time_max for e in entries)

    def is_empty(self) -> bool:
        return not self.catalog.entries(PUBLISHED)

    def stats(self) -> dict[str, Any]:
        by_ds: dict[str, dict[str, int]] = {}
        for e in self.catalog.entries(PUBLISHED):
            d = by_ds.setdefault(e.dataset, {"splits": 0, "records": 0, "bytes": 0})
            d["splits"] += 1
            d["records"] += e.num_records
            d["bytes"] += e.size_bytes
        return {"datasets": by_ds, "pending": 0, "indexed_seq": self.catalog.checkpoint()}

    def append(self, items) -> tuple[int, int]:
        raise Conflict(NOT_HERE)

    def flush(self) -> int:
        return 0


class NoIngestion:
    """The ingestion of a node with ``ingest = false``: every import is refused, nothing is stored."""

    def __getattr__(self, name: str):
        def refuse(*args, **kwargs):
            raise Conflict(NOT_HERE)

        return refuse
