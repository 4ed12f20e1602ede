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
from seclake.api.options import build_plan, read_options, visible_bounds
from seclake.api.registry import CallContext, call
from seclake.errors import ValidationFailed
from seclake.query.matcher import compile_matcher

UPDATE_FIELDS = ("id", "status", "comment", "incident", "scoreAdjust")


@call("ds/behavior_summary_search", permission="search")
def summary_search(ctx: CallContext, kargs: dict[str, Any]) -> dict[str, Any]:
    store = ctx.services.summaries
    options = read_options(kargs)
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


@call("ds/behavior_incident_update", permission="triage")
def incident_update(ctx: CallContext, kargs: dict[str, Any]) -> dict[str, Any]:
    # A misspelt field (``Status``) silently ignored would look like a triage that happened.
    for name in kargs:
        if name not in UPDATE_FIELDS:
            raise ValidationFailed(name[:100], f"is not a field of behavior_incident_update; use {', '.join(UPDATE_FIELDS)}")
    assert ctx.caller is not None
    store = ctx.services.summaries
    # A summary outside the caller's data policies is answered as an unknown id.
    restriction = ctx.caller.restriction(store.dataset, ctx.settings)
    summary = store.update_incident(
        kargs.get("id"),
        status=kargs.get("status"),
        comment=kargs.get("comment"),
        incident=kargs.get("incident"),
        score_adjust=kargs.get("scoreAdjust"),
        username=ctx.caller.username,
        now_ms=int(ctx.services.clock().timestamp() * 1000),
        visible=None if restriction is None else compile_matcher(restriction, store.dataset),
    )
    # The audit entry says what changed: the actions of the comment this request added.
    last = (summary.get("comments") or [None])[-1]
    if last and last.get("username") == ctx.caller.username and last.get("actions"):
        ctx.audit_detail = f"summary {summary['id']}: " + "; ".join(last["actions"])
    elif kargs.get("comment"):
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
