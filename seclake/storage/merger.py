"""The merger: joins a day's small splits into larger ones.

``merge.py`` decides which splits to join (tiers, quiet days, partitions);
this runs those merges: the builder writes the merged split (in a worker
process or on an indexer), the janitor publishes it in place of its
sources in one catalog transaction and retires the sources after their
grace period. Merges never hold up indexing: they run in their own thread,
in worker processes of the lowest CPU priority, and while the indexer is
busy only the merges that bound a day's split count run (``BUSY_SHARE``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from seclake.storage.builder import SplitBuilder
from seclake.storage.catalog import PUBLISHED, Catalog
from seclake.storage.flusher import BUSY_WINDOW
from seclake.storage.janitor import Janitor
from seclake.storage.layout import Layout
from seclake.storage.merge import FACTOR, merge_candidates
from seclake.storage.shelf import Shelf
from seclake.storage.split import Split, SplitAborted

log = logging.getLogger("seclake.lake")

# While the indexer spends most of its time building (``Flusher.busy_share``:
# records come about as fast as the builds take them), merges only keep a
# day's split count bounded: a size tier merges once it holds BUSY_FACTOR
# splits instead of ``merge.FACTOR``, and quiet days wait. Such merges take
# CPU the builds and the parsing need, and a tier merge rewrites records the
# merges after it rewrite again. On the bench's 2M-line HTTP ingest over 30
# days (2 cores 98% busy; two runs each, side by side), merges at the lowest
# priority took 9.0-10.3 µs of CPU per line (of ~115) and left 524-542
# splits; waiting, none ran (the days' splits stayed under BUSY_FACTOR),
# 614-630 splits were left, and 18.0k instead of 17.1k-17.3k events/s
# reached search (1.04-1.05x). The larger factor bounds a day's splits under
# a load that never ends (a live feed as fast as this node); once the
# indexer idles, everything that waited is merged as usual.
BUSY_SHARE = 0.8
BUSY_FACTOR = 4 * FACTOR


class Merger:
    def __init__(self, layout: Layout, catalog: Catalog, shelf: Shelf, builder: SplitBuilder, janitor: Janitor,
                 partitions: int, stopping: Callable[[], bool] = lambda: False,
                 busy_share: Callable[[], float] = lambda: 0.0, settle_ms: int | None = None):
        self.layout = layout
        # How long a day must be quiet before its last merge (setting merge_quiet_seconds;
        # None: merge.SETTLE_MS, read at each round).
        self.settle_ms = settle_ms
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
        # The share of the last seconds the indexer spent building (``BUSY_SHARE``).
        self.busy_share = busy_share
        self.busy = False
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
            # A split this node cannot read stays as it is (``DamagedSplit``):
            # a merge of it would fail, and be tried again, every round.
            damaged = {s.meta.split_id for s in self.shelf.damaged()}
            entries = [e for e in self.catalog.entries(PUBLISHED) if e.split_id not in damaged]
            busy = self._busy()
            groups = merge_candidates(entries, factor=BUSY_FACTOR if busy else FACTOR,
                                      now_ms=None if busy else int(time.time() * 1000), partitions=self.partitions,
                                      settle_ms=self.settle_ms)
            workers = max(1, min(self.builder.merge_workers, len(groups)))
            with ThreadPoolExecutor(workers, thread_name_prefix="seclake-merge") as pool:
                futures = [pool.submit(self._merge_one, group) for group in groups]
        done = sum(f.result() for f in futures if f.exception() is None)
        self.merges_done += done
        for f in futures:
            if f.exception() is not None:
                raise f.exception()  # the merger thread logs it and tries again next round
        return done

    def _busy(self) -> bool:
        """Whether the indexer is busy enough for merges to wait (``BUSY_SHARE``); a change is logged."""
        share = self.busy_share()
        busy = share >= BUSY_SHARE
        if busy != self.busy:
            self.busy = busy
            log.info("merges %s: the indexer built %.0f%% of the last %.0f s", "wait" if busy else "resume",
                     share * 100, BUSY_WINDOW)
        return busy

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
