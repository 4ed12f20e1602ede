"""Audit search: ``ds/audit_search`` (client-compat, "Other calls").

Options as other searches (2.4, 2.5): ``searchStr``, ``facets`` (``username``
or ``user``, ``call``, ``outcome``, ``kind``, ``status``, ``client``...),
``dateFacets``, paging, ``sortField``/``range_field`` ``createdOn`` (the
defaults; epoch ms). Records: ``{createdOn, kind, username, call, client,
outcome, status, durationMs, detail}``, ``detail`` analyzed as text, plus the
fields of the clients' audit record (``account, email, role, clientIP,
country, city, dur, category, error, dayIndex, partition, action,
action_type, action_info``; see ``service.audit.audit_record``). The answer
is the 2.9 wrapper, ``_id`` the entry's number as a string.

The rows in the range are read from SQL and searched by the in-memory engine
(as summaries are), so counts are exact. Admin only by default; data
policies on the ``audit`` dataset apply like everywhere else.
"""

from __future__ import annotations

from typing import Any

from seclake.api.hitwrapper import wrap
from seclake.api.options import build_plan, visible_bounds
from seclake.api.registry import CallContext, call
from seclake.api.reply import HitWrapper
from seclake.api.request import SearchOptions, SearchRequest
from seclake.record.dataset import AUDIT
from seclake.search.memory import search_records
from seclake.search.plan import SearchPlan
from seclake.search.root import SearchResult

# The most entries one search reads; narrow the range past it.
MAX_ENTRIES = 200_000


@call("ds/audit_search", permission="admin", request=SearchRequest, reply=HitWrapper,
      summary="Search the audit log.")
def audit_search(ctx: CallContext, args: SearchRequest) -> dict[str, Any]:
    audit = ctx.services.audit
    options = args.options or SearchOptions()
    assert ctx.caller is not None
    restriction = ctx.caller.restriction(AUDIT, ctx.settings)

    def search(plan: SearchPlan) -> SearchResult:
        # Only a range on createdOn narrows the rows read; the engine applies it again exactly.
        on_time = (plan.range_path or AUDIT.time_field) == AUDIT.time_field
        rows = audit.records(plan.range_from if on_time else None, plan.range_to if on_time else None, MAX_ENTRIES)
        return search_records(rows, plan, AUDIT)

    plan, names = build_plan(
        options, AUDIT, ctx.settings, data_bounds=visible_bounds(audit.time_bounds, search, AUDIT, restriction),
        restriction=restriction,
    )
    # _id a string: the clients' Go decoding fails on a number there.
    return wrap(search(plan), index="audit", facet_names=names, id_of=lambda h: str(int(h.record_id)))
