"""The janitor: publishing splits, retiring them, deleting their files.

Quickwit's janitor removes what is no longer referenced; here it also owns
the way in, since both ends follow the same rule: a split on object storage
is published only once every file is uploaded, and forgotten only once its
files are gone, so a crash at any step leaves something the next start
cleans up (``leftovers``).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Sequence
from typing import Any

from seclake.storage.catalog import MARKED, PUBLISHED, STAGED, Catalog
from seclake.storage.layout import Layout
from seclake.record.dataset import DATASETS
from seclake.storage.merge import DAY_MS
from seclake.storage.pathname import UnsafeName, inside
from seclake.storage.shelf import Shelf
from seclake.storage.split import SplitMeta
from seclake.storage.splitstore import SplitStore, SplitStoreError

log = logging.getLogger("seclake.lake")

# Seconds a merged or expired split's files outlive its retirement.
RETIRE_GRACE = 120.0


class Janitor:
    def __init__(self, layout: Layout, catalog: Catalog, shelf: Shelf, store: SplitStore | None):
        self.layout = layout
        self.catalog = catalog
        self.shelf = shelf
        self.store = store
        self.retire_grace = RETIRE_GRACE
        self._retiring: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()
        # Deletions refused since start because the path a split's name
        # makes would leave the lake (``pathname.UnsafeName``): /metrics.
        self.refused = 0

    def publish(self, metas: list[SplitMeta], **publish: Any) -> None:
        """Publish new splits; with a split store, only once every file of each is uploaded.

        The rows are staged first, so a crash mid-upload is cleaned up at
        the next start. A failed upload publishes nothing and moves no
        checkpoint: the records stay pending (and in the log), and the next
        flush builds and uploads them again.
        """
        if self.store is None:
            self.catalog.publish(metas, **publish)
            return
        self.catalog.stage(metas)
        try:
            for m in metas:
                self.store.upload(m.dataset, m.split_id, self.layout.split_dir(m.dataset, m.split_id))
        except Exception:
            self.delete([(m.dataset, m.split_id) for m in metas])
            raise
        self.catalog.publish(metas, staged=True, **publish)

    def leftovers(self, published: set[str]) -> None:
        """Remove what a crash left: staged rows (a crash mid-upload), marked
        rows (retired before a restart) and directories the catalog does not publish."""
        gone = self.catalog.entries(STAGED) + self.catalog.entries(MARKED)
        self.delete([(e.dataset, e.split_id) for e in gone])
        for dataset_dir in self.layout.splits.iterdir() if self.layout.splits.exists() else []:
            if dataset_dir.name not in DATASETS or dataset_dir.is_symlink() or not dataset_dir.is_dir():
                # Not seclake's: a link here led a restored backup's sweep into another directory.
                self._refuse(UnsafeName("directory", dataset_dir.name, "is not a dataset directory of seclake's "
                                        "(a link or another name): left alone", str(self.layout.splits)))
                continue
            for d in dataset_dir.iterdir():
                if d.name in published:
                    continue
                try:
                    path = inside(self.layout.splits, dataset_dir.name, d.name, what="unpublished split directory")
                except UnsafeName as e:
                    self._refuse(e)
                    continue
                log.info("removing unpublished split directory %s", path)
                shutil.rmtree(path, ignore_errors=True)

    def _refuse(self, e: UnsafeName) -> None:
        """A deletion a stored name would have sent outside the lake: not done, said and counted."""
        self.refused += 1
        log.error("refused to delete: %s; the data dir or its database was altered (docs/operations.md, "
                  "\"Backup and restore\")", e)

    def expire(self, max_age_days: int, now_ms: int | None = None) -> int:
        """Retire whole splits whose newest record is older than ``max_age_days``."""
        if max_age_days <= 0:
            return 0
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        cutoff = now_ms - max_age_days * DAY_MS
        old = [e for e in self.catalog.entries(PUBLISHED) if e.time_max < cutoff]
        if not old:
            return 0
        self.catalog.mark([e.split_id for e in old])
        self.shelf.drop(e.split_id for e in old)
        self.retire([(e.dataset, e.split_id) for e in old])
        return len(old)

    def retire(self, splits: Sequence[tuple[str, str]]) -> None:
        """Delete marked splits' files after a grace period.

        Searches in this process keep a split they already opened; searchers
        in other processes (cluster mode) may be about to open one the
        catalog listed a moment ago, so the files stay for ``retire_grace``
        seconds. The catalog rows stay marked until then.
        """
        due = time.monotonic() + self.retire_grace
        with self._lock:
            self._retiring.extend((due, dataset, split_id) for dataset, split_id in splits)
        self.reap()

    def reap(self, now: float | None = None) -> int:
        """Delete the retired splits whose grace period is over."""
        now = time.monotonic() if now is None else now
        with self._lock:
            due = [(d, sid) for t, d, sid in self._retiring if t <= now]
            self._retiring = [r for r in self._retiring if r[0] > now]
        if due:
            self.delete(due)
        return len(due)

    def delete(self, splits: Sequence[tuple[str, str]]) -> None:
        # Searches already running keep their open split (its files stay
        # mapped until closed); new searches no longer see it.
        gone = []
        for dataset, split_id in splits:
            try:
                path = self.layout.split_dir(dataset, split_id, where="deleting a split of the catalog")
            except UnsafeName as e:
                # Its row stays, so the refusal is seen again (at every start, which refuses the catalog).
                self._refuse(e)
                continue
            shutil.rmtree(path, ignore_errors=True)
            if self.store is not None:
                # The catalog row goes only once the objects are gone, so a
                # store that fails now is asked again (later, or at start).
                try:
                    self.store.delete(dataset, split_id)
                except SplitStoreError as e:
                    log.warning("%s; will retry", e)
                    with self._lock:
                        self._retiring.append((time.monotonic() + self.retire_grace, dataset, split_id))
                    continue
            gone.append(split_id)
        self.catalog.forget(gone)
