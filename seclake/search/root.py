"""The root of a search: plan the splits, fan out to leaves, merge exactly.

Totals add up; hits are merged by (sort value, docId) across splits, so any
offset gives the same page as one big index would; facet counts are exact
per split (every keyword of the split is counted), so their sum is exact and
``doc_count_error_upper_bound`` is always 0; histograms add bucket by bucket.
Only the winning hits' records are read from the splits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import orjson

from seclake.query import ast
from seclake.query.tantivy_compiler import compile_for_split
from seclake.record.dataset import DATASETS
from seclake.search.leaf import FacetCounts, Leaf, LeafHit, LeafResult
from seclake.search.plan import SearchPlan
from seclake.storage.split import Split


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


def _spelling(spellings: dict[str, int]) -> str:
    # The most frequent spelling as ingested; ties go to the smallest code point order.
    return min(spellings.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def merge_facet(parts: list[FacetCounts], size: int) -> FacetResult:
    combined: dict[str, list] = {}
    for part in parts:
        for norm, (count, spellings) in part.buckets.items():
            slot = combined.get(norm)
            if slot is None:
                combined[norm] = [count, dict(spellings)]
            else:
                slot[0] += count
                for s, n in spellings.items():
                    slot[1][s] = slot[1].get(s, 0) + n
    ranked = sorted(combined.items(), key=lambda kv: (-kv[1][0], kv[0]))
    top = ranked[:size]
    rest = sum(v[0] for _, v in ranked[size:])
    return FacetResult([Bucket(_spelling(v[1]), v[0]) for _, v in top], rest)


class Root:
    def __init__(self, splits_for: Callable[[str, int | None, int | None], list[Split]], executor: Executor, *, max_expansions: int = 10000):
        self.splits_for = splits_for
        self.executor = executor
        self.max_expansions = max_expansions

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
            splits = self.splits_for(plan.dataset, plan.range_from, plan.range_to)
        else:
            splits = self.splits_for(plan.dataset, None, None)
        sort_path = plan.sort_path or dataset.default_sort
        k = plan.offset + plan.limit

        def run(split: Split) -> LeafResult:
            query = compile_for_split(node, split, dataset, max_expansions=self.max_expansions)
            leaf = Leaf(split, query)
            sort_field = "ts" if sort_path == dataset.time_field else split.fields.numbers.get(sort_path)
            total, hits = leaf.top(sort_field, sort_path, plan.descending, k)
            facets = {f.path: leaf.facet(f.path) for f in plan.facets} if total else {}
            hist = {h.name: leaf.histogram(h.starts, h.end) for h in plan.histograms} if total else {}
            return LeafResult(total, hits, facets, hist)

        results = list(self.executor.map(run, splits)) if len(splits) > 1 else [run(s) for s in splits]
        total = sum(r.total for r in results)
        all_hits: list[LeafHit] = [h for r in results for h in r.hits]
        all_hits.sort(key=lambda h: h.key)
        page = all_hits[plan.offset : k]
        hits = [
            Hit(h.split.meta.split_id, h.docid, h.sort_value, orjson.loads(h.split.searcher.doc(h.address).get_first("src")))
            for h in page
        ]
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
        took = int((time.perf_counter() - started) * 1000)
        return SearchResult(total, hits, facets, histograms, took, len(splits))
