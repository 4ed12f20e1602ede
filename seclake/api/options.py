"""Search options (spec 2.4, 2.5, client-compat) -> a SearchPlan.

Every search call (events, flows, timeline, summaries, audit, rules) turns
its ``options`` into a plan here, so limits and error messages are the same
everywhere. Their types and shapes were checked by the request model
(``api/request.py``); here what depends on the server's settings (page and
facet limits, query length) and on the dataset (which fields are dates,
what a query means). An error names the field (``options.fetchLimit``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Union

from seclake.api.request import Facets, SearchOptions
from seclake.errors import LimitExceeded, ValidationFailed
from seclake.model import typed
from seclake.query import ast
from seclake.query.limits import QueryLimits
from seclake.query.parser import parse, parse_filters
from seclake.record.dataset import Dataset
from seclake.search.histogram import bucket_starts, parse_interval
from seclake.search.plan import FacetSpec, HistogramSpec, SearchPlan
from seclake.settings import Settings

if TYPE_CHECKING:
    from seclake.search.root import SearchResult

# The time span of the data, or a function that finds it (called at most once).
Bounds = Union[tuple[int, int], Callable[[], "tuple[int, int] | None"], None]

def build_plan(
    options: SearchOptions | Mapping[str, Any],
    dataset: Dataset,
    settings: Settings,
    *,
    default_sort: str | None = None,
    default_range_field: str | None = None,
    data_bounds: Bounds = None,
    now_ms: int | None = None,
    restriction: ast.Node | None = None,
) -> tuple[SearchPlan, dict[str, list[str]]]:
    """The plan of a search, and the facet names to answer under (path -> names sent).

    ``restriction`` is the caller's data policy filter for the dataset
    (``Caller.restriction``): it is AND-ed into the plan's query, so hits,
    totals, facets and histograms all count only what the caller may see.
    ``data_bounds`` (the time span histograms without a range cover) may be
    given as a function, called only when needed; with a restriction it
    must be the bounds of the visible records (``visible_bounds``), or the
    buckets would show where other records lie.
    """
    options = typed(SearchOptions, options, "options")
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    offset = options.fetchOffset or 0
    limit = 10 if options.fetchLimit is None else options.fetchLimit
    if limit > settings.max_fetch_limit:
        raise LimitExceeded("options.fetchLimit", limit, settings.max_fetch_limit)
    if offset + limit > settings.max_result_window:
        raise LimitExceeded("options.fetchOffset + options.fetchLimit", offset + limit, settings.max_result_window)

    query = search_query(options, dataset, settings, now_ms=now_ms)
    facets_obj = options.facets or Facets()
    sort_path = dataset.resolve(options.sortField) if options.sortField else (default_sort or dataset.default_sort)
    order = options.sortOrder or "desc"

    range_field = options.range_field
    range_path = dataset.resolve(range_field) if range_field else (default_range_field or dataset.time_field)
    if not dataset.is_date(range_path):
        raise ValidationFailed(
            "options.range_field", f"{range_field!r} is not a date field; use one of {sorted(dataset.date_fields)}"
        )
    range_from, range_to = options.range_from, options.range_to
    if range_from is not None and range_to is not None and range_from > range_to:
        raise ValidationFailed("options.range_from", f"{range_from} is after options.range_to {range_to}")

    facets, names = _facets(facets_obj, dataset, settings)
    histograms = _histograms(facets_obj, dataset, settings, range_from, range_to, data_bounds)
    plan = SearchPlan(
        dataset=dataset.name,
        query=query if restriction is None else ast.and_(query, restriction),
        range_from=range_from,
        range_to=range_to,
        range_path=range_path,
        sort_path=sort_path,
        descending=order == "desc",
        offset=offset,
        limit=limit,
        facets=facets,
        histograms=histograms,
        timeout=settings.search_timeout_seconds,
    )
    return plan, names


def search_query(options: SearchOptions, dataset: Dataset, settings: Settings, *, now_ms: int) -> ast.Node:
    """The caller's own query: ``searchStr`` and the must/mustNot filters, without any data policy.

    This is what a response may echo (``query``, ``terms``); the plan's query
    may hold the caller's data policy too, which is never shown.
    """
    search_str = options.searchStr or ""
    if len(search_str) > settings.max_query_length:
        raise LimitExceeded("options.searchStr length", len(search_str), settings.max_query_length)
    limits = QueryLimits.from_settings(settings)
    query = parse(search_str, dataset, default_operator=settings.default_operator, limits=limits, now_ms=now_ms)
    facets = options.facets
    if facets is None:
        return query
    must, must_not = (None if f is None else [e.model_dump() for e in f]
                      for f in (facets.mustFilters, facets.mustNotFilters))
    return ast.and_(query, parse_filters(must, must_not, dataset, limits=limits))


def visible_bounds(
    all_bounds: Callable[[], tuple[int, int] | None],
    search: Callable[[SearchPlan], SearchResult],
    dataset: Dataset,
    restriction: ast.Node | None,
) -> Callable[[], tuple[int, int] | None]:
    """The earliest and latest time of the records a caller sees, as a function.

    Without a restriction these are ``all_bounds()`` (cheap, from the
    catalog). With one they come from two one-hit searches of the
    restriction, so no histogram bucket shows where hidden records lie.
    """
    if restriction is None:
        return all_bounds
    path = dataset.time_field

    def bounds() -> tuple[int, int] | None:
        ends = []
        for descending in (False, True):
            plan = SearchPlan(dataset.name, restriction, range_path=path, sort_path=path, descending=descending, limit=1)
            hits = search(plan).hits
            value = hits[0].sort_value if hits else None
            if value is None:
                return None
            ends.append(int(value))
        return ends[0], ends[1]

    return bounds


def _facets(
    facets_obj: Facets, dataset: Dataset, settings: Settings
) -> tuple[tuple[FacetSpec, ...], dict[str, list[str]]]:
    entries = facets_obj.facets or []
    if len(entries) > settings.max_facets:
        raise LimitExceeded("number of facets", len(entries), settings.max_facets)
    specs: list[FacetSpec] = []
    # Two names may mean one path (``sip`` and ``@fields.sip``): counted
    # once, answered under every name sent (the first entry's size applies).
    names: dict[str, list[str]] = {}
    for i, entry in enumerate(entries):
        size = 10 if entry.size is None else entry.size
        if size > settings.max_facet_size:
            raise LimitExceeded(f"options.facets.facets[{i}].size", size, settings.max_facet_size)
        path = dataset.resolve(entry.field)
        if path in names:
            if entry.field not in names[path]:
                names[path].append(entry.field)
            continue
        names[path] = [entry.field]
        specs.append(FacetSpec(path, size))
    return tuple(specs), names


def _histograms(
    facets_obj: Facets,
    dataset: Dataset,
    settings: Settings,
    range_from: int | None,
    range_to: int | None,
    data_bounds: Bounds,
) -> tuple[HistogramSpec, ...]:
    entries = facets_obj.dateFacets or []
    if len(entries) > settings.max_facets:
        raise LimitExceeded("number of dateFacets", len(entries), settings.max_facets)
    out = []
    for i, entry in enumerate(entries):
        where = f"options.facets.dateFacets[{i}]"
        name = entry.name or "dateHistogram"
        key = entry.key or dataset.time_field
        if dataset.resolve(key) != dataset.time_field:
            raise ValidationFailed(where + ".key", f"histograms are over {dataset.time_field}, not {key!r}")
        lo, hi = range_from, range_to
        if lo is None or hi is None:
            if callable(data_bounds):
                data_bounds = data_bounds()  # once, for every histogram
            if data_bounds is None:
                out.append(HistogramSpec(name, (), 0))  # no range and no data: no buckets
                continue
            lo = data_bounds[0] if lo is None else lo
            hi = data_bounds[1] if hi is None else hi
        interval = parse_interval(entry.interval, lo, hi)
        starts, end = bucket_starts(interval, lo, hi, settings.max_histogram_buckets)
        out.append(HistogramSpec(name, starts, end))
    return tuple(out)
