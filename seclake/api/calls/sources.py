"""``ds/collector_list``: what sources send to this node's listeners.

The clients of the original service list their collectors with this call;
seclake has no collectors, but its listeners play that part, so the call
answers one row per listener (URL, vendor, faults such as refused
connections or failed TLS handshakes) and one per sending address
(records and bytes received, records per second now, first and last seen,
rejected and dropped). Records that arrive over ``/api/import`` and
``/_bulk`` are counted in ``/metrics`` instead.
"""

from __future__ import annotations

from typing import Any

from seclake.api.registry import CallContext, call


@call("ds/collector_list", permission="search")
def collector_list(ctx: CallContext, kargs: dict[str, Any]) -> dict[str, Any]:
    listeners = ctx.services.listeners
    if listeners is None:
        return {"listeners": [], "sources": []}
    return listeners.sources()
