"""An exact search over records held in memory, with the lake engine's meaning.

Small datasets kept in the metadata database (behavior summaries) are
searched here instead of in splits. The answer obeys query-semantics.md the
way ``seclake.search.root.Root`` does: the query is evaluated by the Python
matcher (the reference meaning the tantivy engine is tested against), facet
buckets are ranked and spelled by the same ``merge_facet``, and every count
is exact because every record is looked at.

Records come as ``(id, record)``. Ties in sorting are broken by that id in
the sort direction, so pages never repeat or skip a record.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Sequence
from typing import Any

from seclake.errors import SearchTimeout
from seclake.query import ast
from seclake.query.matcher import compile_matcher
from seclake.record.dataset import Dataset
from seclake.record.flatten import values_at
from seclake.record.value import as_number, keyword, scalar_text
from seclake.search.leaf import FacetCounts
from seclake.search.plan import SearchPlan
from seclake.search.root import Hit, SearchResult, merge_facet
from seclake.storage.fieldmap import MAX_TERM_CHARS, SEP

SPLIT_ID = "memory"


# Records between two looks at the clock: a few milliseconds of matching.
CHECK_EVERY = 2048


class _Deadline:
    """Stops a search that runs past ``plan.timeout``: matching is linear
    (RE2), but a broad query over many records still takes time, and the
    worker thread it holds serves no one else meanwhile."""

    def __init__(self, started: float, timeout: float | None):
        self.timeout = timeout
        self.stop = None if timeout is None else started + timeout

    def every(self, items: Sequence[Any]) -> Any:
        stop = self.stop
        if stop is None:
            yield from items
            return
        for i, item in enumerate(items):
            if i % CHECK_EVERY == 0 and time.perf_counter() > stop:
                raise SearchTimeout(
                    f"the search was stopped after {self.timeout:g} s (setting search_timeout_seconds), "
                    f"having looked at {i} of {len(items)} records; narrow the time range or the query"
                )
            yield item


def search_records(records: Sequence[tuple[str, dict[str, Any]]], plan: SearchPlan, dataset: Dataset) -> SearchResult:
    started = time.perf_counter()
    deadline = _Deadline(started, plan.timeout)
    match = compile_matcher(_bounded(plan, dataset), dataset)
    found = [(pos, rid, rec) for pos, (rid, rec) in enumerate(deadline.every(records)) if match(rec)]

    sort_path = plan.sort_path or dataset.default_sort
    keyed = [(_sort_value(rec, sort_path), pos, rid, rec) for pos, rid, rec in found]
    present = [k for k in keyed if k[0] is not None]
    missing = [k for k in keyed if k[0] is None]
    # Python's sort is stable, so sorting by id then by value gives value-then-id
    # order; reverse=True flips both, which is what "ties by id in the sort
    # direction" means. Records lacking the value come last either way.
    present.sort(key=lambda k: k[2], reverse=plan.descending)
    present.sort(key=lambda k: k[0], reverse=plan.descending)  # type: ignore[arg-type,return-value]
    missing.sort(key=lambda k: k[2], reverse=plan.descending)
    ordered = present + missing
    page = ordered[plan.offset : plan.offset + plan.limit]
    hits = [Hit(SPLIT_ID, pos, value, rec, record_id=rid) for value, pos, rid, rec in page]

    matched = [rec for _, _, rec in found]
    facets = {f.path: merge_facet([_facet_counts(deadline.every(matched), f.path, dataset)], f.size) for f in plan.facets}
    histograms = {h.name: _histogram(matched, dataset, h.starts, h.end) for h in plan.histograms}
    took = int((time.perf_counter() - started) * 1000)
    return SearchResult(len(found), hits, facets, histograms, took, 1)


def _bounded(plan: SearchPlan, dataset: Dataset) -> ast.Node:
    """The plan's query with its time range, built as the lake engine builds it."""
    if plan.range_from is None and plan.range_to is None:
        return plan.query
    bound = ast.Range(
        path=plan.range_path or dataset.time_field,
        lo=plan.range_from,
        hi=plan.range_to,
        include_lo=True,
        include_hi=True,
        kind="number",
    )
    return ast.And(children=(bound, plan.query))


def _sort_value(record: dict[str, Any], path: str) -> int | float | None:
    """The first numeric value at ``path``; JSON integers are kept exact."""
    for value in values_at(record, path):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        number = as_number(value)
        if number is not None:
            return int(number) if number.is_integer() and abs(number) < 2**63 else number
    return None


def _facet_counts(records: Iterable[dict[str, Any]], path: str, dataset: Dataset) -> FacetCounts:
    """Counts shaped like one split's, so ``merge_facet`` ranks and spells them."""
    counts = FacetCounts()
    # The lake indexes neither the time field nor text fields as keywords.
    if path == dataset.time_field or dataset.is_text(path):
        return counts
    # Keywords are cut where the lake cuts its terms, so very long values group alike.
    room = MAX_TERM_CHARS - len(path) - len(SEP)
    for rec in records:
        # One spelling per keyword and record, the first one met: the lake's rule.
        seen: dict[str, str] = {}
        for value in values_at(rec, path):
            seen.setdefault(keyword(value)[:room], scalar_text(value))
        for norm, spelling in seen.items():
            counts.add(norm, spelling, 1)
    return counts


def _histogram(records: list[dict[str, Any]], dataset: Dataset, starts: tuple[int, ...], end: int) -> list[tuple[int, int]]:
    sums = [0] * len(starts)
    if not starts:
        return []
    for rec in records:
        t = rec.get(dataset.time_field)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t < starts[0] or t >= end:
            continue
        sums[bisect.bisect_right(starts, t) - 1] += 1
    return list(zip(starts, sums))
