"""``ds/collector_list``: what sources send to this node's listeners.

The clients of the original service list their collectors with this call
(ingext-api reads ``entries``: id, name, local, ebpf, description,
createdOn, token, lastPoll); seclake has no collectors, but its listeners
play that part, so ``entries`` has one per listener, and beside it the
call answers one row per listener (URL, vendor, faults such as refused
connections or failed TLS handshakes) and one per sending address
(records and bytes received, records per second now, first and last seen,
rejected and dropped). Those counters are the node's and start again
with it; ``inventory`` is what the lake holds, however the records came
(listeners, ``/api/import``, ``/_bulk``), so it is true after a restart and
in cluster mode: one row per source with its last event, events per minute
over the last hour and the records no parser understood
(``search/inventory.py``), counted within the caller's data policy.
"""

from __future__ import annotations

import time
from typing import Any

from seclake.api.hitwrapper import failures, say_if_incomplete
from seclake.api.options import build_plan
from seclake.api.registry import CallContext, call
from seclake.api.reply import SourcesReply
from seclake.api.request import Empty, SearchOptions
from seclake.record.dataset import DATASETS
from seclake.search.inventory import RECENT_MINUTES, source_inventory


@call("ds/collector_list", permission="search", request=Empty, reply=SourcesReply,
      summary="Every source whose records the lake holds (last event, events per minute, parse errors), "
              "the listeners of this node and what each sending address sent.")
def collector_list(ctx: CallContext, args: Empty) -> dict[str, Any]:
    listeners = ctx.services.listeners
    response = {"entries": [], "listeners": [], "sources": []} if listeners is None else listeners.sources()
    now_ms = int(time.time() * 1000)
    rows, failed = [], []
    assert ctx.caller is not None
    for dataset in (DATASETS["event"], DATASETS["flow"]):
        plan, _ = build_plan(SearchOptions(), dataset, ctx.settings, now_ms=now_ms,
                             restriction=ctx.caller.restriction(dataset, ctx.settings))
        found = source_inventory(ctx.services.search.search, plan, dataset, now_ms=now_ms)
        failed += found.failed
        rows += [{"source": s.source, "dataType": s.dataset, "receivedBy": s.received_by, "describes": s.describes,
                  "records": s.records, "lastSeen": s.last_seen, "eventsPerMinute": round(s.per_minute, 2),
                  "parseErrors": s.parse_errors} for s in found.sources]
    rows.sort(key=lambda r: (-(r["lastSeen"] or 0), r["source"]))
    response |= {"inventory": rows, "recentMinutes": RECENT_MINUTES}
    if failed:
        # Some splits gave no answer (cluster mode, or damaged): the counts are partial.
        response["_shards"] = {"failed": len(failed), "failures": failures(sorted(set(failed)))}
    return say_if_incomplete(ctx, response)
