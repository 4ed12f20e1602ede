"""Event and flow search: ``ds/get_index_zoom_histogram_lv3`` (spec 2.4-2.6, 2.10)."""

from __future__ import annotations

import time
from typing import Any

from seclake.api.hitwrapper import say_if_incomplete, shards
from seclake.api.options import build_plan, search_query, visible_bounds
from seclake.api.registry import CallContext, call
from seclake.api.reply import EventSearchReply
from seclake.api.request import CatalogOptions, EventSearchRequest, SearchOptions
from seclake.errors import ValidationFailed
from seclake.query.echo import highlight_terms, highlights, to_dict
from seclake.record.dataset import DATASETS
from seclake.record.identity import record_id

def data_type_of(outer: str | None, options: SearchOptions | CatalogOptions) -> str:
    """``dataType`` beside the options or inside them (clients send either); event by default."""
    inner = options.dataType
    if outer is not None and inner is not None and outer != inner:
        raise ValidationFailed("options.dataType", f"{inner!r} contradicts dataType {outer!r}")
    return outer or inner or "event"


# The flow fields the clients of the original read under @metaflow.flow
# (client-compat); seclake keeps them in @fields, and queries alias the path.
FLOW_FIELDS = ("sip", "dip", "sp", "dp", "prot", "rxB", "txB", "totalB", "rxP", "txP", "dur", "time_ms")


def _flow_source(source: dict[str, Any]) -> dict[str, Any]:
    fields = source.get("@fields")
    if "@metaflow" in source or not isinstance(fields, dict):
        return source
    return {**source, "@metaflow": {"flow": {k: fields[k] for k in FLOW_FIELDS if k in fields}}}


@call("ds/get_index_zoom_histogram_lv3", permission="search", request=EventSearchRequest,
      reply=EventSearchReply, summary="Search events or flows.")
def event_search(ctx: CallContext, args: EventSearchRequest) -> dict[str, Any]:
    options = args.options or SearchOptions()
    data_type = data_type_of(args.dataType, options)
    dataset = DATASETS[data_type]
    date_field = options.dateFacetField
    if date_field is None:
        raise ValidationFailed("options.dateFacetField", "is required (send \"@timestamp\")")
    if dataset.resolve(date_field) != dataset.time_field:
        raise ValidationFailed("options.dateFacetField", f"must be \"@timestamp\", not {date_field!r}"[:200])
    lake = ctx.services.lake
    search = ctx.services.search.search
    assert ctx.caller is not None
    restriction = ctx.caller.restriction(dataset, ctx.settings)
    now_ms = int(time.time() * 1000)
    plan, facet_names = build_plan(
        options, dataset, ctx.settings, now_ms=now_ms, restriction=restriction,
        data_bounds=visible_bounds(lambda: lake.time_bounds(dataset.name), search, dataset, restriction),
    )
    # The echo shows the caller's own query, never the data policy AND-ed into the plan.
    shown = search_query(options, dataset, ctx.settings, now_ms=now_ms)
    result = search(plan)
    shown_id = ctx.services.record_ids.number  # ~3 µs each (a keyed permutation): once per hit
    response: dict[str, Any] = {
        "took": result.took_ms,
        "hits": {
            "total": result.total,
            "sortFieldType": "long",
            "hits": [
                {
                    "_index": h.split_id,
                    "_type": data_type,
                    "_id": record_id(number),
                    "docId": number,
                    "_source": _flow_source(h.source) if data_type == "flow" else h.source,
                    "_sort": h.sort_value if not isinstance(h.sort_value, float) or not h.sort_value.is_integer() else int(h.sort_value),
                    "token": False,
                }
                for h in result.hits
                for number in (shown_id(h.docid),)
            ],
        },
        "query": to_dict(shown, dataset),
        "terms": highlight_terms(shown),
        "highlight": highlights(shown, dataset),
    }
    if result.failed:
        # Some splits gave no answer (cluster mode, or damaged): say so, and which.
        response["_shards"] = shards(result)
    if plan.facets or plan.histograms:
        aggs: dict[str, Any] = {}
        for spec in plan.facets:
            facet = result.facets[spec.path]
            for name in facet_names[spec.path]:
                aggs[name] = {
                    "TokenEntity": "",
                    "buckets": [{"doc_count": b.doc_count, "key": b.key} for b in facet.buckets],
                    "sum_other_doc_count": facet.sum_other_doc_count,
                    "doc_count_error_upper_bound": 0,
                }
        for name, buckets in result.histograms.items():
            aggs[name] = {"buckets": [{"key": start, "doc_count": n} for start, n in buckets]}
        response["aggregations"] = aggs
    return say_if_incomplete(ctx, response)
