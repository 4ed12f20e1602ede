"""Search options on the wire (spec 2.4, 2.5, client-compat) -> a SearchPlan.

Every search call (events, flows, timeline, summaries, audit) reads its
``options`` here, so limits and error messages are the same everywhere.
Each field is checked as hostile input: type, size, range; an error names
the field (``options.facets.facets[3].size``) and the value sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union

from seclake.errors import LimitExceeded, ValidationFailed
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

MAX_NAME = 256
FACET_ORDERS = {None, "count", "desc", "_count"}


def _int(value: Any, where: str, *, minimum: int | None = None, default: int | None = None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool):
        raise ValidationFailed(where, f"must be an integer, not a boolean ({value!r})")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
        value = int(value)
    if not isinstance(value, int):
        raise ValidationFailed(where, f"must be an integer, not {value!r}"[:200])
    if abs(value) > 2**62:
        raise ValidationFailed(where, f"{value} is out of range")
    if minimum is not None and value < minimum:
        raise ValidationFailed(where, f"must be at least {minimum}, not {value}")
    return value


def _str(value: Any, where: str, *, max_len: int = MAX_NAME, default: str | None = None) -> str | None:
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValidationFailed(where, f"must be a string, not {type(value).__name__}")
    if len(value) > max_len:
        raise LimitExceeded(f"{where} length", len(value), max_len)
    return value


def _obj(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed(where, f"must be an object, not {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationFailed(where, f"must be an array, not {type(value).__name__}")
    return value


def read_options(kargs: dict[str, Any]) -> dict[str, Any]:
    return _obj(kargs.get("options"), "options")


def build_plan(
    options: dict[str, Any],
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
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    offset = _int(options.get("fetchOffset"), "options.fetchOffset", minimum=0, default=0)
    limit = _int(options.get("fetchLimit"), "options.fetchLimit", minimum=0, default=10)
    assert offset is not None and limit is not None
    if limit > settings.max_fetch_limit:
        raise LimitExceeded("options.fetchLimit", limit, settings.max_fetch_limit)
    if offset + limit > settings.max_result_window:
        raise LimitExceeded("options.fetchOffset + options.fetchLimit", offset + limit, settings.max_result_window)

    query = search_query(options, dataset, settings, now_ms=now_ms)
    facets_obj = _obj(options.get("facets"), "options.facets")

    sort_field = _str(options.get("sortField"), "options.sortField")
    sort_path = dataset.resolve(sort_field) if sort_field else (default_sort or dataset.default_sort)
    order = _str(options.get("sortOrder"), "options.sortOrder", default="desc")
    assert order is not None
    if order.lower() not in ("asc", "desc"):
        raise ValidationFailed("options.sortOrder", f"must be asc or desc, not {order!r}")

    range_field = _str(options.get("range_field"), "options.range_field")
    range_path = dataset.resolve(range_field) if range_field else (default_range_field or dataset.time_field)
    if not dataset.is_date(range_path):
        raise ValidationFailed(
            "options.range_field", f"{range_field!r} is not a date field; use one of {sorted(dataset.date_fields)}"
        )
    range_from = _int(options.get("range_from"), "options.range_from")
    range_to = _int(options.get("range_to"), "options.range_to")
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
        descending=order.lower() == "desc",
        offset=offset,
        limit=limit,
        facets=facets,
        histograms=histograms,
        timeout=settings.search_timeout_seconds,
    )
    return plan, names


def search_query(options: dict[str, Any], dataset: Dataset, settings: Settings, *, now_ms: int) -> ast.Node:
    """The caller's own query: ``searchStr`` and the must/mustNot filters, without any data policy.

    This is what a response may echo (``query``, ``terms``); the plan's query
    may hold the caller's data policy too, which is never shown.
    """
    search_str = _str(options.get("searchStr"), "options.searchStr", max_len=settings.max_query_length, default="")
    limits = QueryLimits.from_settings(settings)
    query = parse(search_str or "", dataset, default_operator=settings.default_operator, limits=limits, now_ms=now_ms)
    facets_obj = _obj(options.get("facets"), "options.facets")
    filters = parse_filters(facets_obj.get("mustFilters"), facets_obj.get("mustNotFilters"), dataset, limits=limits)
    return ast.and_(query, filters)


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
    facets_obj: dict[str, Any], dataset: Dataset, settings: Settings
) -> tuple[tuple[FacetSpec, ...], dict[str, list[str]]]:
    entries = _list(facets_obj.get("facets"), "options.facets.facets")
    if len(entries) > settings.max_facets:
        raise LimitExceeded("number of facets", len(entries), settings.max_facets)
    specs: list[FacetSpec] = []
    # Two names may mean one path (``sip`` and ``@fields.sip``): counted
    # once, answered under every name sent (the first entry's size applies).
    names: dict[str, list[str]] = {}
    for i, entry in enumerate(entries):
        where = f"options.facets.facets[{i}]"
        entry = _obj(entry, where)
        field = _str(entry.get("field"), where + ".field")
        if not field:
            raise ValidationFailed(where + ".field", "is required: the field to count values of")
        size = _int(entry.get("size"), where + ".size", minimum=1, default=10)
        assert size is not None
        if size > settings.max_facet_size:
            raise LimitExceeded(where + ".size", size, settings.max_facet_size)
        order = entry.get("order")
        if not isinstance(order, str | None) or order not in FACET_ORDERS:
            raise ValidationFailed(where + ".order", f"must be count or desc, not {order!r}"[:200])
        path = dataset.resolve(field)
        if path in names:
            if field not in names[path]:
                names[path].append(field)
            continue
        names[path] = [field]
        specs.append(FacetSpec(path, size))
    return tuple(specs), names


def _histograms(
    facets_obj: dict[str, Any],
    dataset: Dataset,
    settings: Settings,
    range_from: int | None,
    range_to: int | None,
    data_bounds: Bounds,
) -> tuple[HistogramSpec, ...]:
    entries = _list(facets_obj.get("dateFacets"), "options.facets.dateFacets")
    if len(entries) > settings.max_facets:
        raise LimitExceeded("number of dateFacets", len(entries), settings.max_facets)
    out = []
    for i, entry in enumerate(entries):
        where = f"options.facets.dateFacets[{i}]"
        entry = _obj(entry, where)
        name = _str(entry.get("name"), where + ".name", default="dateHistogram") or "dateHistogram"
        key = _str(entry.get("key"), where + ".key", default=dataset.time_field)
        if key and dataset.resolve(key) != dataset.time_field:
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
        interval = parse_interval(entry.get("interval"), lo, hi)
        starts, end = bucket_starts(interval, lo, hi, settings.max_histogram_buckets)
        out.append(HistogramSpec(name, starts, end))
    return tuple(out)
