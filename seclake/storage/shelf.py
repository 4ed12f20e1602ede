"""The open splits searches see: published splits by id, under one lock.

The flusher puts new splits here, the merger swaps merged ones for their
result, the janitor takes expired ones away; searches list what overlaps
their time range. Each change is one step under the lock, so a search sees
a merge's sources or its result, never both and never neither.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from seclake.storage.split import DamagedSplit, Split


class Shelf:
    def __init__(self, warm: bool = True) -> None:
        """``warm``: open each split's index as it is put here, so no search
        pays for it (a server); else on first use (``Split``: a command that
        only writes the lake never opens one)."""
        self._splits: dict[str, Split] = {}
        self._lock = threading.Lock()
        self.warm = warm

    def ready(self, splits: Iterable[Split]) -> list[Split]:
        """``splits``, opened now if this shelf is warm: called before they are
        published, so that this node's searches have them as soon as another
        node's can (opening took long enough under load for a search on the
        ingest node to miss a split a search on another node had found)."""
        return [s.open() if self.warm else s for s in splits]

    def put(self, splits: Iterable[Split]) -> None:
        splits = self.ready(splits)
        with self._lock:
            for s in splits:
                self._splits[s.meta.split_id] = s

    def swap(self, new: Split, old: Sequence[str]) -> None:
        """``new`` in place of the splits ``old`` (a merge's result and sources)."""
        (new,) = self.ready([new])
        with self._lock:
            self._splits[new.meta.split_id] = new
            for split_id in old:
                self._splits.pop(split_id, None)

    def drop(self, split_ids: Iterable[str]) -> None:
        with self._lock:
            for split_id in split_ids:
                self._splits.pop(split_id, None)

    def pick(self, split_ids: Iterable[str]) -> list[Split]:
        """Those of ``split_ids`` that are open, in that order."""
        with self._lock:
            return [self._splits[i] for i in split_ids if i in self._splits]

    def all(self) -> list[Split]:
        with self._lock:
            return list(self._splits.values())

    def damaged(self) -> list[DamagedSplit]:
        """The splits here this node could not read at start."""
        return [s for s in self.all() if isinstance(s, DamagedSplit)]

    def overlapping(self, dataset: str, time_from: int | None, time_to: int | None) -> list[Split]:
        """The splits of a dataset that overlap [time_from, time_to], oldest first."""
        out = [
            s for s in self.all()
            if s.meta.dataset == dataset
            and (time_from is None or s.meta.time_max >= time_from)
            and (time_to is None or s.meta.time_min <= time_to)
        ]
        out.sort(key=lambda s: (s.meta.time_min, s.meta.split_id))
        return out
