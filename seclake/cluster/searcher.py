"""The searcher actor: runs leaves and fetches on the splits of shared storage.

A searcher needs no database: the root names each split (dataset, id) and
the searcher opens ``<splits dir>/<dataset>/<id>`` itself, keeping it open
(``SplitCache``); with a split store (object storage) it opens a local copy
it downloads into its cache directory, kept under a byte budget. One call
carries all the splits the root gives this searcher for one request; they
run side by side on the searcher's own threads and are answered split by
split, so one split it cannot open fails alone. What it returns is plain
data (``LeafResult.portable``, records as dicts, a piped query's STATS groups:
``aggregate``). ``start_searchers`` places searchers on one node of the
cluster (``placement``: pinned, detached, restarted by Ray, named
``SEARCHER_PREFIX...`` so every root finds them).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from seclake.cluster import NAMESPACE, SEARCHER_PREFIX, current_node_id
from seclake.cluster.placement import start_pinned
from seclake.cluster.splitcache import DEFAULT_MAX_BYTES, SplitCache
from seclake.errors import SeclakeError
from seclake.search.leaf import LeafTask, fetch_sources, run_leaf
from seclake.storage.split import Split
from seclake.storage.splitstore import SplitStore, StoreConfig

# Threads running the splits of a searcher's calls side by side (tantivy
# releases the GIL); ``start_searchers`` gives its ``concurrency``.
LEAF_THREADS = 4


class Searcher:
    """Made a Ray actor by ``start_searchers``; a plain class, so tests can call it directly."""

    def __init__(
        self,
        splits_dir: str,
        max_open: int = 2000,
        store: StoreConfig | None = None,
        cache_dir: str | None = None,
        cache_bytes: int = DEFAULT_MAX_BYTES,
        threads: int = LEAF_THREADS,
    ):
        self.splits_dir = splits_dir
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="leaf")
        # Opens the splits the ingest node asks for ahead of searches (warmer.py),
        # one request after the other, beside the searches.
        self._warmer = ThreadPoolExecutor(1, thread_name_prefix="warm")
        self.warmed = 0
        # What `seclake cluster status` shows: calls answered and when the last one was.
        self.answered = 0
        self.aggregated = 0  # splits folded into a piped query's STATS groups
        self.last_answer_ms: int | None = None
        self.store = store
        self.cache = SplitCache(
            Path(splits_dir),
            max_open,
            store=SplitStore(store) if store is not None else None,
            cache_dir=Path(cache_dir) if cache_dir else None,
            max_bytes=cache_bytes,
        )

    def warm(self, splits: list[tuple[str, str, int]]) -> None:
        """Open splits (dataset, split id, bytes) ahead of searches, in the background."""
        self._warmer.submit(self._warm, splits)

    def _warm(self, splits: list[tuple[str, str, int]]) -> None:
        self.warmed += self.cache.warm(splits)

    def info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "node_id": current_node_id(),
            "splits_dir": self.splits_dir,
            "splits_dir_exists": Path(self.splits_dir).is_dir(),
            "open_splits": len(self.cache),
            "opened": self.cache.opened,
            "split_store": self.store.url if self.store is not None else None,
            "cache_dir": str(self.cache.cache_dir) if self.cache.cache_dir is not None else None,
            "cached_bytes": self.cache.cached_bytes,
            "downloaded": self.cache.downloaded,
            "evicted": self.cache.evicted,
            "warmed": self.warmed,
            "answered": self.answered,
            "aggregated": self.aggregated,
            "last_answer_ms": self.last_answer_ms,
        }

    def search(self, splits: list[tuple[str, str]], task: LeafTask) -> dict[str, tuple[str, Any]]:
        """The leaves of ``task`` on (dataset, split id) pairs, side by side on this searcher's threads."""
        return self._each(splits, lambda _split_id, split: run_leaf(split, task).portable())

    def fetch(self, wanted: list[tuple[str, str, list[int]]]) -> dict[str, tuple[str, Any]]:
        """Records by docId of (dataset, split id, docIds) triples."""
        docids = {split_id: ids for _dataset, split_id, ids in wanted}
        return self._each(
            [(dataset, split_id) for dataset, split_id, _ids in wanted],
            lambda split_id, split: fetch_sources(split, docids[split_id]),
        )

    def aggregate(self, splits: list[tuple[str, str]], task: Any) -> dict[str, tuple[str, Any]]:
        """A piped query's STATS groups of each (dataset, split id): its matching records folded
        here (``service.analytics.aggregate_split``), so only the groups travel."""
        from seclake.service.analytics import aggregate_split

        def one(_split_id: str, split: Split) -> Any:
            part = aggregate_split(split, task)
            self.aggregated += 1
            return part

        return self._each(splits, one)

    def _each(self, splits: list[tuple[str, str]], work: Callable[[str, Split], Any]) -> dict[str, tuple[str, Any]]:
        """``work`` on each split: split id -> ("ok", answer), ("error", a seclake
        error for the caller) or ("failed", why: this split, not the call,
        failed here; the root retries it on another searcher)."""

        def one(pair: tuple[str, str]) -> tuple[str, Any]:
            dataset, split_id = pair
            try:
                with self.cache.use(dataset, split_id) as split:
                    return ("ok", work(split_id, split))
            except SeclakeError as e:
                return ("error", e)
            except Exception as e:  # noqa: BLE001 - reported per split, so the others still answer
                return ("failed", f"{type(e).__name__}: {e}"[:500])

        answers = list(self._pool.map(one, splits)) if len(splits) > 1 else [one(p) for p in splits]
        self.answered += 1
        self.last_answer_ms = int(time.time() * 1000)
        return {split_id: a for (_dataset, split_id), a in zip(splits, answers)}


def start_searchers(
    address: str,
    splits_dir: Path,
    *,
    count: int = 1,
    node_id: str | None = None,
    max_open: int = 2000,
    concurrency: int = 4,
    store: StoreConfig | None = None,
    cache_dir: Path | None = None,
    cache_bytes: int = DEFAULT_MAX_BYTES,
    namespace: str = NAMESPACE,
    ready_timeout: float = 120.0,
) -> list[dict[str, Any]]:
    """Start (or find running) ``count`` searchers pinned to a node; return their info.

    ``node_id`` (a hex prefix is enough) picks the node; by default this
    machine's. With ``store`` the searchers read splits from object storage
    through local copies in ``cache_dir`` (on the searcher's node), at most
    ``cache_bytes`` each. With several searchers on a node each gets its
    own subdirectory. ``concurrency``: calls a searcher takes at once, and
    the threads it runs their splits on.
    """

    def args(name: str) -> tuple:
        cache = str(cache_dir / name) if cache_dir else None
        return (str(splits_dir), max_open, store, cache, cache_bytes, concurrency)

    return start_pinned(
        address, Searcher, SEARCHER_PREFIX, args,
        count=count, node_id=node_id, concurrency=concurrency, namespace=namespace, ready_timeout=ready_timeout,
    )
