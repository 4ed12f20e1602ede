"""``ds/collector_list``: what sources send to this node's listeners.

The clients of the original service list their collectors with this call
(ingext-api reads ``entries``: id, name, local, ebpf, description,
createdOn, token, lastPoll); seclake has no collectors, but its listeners
play that part, so ``entries`` has one per listener, and beside it the
call answers one row per listener (URL, vendor, faults such as refused
connections or failed TLS handshakes) and one per sending address
(records and bytes received, records per second now, first and last seen,
rejected and dropped). Records that arrive over ``/api/import`` and
``/_bulk`` are counted in ``/metrics`` instead.
"""

from __future__ import annotations

from typing import Any

from seclake.api.registry import CallContext, call
from seclake.api.reply import SourcesReply
from seclake.api.request import Empty


@call("ds/collector_list", permission="search", request=Empty, reply=SourcesReply,
      summary="The syslog listeners of this node and what each sending address sent.")
def collector_list(ctx: CallContext, args: Empty) -> dict[str, Any]:
    listeners = ctx.services.listeners
    if listeners is None:
        return {"entries": [], "listeners": [], "sources": []}
    return listeners.sources()
