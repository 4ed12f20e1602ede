"""Behavior summaries: ``ds/behavior_summary_search`` and ``ds/behavior_incident_update``
(spec 2.8-2.10, client-compat "Other calls").

Summary search defaults to ``riskScore`` descending and a range on ``from``,
as clients expect. Facet and query field ``behavior`` means ``behaviors``.

Triage answers with the updated summary. The audit log records the call
(who, when, outcome); what it changed is recorded in the summary itself: each
change appends a comment ``{content, actions, username, createdOn}`` whose
``actions`` list the changes, so the response shows the change too.
"""

from __future__ import annotations

from typing import Any

from seclake.api.hitwrapper import wrap
from seclake.api.options import build_plan, visible_bounds
from seclake.api.registry import CallContext, call
from seclake.api.reply import HitWrapper, Summary
from seclake.api.request import SearchOptions, SearchRequest
from seclake.detect.summaries import Triage
from seclake.query.matcher import compile_matcher


@call("ds/behavior_summary_search", permission="search", request=SearchRequest, reply=HitWrapper,
      summary="Search daily behavior summaries.")
def summary_search(ctx: CallContext, args: SearchRequest) -> dict[str, Any]:
    store = ctx.services.summaries
    options = args.options or SearchOptions()
    assert ctx.caller is not None
    restriction = ctx.caller.restriction(store.dataset, ctx.settings)
    plan, names = build_plan(
        options, store.dataset, ctx.settings, default_sort="riskScore", default_range_field="from",
        data_bounds=visible_bounds(store.time_bounds, store.search, store.dataset, restriction),
        restriction=restriction,
    )
    result = store.search(plan)
    return wrap(result, index="behavior_summary", facet_names=names, id_of=lambda h: h.source["id"],
                source_of=wire_summary)


@call("ds/behavior_incident_update", permission="triage", request=Triage, reply=Summary,
      summary="Triage a summary.")
def incident_update(ctx: CallContext, triage: Triage) -> dict[str, Any]:
    assert ctx.caller is not None
    store = ctx.services.summaries
    # A summary outside the caller's data policies is answered as an unknown id.
    restriction = ctx.caller.restriction(store.dataset, ctx.settings)
    summary = store.update_incident(
        triage,
        username=ctx.caller.username,
        now_ms=int(ctx.services.clock().timestamp() * 1000),
        visible=None if restriction is None else compile_matcher(restriction, store.dataset),
    )
    # The audit entry says what changed: the actions of the comment this request added.
    last = (summary.get("comments") or [None])[-1]
    if last and last.get("username") == ctx.caller.username and last.get("actions"):
        ctx.audit_detail = f"summary {summary['id']}: " + "; ".join(last["actions"])
    elif triage.comment:
        ctx.audit_detail = f"summary {summary['id']}: comment"
    return wire_summary(summary)


def wire_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """A stored summary as the clients read it: ``attributeSummaries[].values``
    is an array of strings in their models (Go ``Values []string``), so the
    distinct values go there and their counts under ``valueCounts``."""
    elements = summary.get("summaryList")
    if not isinstance(elements, list):
        return summary
    return {**summary, "summaryList": [_wire_element(e) for e in elements]}


def _wire_element(element: Any) -> Any:
    if not isinstance(element, dict) or not isinstance(element.get("attributeSummaries"), list):
        return element
    out = []
    for a in element["attributeSummaries"]:
        counted = a.get("values") if isinstance(a, dict) else None
        if not isinstance(counted, list):
            out.append(a)
            continue
        values = [v["value"] if isinstance(v, dict) else v for v in counted]
        out.append({**a, "values": [str(v) for v in values], "valueCounts": counted})
    return {**element, "attributeSummaries": out}
