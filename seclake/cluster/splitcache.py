"""The splits a searcher keeps open, least recently used dropped first.

Splits are immutable, so an open split never goes stale; one deleted by a
merge stays readable until dropped (its files stay mapped) and is simply
never asked for again. Opening costs a few milliseconds (tantivy reads the
segment metas and maps the files), so keeping splits open is the cache; the
bound keeps file handles and mappings finite. Splits are read from the
shared splits directory in place: no local copy is made (that is what object
storage would need, and it is not built yet; docs/deploy-cluster.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from seclake.storage.split import Split


class SplitCache:
    def __init__(self, splits_dir: Path, max_open: int = 2000):
        self.splits_dir = Path(splits_dir)
        self.max_open = max_open
        self._open: OrderedDict[str, Split] = OrderedDict()
        self._lock = threading.Lock()
        self.opened = 0  # splits opened since start (hits are the rest)

    def get(self, dataset: str, split_id: str) -> Split:
        if "/" in dataset or "/" in split_id or split_id.startswith("."):
            raise ValueError(f"bad split reference {dataset}/{split_id}")
        with self._lock:
            split = self._open.get(split_id)
            if split is not None:
                self._open.move_to_end(split_id)
                return split
        # Opened outside the lock: two threads may both open one split once.
        split = Split(self.splits_dir / dataset / split_id)
        with self._lock:
            self.opened += 1
            self._open[split_id] = split
            self._open.move_to_end(split_id)
            while len(self._open) > self.max_open:
                self._open.popitem(last=False)
        return split

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)
