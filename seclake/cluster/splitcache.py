"""The splits a searcher keeps open, and its local copies of stored splits.

Splits are immutable, so an open split never goes stale; one deleted by a
merge stays readable until dropped (its files stay mapped) and is simply
never asked for again. Opening costs a few milliseconds (tantivy reads the
segment metas and maps the files), so keeping splits open is the first
cache; ``max_open`` bounds file handles and mappings (least recently used
closed first).

On a shared filesystem splits are opened in place. With a split store
(object storage, ``storage/splitstore.py``) tantivy still needs a directory:
a split is downloaded into ``cache_dir/<dataset>/<split id>`` the first
time it is needed (to a temporary name, renamed when complete), and these
copies are the second cache, kept under ``max_bytes``: past it the least
recently used copy is removed, never one a running search holds (``use``).
The budget can be passed by the splits in use and by the one just
downloaded, never by more. Copies left by an earlier run of the searcher
are found again at start (oldest download first in line for removal).
"""

from __future__ import annotations

import logging
import shutil
import threading
import uuid
from collections import Counter, OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from seclake.record.dataset import DATASETS
from seclake.storage.layout import check_split, split_path
from seclake.storage.pathname import UnsafeName, inside
from seclake.storage.split import META_FILE, Split
from seclake.storage.splitstore import PARTIAL_PREFIX, SplitStore

log = logging.getLogger("seclake.cluster")

DEFAULT_MAX_BYTES = 10 * 1024**3


def _size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


