"""Raw log import: ``POST /api/import/{vendor}`` with a text body (plain or gzip).

The body's text is UTF-8 unless its Content-Type names another charset
(Java's HTTP clients send ``text/plain; charset=ISO-8859-1``): it is then
read in that encoding. Query parameters: ``type`` (event or flow, default event), ``format``
(auto, jsonl, syslog, cef, kv; default auto), ``customer`` (set as
``@customer`` on every record, over any customer a line names, so a line
cannot file itself under another tenant). The reply comes after every
accepted record is durable: ``{accepted, raw, rejected, truncated, stored,
reasons, firstDocId, lastDocId}``. On a read-only API node of a cluster the
body is read and parsed here and the records are stored by the ingest node
(``cluster/remoteingestion.py``): the reply then waits for its fsync, and
says 503 when no ingest node can be reached.

A sender restricted by data policies may import only records those
policies would show it: any other record (by ``customer=`` or a line's own
``@customer``) refuses the whole import with 403, naming the line.

Optional header ``Idempotency-Key`` (``service/idempotency.py``): an import
sent again with the same key by the same user is stored at most once; the
retry gets the first reply with ``Idempotent-Replayed: true``, a key reused
for another import 422, a key whose first import is still being stored 409.
"""

from __future__ import annotations

from email.message import Message
from typing import Any

from seclake.api.body import read_capped
from seclake.api.registry import CallContext, raw_route
from seclake.api.reply import ImportReport
from seclake.api.threads import in_thread
from seclake.errors import ValidationFailed
from seclake.ingest.reader import GZIP_MAGIC, text_encoding, transcode
from seclake.ingest.vendor import validate_vendor
from seclake.service.idempotency import HEADER, REPLAYED_HEADER, parse_key, user_scope
from seclake.query.matcher import compile_matcher
from seclake.record.dataset import DATASETS
from seclake.service.ingestion import Admission, Replayed, check_customer


@raw_route("import/{vendor}", permission="ingest", reply=ImportReport,
           summary="Import raw logs (text or gzip): lines of JSON, syslog, CEF or key=value.")
async def import_logs(ctx: CallContext, vendor: str) -> dict[str, Any]:
    request = ctx.request
    assert request is not None
    vendor = validate_vendor(vendor)
    params = request.query_params
    dataset = params.get("type", "event")
    fmt = params.get("format", "auto")
    customer = params.get("customer")
    check_customer(customer)
    settings = ctx.settings
    body = await read_capped(request, settings.max_import_bytes)
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip"):
        raise ValidationFailed("Content-Encoding", f"must be gzip or absent, not {encoding!r}"[:200])
    compressed = True if encoding in ("gzip", "x-gzip") else (body[:2] == GZIP_MAGIC)
    text = text_encoding(_charset(request.headers.get("content-type", "")))
    key = parse_key(request.headers.getlist(HEADER))

    def store() -> dict[str, Any]:
        assert ctx.caller is not None
        # Made UTF-8 here, in the call's thread (the size cap holds on both forms).
        utf8 = body if text is None else transcode(body, text, compressed=compressed, max_bytes=settings.max_import_bytes)
        # Keys are the caller's own: another user's same key is another key.
        scoped = (user_scope(ctx.services.db, ctx.caller.username), key) if key is not None else None
        # A sender writes only what its data policies would show it.
        target = DATASETS.get(dataset)
        restriction = ctx.caller.restriction(target, settings) if target is not None else None
        admit = None if restriction is None else Admission(compile_matcher(restriction, target), ctx.caller.username)
        return ctx.services.ingestion.import_body(
            utf8,
            vendor=vendor,
            dataset=dataset,
            fmt=fmt,
            customer=customer,
            compressed=compressed and text is None,
            max_bytes=settings.max_import_bytes,
            key=scoped,
            admit=admit,
            max_memory=settings.max_import_memory_mb << 20,
        )

    report = await in_thread(store)
    if isinstance(report, Replayed):
        ctx.response_headers[REPLAYED_HEADER] = "true"
    else:
        ctx.services.metrics.imported("import", dataset, report)
    # The ids of the first and last record stored, as searches show them
    # (opaque: not a range, record/identity.py).
    ids = ctx.services.record_ids
    return {
        **report,
        **{k: ids.number(report[k]) for k in ("firstDocId", "lastDocId") if report.get(k) is not None},
    }


def _charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a Content-Type header, lowercased (None when absent)."""
    header = Message()
    header["content-type"] = content_type
    return header.get_content_charset()
