"""The root of a search: plan the splits, fan out to leaves, merge exactly.

The splits are those of the dataset overlapping the time range, less those
whose customers the query cannot match (``pruning.py``).

Totals add up; hits are merged by (sort value, docId) across splits, so any
offset gives the same page as one big index would; facet counts are exact
per split (every keyword of the split is counted), so their sum is exact and
``doc_count_error_upper_bound`` is always 0; histograms add bucket by bucket.
Only the winning hits' records are read from the splits.

The leaves run through a ``LeafExecutor``: in this process by default
(``InProcessLeaves``), on searcher actors of a Ray cluster in cluster mode
(``seclake.cluster``). Planning and merging are this module's in both modes.
A leaf executor may report splits as failed (cluster mode: a searcher died
or missed the deadline twice; any mode: a split the lake could not read at
start); the result then names them in ``failed``.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from itertools import islice
from operator import attrgetter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from seclake.query import ast
from seclake.record.dataset import DATASETS
from seclake.search.leaf import FacetCounts, LeafHit, LeafResult, LeafTask, fetch_sources, run_leaf
from seclake.search.plan import SearchPlan
from seclake.search.pruning import prune
from seclake.storage.split import DamagedSplit, Split, meta_of


@dataclass
class Hit:
    split_id: str
    docid: int
    sort_value: int | float | None
    source: dict[str, Any]
    # The record's own id, for engines whose records carry one (memory search).
    record_id: str | None = None


@dataclass
class Bucket:
    key: str
    doc_count: int


@dataclass
class FacetResult:
    buckets: list[Bucket]
    sum_other_doc_count: int


@dataclass
class SearchResult:
    total: int
    hits: list[Hit]
    facets: dict[str, FacetResult] = field(default_factory=dict)
    histograms: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    took_ms: int = 0
    splits: int = 0
    # Splits that gave no answer (cluster mode; a split the node cannot read):
    # the result is partial when non-empty.
    failed: list[str] = field(default_factory=list)
    # With ``SearchPlan.catalog``: record path -> matching records holding it
    # (exact: each split counts its own), and each path's kinds across splits.
    paths: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, set[str]] = field(default_factory=dict)

    @property
    def successful(self) -> int:
        return self.splits - len(self.failed)


_HIT_KEY = attrgetter("key")


def _spelling(norm: str, records: int, parts: list[FacetCounts]) -> str:
    """The most frequent spelling of a keyword as ingested; ties go to the
    smallest in code point order. Records not counted under another
    spelling were spelled as the keyword itself."""
    spellings: dict[str, int] = {}
    for part in parts:
        for spelling, n in part.odd.get(norm, {}).items():
            spellings[spelling] = spellings.get(spelling, 0) + n
    own = records - sum(spellings.values())
    if own > 0:
        spellings[norm] = own
    return min(spellings.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def merge_facet(parts: list[FacetCounts], size: int) -> FacetResult:
    if len(parts) == 1:
        combined = parts[0].counts
    else:
        combined = {}
        for part in parts:
            for norm, n in part.counts.items():
                combined[norm] = combined.get(norm, 0) + n
    # Only the top buckets need ranking and a spelling.
    top = heapq.nsmallest(size, combined.items(), key=lambda kv: (-kv[1], kv[0])) if size > 0 else []
    rest = sum(combined.values()) - sum(n for _, n in top)
    return FacetResult([Bucket(_spelling(norm, n, parts), n) for norm, n in top], rest)



class LeafExecutor(Protocol):
    """Runs the leaves of one search; embedded and cluster mode each have one."""

    def search(self, splits: Sequence[Any], task: LeafTask) -> tuple[dict[str, LeafResult], list[str]]:
        """Each split's result by split id, and the ids of the splits that failed."""
        ...

    def fetch(self, splits: dict[str, Any], hits: Sequence[LeafHit]) -> tuple[dict[tuple[str, int], dict], list[str]]:
        """The records of ``hits`` by (split id, docId), and the ids of the splits that failed."""
        ...


