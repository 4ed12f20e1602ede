"""The behavior timeline: ``ds/fsm_behavior_search`` (spec 2.7, 2.9, 2.10)."""

from __future__ import annotations

import time
from typing import Any

from seclake.api.hitwrapper import say_if_incomplete, wrap
from seclake.api.options import build_plan, search_query, visible_bounds
from seclake.api.registry import CallContext, call
from seclake.api.reply import BehaviorSearchReply
from seclake.api.request import SearchOptions, SearchRequest
from seclake.query.echo import highlights
from seclake.record.dataset import BEHAVIORS


@call("ds/fsm_behavior_search", permission="search", request=SearchRequest, reply=BehaviorSearchReply,
      summary="Search behaviors (the timeline).")
def behavior_search(ctx: CallContext, args: SearchRequest) -> dict[str, Any]:
    options = args.options or SearchOptions()
    assert ctx.caller is not None
    restriction = ctx.caller.restriction(BEHAVIORS, ctx.settings)
    search = ctx.services.search.search
    now_ms = int(time.time() * 1000)
    plan, facet_names = build_plan(
        options,
        BEHAVIORS,
        ctx.settings,
        now_ms=now_ms,
        default_sort="timestamp",
        default_range_field="timestamp",
        data_bounds=visible_bounds(lambda: ctx.services.lake.time_bounds(BEHAVIORS.name), search, BEHAVIORS, restriction),
        restriction=restriction,
    )
    result = search(plan)
    ids = ctx.services.record_ids
    response = wrap(result, index="behavior", facet_names=facet_names, id_of=lambda h: ids.text(h.docid))
    # What the caller's own query matched (never the data policy in the plan), for the timeline's marks.
    response["highlight"] = highlights(search_query(options, BEHAVIORS, ctx.settings, now_ms=now_ms), BEHAVIORS)
    return say_if_incomplete(ctx, response)
