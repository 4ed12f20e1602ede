"""``ds/field_catalog``: the fields records of a dataset hold, per source.

seclake's own call (the original service has none): what the web
interface's field page lists and the search bar suggests from. It takes the
search options of ``ds/get_index_zoom_histogram_lv3`` (``searchStr``, the
range), so it counts what the caller can search, data policy included.
"""

from __future__ import annotations

import time
from typing import Any

from seclake.api.calls.events import data_type_of
from seclake.api.hitwrapper import failures, say_if_incomplete
from seclake.api.options import build_plan
from seclake.api.registry import CallContext, call
from seclake.api.reply import CatalogReply
from seclake.api.request import CatalogOptions, CatalogRequest, SearchOptions
from seclake.record.dataset import DATASETS
from seclake.search.fieldcatalog import field_catalog

@call("ds/field_catalog", permission="search", request=CatalogRequest, reply=CatalogReply,
      summary="The fields records hold, per source: name, type, records holding it, examples.")
def catalog(ctx: CallContext, args: CatalogRequest) -> dict[str, Any]:
    options = args.options or CatalogOptions()
    dataset = DATASETS[data_type_of(args.dataType, options)]
    assert ctx.caller is not None
    restriction = ctx.caller.restriction(dataset, ctx.settings)
    # The catalog counts what a search with the same query and range finds.
    searched = SearchOptions(**options.model_dump(include={"searchStr", "range_from", "range_to", "range_field"}))
    plan, _ = build_plan(searched, dataset, ctx.settings, now_ms=int(time.time() * 1000), restriction=restriction)
    found = field_catalog(ctx.services.search.search, plan, dataset, sources=options.sources)
    response: dict[str, Any] = {
        "dataType": dataset.name,
        "total": found.total,
        "sources": [{"source": name, "records": n} for name, n in found.sources],
        "otherSourcesRecords": found.other_sources,
        "truncated": found.truncated,
        "fields": [{"name": f.name, "path": f.path, "type": f.kind, "records": f.records,
                    "sources": f.sources, "examples": f.examples} for f in found.fields],
    }
    if found.failed:
        # Some splits gave no answer (cluster mode, or damaged): the counts are partial.
        response["_shards"] = {"failed": len(found.failed), "failures": failures(found.failed)}
    return say_if_incomplete(ctx, response)
