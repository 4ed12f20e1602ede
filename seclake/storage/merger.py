"""The merger: joins a day's small splits into larger ones.

``merge.py`` decides which splits to join (tiers, quiet days, partitions);
this runs those merges: the builder writes the merged split (in a worker
process or on an indexer), the janitor publishes it in place of its
sources in one catalog transaction and retires the sources after their
grace period. Merges never hold up indexing: they run in their own thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from seclake.storage.builder import SplitBuilder
from seclake.storage.catalog import PUBLISHED, Catalog
from seclake.storage.janitor import Janitor
from seclake.storage.layout import Layout
from seclake.storage.merge import merge_candidates
from seclake.storage.shelf import Shelf
from seclake.storage.split import Split, SplitAborted

log = logging.getLogger("seclake.lake")


class Merger:
    def __init__(self, layout: Layout, catalog: Catalog, shelf: Shelf, builder: SplitBuilder, janitor: Janitor,
                 partitions: int, stopping: Callable[[], bool] = lambda: False):
        self.layout = layout
        self.catalog = catalog
        self.shelf = shelf
        self.builder = builder
        self.janitor = janitor
        self.partitions = partitions
        self.merges_done = 0
        # Whether the lake is stopping: a merge round starts no more merges,
        # and the lake makes those under way give up (``stop_merges``), so a
        # stop (a server's, an import command's end) does not wait for a
        # day's merge (tens of seconds; an import command of 12k lines spent
        # half its time there).
        self.stopping = stopping
        # Held by a merge round and by retention, which exclude each other.
        self.lock = threading.Lock()

    def merge(self) -> int:
        """Run every merge the policy asks for now; return how many were done.

        Up to ``builder.merge_workers`` merges run at once (disjoint groups
        of splits; the catalog and the shelf take concurrent publishes, as
        the flusher's): once the ingest stops, the day merges it left
        behind use every core instead of one.
        """
        self.janitor.reap()
        with self.lock:
            now_ms = int(time.time() * 1000)
            # A split this node cannot read stays as it is (``DamagedSplit``):
            # a merge of it would fail, and be tried again, every round.
            damaged = {s.meta.split_id for s in self.shelf.damaged()}
            entries = [e for e in self.catalog.entries(PUBLISHED) if e.split_id not in damaged]
            groups = merge_candidates(entries, now_ms=now_ms, partitions=self.partitions)
            workers = max(1, min(self.builder.merge_workers, len(groups)))
            with ThreadPoolExecutor(workers, thread_name_prefix="seclake-merge") as pool:
                futures = [pool.submit(self._merge_one, group) for group in groups]
        done = sum(f.result() for f in futures if f.exception() is None)
        self.merges_done += done
        for f in futures:
            if f.exception() is not None:
                raise f.exception()  # the merger thread logs it and tries again next round
        return done

    def _merge_one(self, group: list) -> int:
        """Merge one group of splits into one; 1 when done, 0 when skipped."""
        if self.stopping():
            return 0
        sources = self.shelf.pick(e.split_id for e in group)
        if len(sources) < 2:
            return 0
        dataset = group[0].dataset
        split_id = self.layout.new_split_id(dataset, sources[0].meta.time_min)
        path = self.layout.split_dir(dataset, split_id)
        try:
            meta = self.builder.merge(dataset, sources, path, split_id)
        except SplitAborted:
            log.info("merge into %s abandoned: the lake is stopping", split_id)
            return 0
        (new,) = self.shelf.ready([Split(path)])
        old = [s.meta.split_id for s in sources]
        self.janitor.publish([meta], replaces=old)
        self.shelf.swap(new, old)
        self.janitor.retire([(dataset, split_id) for split_id in old])
        return 1