class SplitCache:
    def __init__(
        self,
        splits_dir: Path,
        max_open: int = 2000,
        *,
        store: SplitStore | None = None,
        cache_dir: Path | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ):
        if store is not None and cache_dir is None:
            raise ValueError("a split cache over a split store needs a cache directory")
        self.splits_dir = Path(splits_dir)
        self.max_open = max_open
        self.store = store
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.max_bytes = max_bytes
        self._open: OrderedDict[str, Split] = OrderedDict()
        # Local copies (store mode): split id -> (dataset, bytes), least recently used first.
        self._copies: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._bytes = 0
        self._pins: Counter[str] = Counter()
        self._loading: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.opened = 0  # splits opened since start (hits are the rest)
        self.downloaded = 0  # splits copied from the store since start
        self.evicted = 0  # local copies removed for the byte budget
        if store is not None:
            self._find_copies()

    # -- what searches call -------------------------------------------

    def get(self, dataset: str, split_id: str) -> Split:
        """The open split; in store mode downloaded first when there is no local copy."""
        check_split(dataset, split_id, "bad split reference")
        with self._lock:
            split = self._open.get(split_id)
            if split is not None:
                self._open.move_to_end(split_id)
                if split_id in self._copies:
                    self._copies.move_to_end(split_id)
                return split
        # Pinned while it is fetched and opened, so another thread's download
        # cannot remove it in between; opened outside the lock (two threads
        # may both open one split once).
        self._pin(split_id)
        try:
            # Opened here, as it is listed: warming opens the index before a
            # search needs it, and a search never pays for the open.
            split = Split(self._local(dataset, split_id)).open()
            with self._lock:
                self.opened += 1
                self._open[split_id] = split
                self._open.move_to_end(split_id)
                while len(self._open) > self.max_open:
                    self._open.popitem(last=False)
        finally:
            # Unpinned once listed as open, so removing its copy also closes it.
            self._unpin(split_id)
        return split

    def warm(self, splits: list[tuple[str, str, int]]) -> int:
        """Open (downloading first in store mode) splits before a search asks for
        them, in the order given (dataset, split id, size in bytes); how many.

        Warming never evicts: it stops at the byte budget and at ``max_open``,
        so it cannot push out copies searches are using. A split that cannot
        be fetched is skipped (its first search will say why).
        """
        warmed = 0
        for dataset, split_id, size in splits:
            with self._lock:
                if split_id in self._open:
                    continue
                if len(self._open) >= self.max_open:
                    break
                if self.store is not None and split_id not in self._copies and self._bytes + size > self.max_bytes:
                    break
            try:
                if self.store is not None and self._local(dataset, split_id, evict=False) is None:
                    break  # the catalog's size left out the metadata file, and that did not fit
                self.get(dataset, split_id)
            except Exception as e:  # noqa: BLE001 - warming is best effort
                log.warning("could not warm split %s/%s: %s", dataset, split_id, e)
                continue
            warmed += 1
        return warmed

    @contextmanager
    def use(self, dataset: str, split_id: str) -> Iterator[Split]:
        """The split, its local copy kept (not evicted) until the block ends."""
        self._pin(split_id)
        try:
            yield self.get(dataset, split_id)
        finally:
            self._unpin(split_id)

    def _pin(self, split_id: str) -> None:
        with self._lock:
            self._pins[split_id] += 1

    def _unpin(self, split_id: str) -> None:
        with self._lock:
            self._pins[split_id] -= 1
            if self._pins[split_id] > 0:
                return
            del self._pins[split_id]
            # Over budget while splits were in use: back under it once they are not.
            victims = self._victims() if self._bytes > self.max_bytes else []
        self._remove(victims)

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    @property
    def cached_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def copies(self) -> list[str]:
        """Split ids with a local copy, least recently used first."""
        with self._lock:
            return list(self._copies)

    # -- local copies -------------------------------------------------

    def _local(self, dataset: str, split_id: str, *, evict: bool = True) -> Path | None:
        """The split's local directory, downloaded first when needed. Past the
        byte budget the least recently used copies are removed, or with
        ``evict`` False (warming) this new copy instead, and None returned."""
        if self.store is None:
            return split_path(self.splits_dir, dataset, split_id)
        assert self.cache_dir is not None
        path = split_path(self.cache_dir, dataset, split_id)
        with self._lock:
            if split_id in self._copies:
                self._copies.move_to_end(split_id)
                return path
            loading = self._loading.setdefault(split_id, threading.Lock())
        # One download per split: other threads wanting it wait for this one.
        with loading:
            with self._lock:
                if split_id in self._copies:
                    return path
            try:
                size = self.store.download(dataset, split_id, path)
            finally:
                with self._lock:
                    self._loading.pop(split_id, None)
            with self._lock:
                self.downloaded += 1
                self._copies[split_id] = (dataset, size)
                self._bytes += size
                kept = evict or self._bytes <= self.max_bytes
                if kept:
                    victims = self._victims()
                else:
                    trash = self._take_off(split_id)
                    victims = [trash] if trash is not None else []
        self._remove(victims)
        return path if kept else None

    def _victims(self) -> list[Path]:
        """Take copies off the books, oldest use first, until under budget (lock held)."""
        assert self.cache_dir is not None
        out = []
        for split_id in list(self._copies):
            if self._bytes <= self.max_bytes:
                break
            if self._pins.get(split_id) or split_id in self._loading:
                continue
            trash = self._take_off(split_id)
            if trash is not None:
                out.append(trash)
        return out

    def _take_off(self, split_id: str) -> Path | None:
        """Drop a copy from the books and rename it away for removal (lock held)."""
        assert self.cache_dir is not None
        dataset, size = self._copies.pop(split_id)
        self._bytes -= size
        self._open.pop(split_id, None)
        self.evicted += 1
        # Renamed away at once, so a new download of the same split
        # can take the name while the old files are still being removed.
        try:
            path = split_path(self.cache_dir, dataset, split_id)
        except UnsafeName as e:  # a link put in the cache since the copy was made: never followed
            log.error("could not remove cached split: %s", e)
            return None
        trash = path.with_name(f"{PARTIAL_PREFIX}evicted-{split_id}-{uuid.uuid4().hex[:8]}")
        try:
            path.rename(trash)
            return trash
        except OSError as e:
            log.warning("could not remove cached split %s: %s", path, e)
            return None

    @staticmethod
    def _remove(paths: list[Path]) -> None:
        # An open split's files stay mapped after removal (as after a merge).
        for p in paths:
            shutil.rmtree(p, ignore_errors=True)

    def _find_copies(self) -> None:
        """Take over the copies an earlier run left; drop what a crash left half done."""
        assert self.cache_dir is not None
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        found = []
        for dataset_dir in self.cache_dir.iterdir():
            if dataset_dir.name not in DATASETS or dataset_dir.is_symlink() or not dataset_dir.is_dir():
                # Not a copy's directory: a link here would have the sweep below delete where it leads.
                log.warning("left alone in the split cache %s: %s is not a dataset directory of seclake's",
                            self.cache_dir, dataset_dir.name)
                continue
            for d in dataset_dir.iterdir():
                try:
                    inside(self.cache_dir, dataset_dir.name, d.name, what="cached split")
                except UnsafeName as e:
                    log.error("left alone in the split cache: %s", e)
                    continue
                if d.name.startswith(PARTIAL_PREFIX) or not (d / META_FILE).is_file():
                    shutil.rmtree(d, ignore_errors=True)
                    continue
                try:
                    check_split(dataset_dir.name, d.name, f"split cache {self.cache_dir}")
                except UnsafeName as e:
                    log.warning("left alone: %s", e)
                    continue
                found.append((d.stat().st_mtime, dataset_dir.name, d.name, _size(d)))
        with self._lock:
            for _, dataset, split_id, size in sorted(found):
                self._copies[split_id] = (dataset, size)
                self._bytes += size
            victims = self._victims()
        self._remove(victims)