class InProcessLeaves:
    """Leaves in this process, on a thread pool (tantivy releases the GIL).

    Splits are open ``Split`` objects (the lake's), or catalog entries that
    ``open_split`` opens (an API node that reads a lake another node writes).
    Errors propagate: in one process there is no partial answer, but for
    the splits the lake could not read at start (``DamagedSplit``), named as
    failed.

    The calling thread searches splits too, with up to ``helpers`` pool
    threads, each taking the next split as it finishes one. A task per split
    (``Executor.map``) cost a future, a lock and a thread hop per split: on
    a needle over 30 day splits, where a leaf takes ~50 µs in tantivy, that
    was 8.7% of the server's interpreter time (py-spy, the bench's Q2 and Q8
    classes). A helper that starts once every split is taken returns at
    once, and the caller does not wait for it: under load, when the pool is
    busy with other searches, the caller does the work itself.
    """

    def __init__(self, pool: Executor, open_split: Callable[[Any], Split] | None = None, helpers: int = 3):
        self.pool = pool
        self.open_split = open_split
        self.helpers = helpers

    def _open(self, split: Any) -> Split:
        if isinstance(split, Split):
            return split
        if self.open_split is None:
            raise TypeError(f"no way to open split {split!r}")
        return self.open_split(split)

    def search(self, splits: Sequence[Any], task: LeafTask) -> tuple[dict[str, LeafResult], list[str]]:
        # A split the lake could not read at start is named as failed: the
        # answer is partial, and says so (``_shards``), like cluster mode's.
        damaged = [meta_of(s).split_id for s in splits if isinstance(s, DamagedSplit)]
        splits = [s for s in splits if not isinstance(s, DamagedSplit)]

        def run(split: Any) -> LeafResult:
            return run_leaf(self._open(split), task)

        results = self._each(run, splits)
        return {meta_of(s).split_id: r for s, r in zip(splits, results)}, damaged

    def _each(self, fn: Callable[[Any], LeafResult], items: Sequence[Any]) -> list[LeafResult]:
        """``fn`` over ``items`` in this thread and the helpers (see the class), in order;
        the first error raised once every item is done."""
        if len(items) <= 1:
            return [fn(item) for item in items]
        results: list[Any] = [None] * len(items)
        errors: list[BaseException] = []
        todo = deque(enumerate(items))  # popleft is atomic: each item is taken once
        left = len(items)
        lock = threading.Lock()
        done = threading.Event()

        def drain() -> None:
            nonlocal left
            while True:
                try:
                    i, item = todo.popleft()
                except IndexError:
                    return
                try:
                    results[i] = fn(item)
                except BaseException as e:  # noqa: BLE001 - raised in the caller's thread below
                    errors.append(e)
                with lock:
                    left -= 1
                    if left == 0:
                        done.set()

        for _ in range(min(self.helpers, len(items) - 1)):
            self.pool.submit(drain)
        drain()
        done.wait()
        if errors:
            raise errors[0]
        return results

    def fetch(self, splits: dict[str, Any], hits: Sequence[LeafHit]) -> tuple[dict[tuple[str, int], dict], list[str]]:
        out: dict[tuple[str, int], dict] = {}
        by_split: dict[str, list[LeafHit]] = {}
        for h in hits:
            by_split.setdefault(h.split_id, []).append(h)
        for sid, group in by_split.items():
            split = splits[sid]
            if isinstance(split, Split) and all(h.address is not None for h in group):
                for h in group:
                    out[(sid, h.docid)] = orjson.loads(split.body(h.docid, h.address))
            else:
                for docid, source in fetch_sources(self._open(split), [h.docid for h in group]).items():
                    out[(sid, docid)] = source
        return out, []


class Root:
    def __init__(
        self,
        splits_for: Callable[[str, int | None, int | None], Sequence[Any]],
        executor: Executor | LeafExecutor,
    ):
        """``executor``: a thread pool (leaves in this process) or a ``LeafExecutor``."""
        self.splits_for = splits_for
        self.leaves: LeafExecutor = InProcessLeaves(executor) if isinstance(executor, Executor) else executor

    def search(self, plan: SearchPlan) -> SearchResult:
        started = time.perf_counter()
        dataset = DATASETS[plan.dataset]
        range_path = plan.range_path or dataset.time_field
        node = plan.query
        if plan.range_from is not None or plan.range_to is not None:
            bound = ast.Range(
                path=range_path,
                lo=plan.range_from,
                hi=plan.range_to,
                include_lo=True,
                include_hi=True,
                kind="number",
            )
            node = ast.And(children=(bound, node))
        if range_path == dataset.time_field:
            listed = self.splits_for(plan.dataset, plan.range_from, plan.range_to)
        else:
            listed = self.splits_for(plan.dataset, None, None)
        # Splits whose customers the query (data policies included) excludes
        # are not searched, nor counted as searched.
        splits = prune(listed, node, dataset)
        sort_path = plan.sort_path or dataset.default_sort
        k = plan.offset + plan.limit
        task = LeafTask(
            dataset=plan.dataset,
            query=node,
            sort_path=sort_path,
            descending=plan.descending,
            k=k,
            facets=tuple(f.path for f in plan.facets),
            histograms=tuple((h.name, h.starts, h.end) for h in plan.histograms),
            catalog=plan.catalog,
        )
        by_id = {meta_of(s).split_id: s for s in splits}
        answered, failed = self.leaves.search(splits, task)
        # Results in plan order, so merging does not depend on arrival order.
        results = [answered[sid] for sid in by_id if sid in answered]
        total = sum(r.total for r in results)
        # Each leaf's hits come sorted (sorting them again is linear): merge
        # the lists and stop at k rather than sorting every split's k hits.
        ordered = [sorted(r.hits, key=_HIT_KEY) for r in results]
        page: list[LeafHit] = list(islice(heapq.merge(*ordered, key=_HIT_KEY), plan.offset, k))
        sources, fetch_failed = self.leaves.fetch(by_id, page) if page else ({}, [])
        hits = [
            Hit(h.split_id, h.docid, h.sort_value, sources[(h.split_id, h.docid)])
            for h in page
            if (h.split_id, h.docid) in sources
        ]
        failed = sorted(set(failed) | set(fetch_failed))
        facets = {
            f.path: merge_facet([r.facets[f.path] for r in results if f.path in r.facets], f.size) for f in plan.facets
        }
        histograms = {}
        for h in plan.histograms:
            sums = [0] * len(h.starts)
            for r in results:
                for i, c in enumerate(r.histograms.get(h.name, ())):
                    sums[i] += c
            histograms[h.name] = list(zip(h.starts, sums))
        paths: dict[str, int] = {}
        kinds: dict[str, set[str]] = {}
        for r in results:
            for path, n in r.paths.items():
                paths[path] = paths.get(path, 0) + n
            for path, kind in r.kinds.items():
                kinds.setdefault(path, set()).add(kind)
        took = int((time.perf_counter() - started) * 1000)
        return SearchResult(total, hits, facets, histograms, took, len(splits), failed, paths, kinds)
