"""The Elasticsearch bulk API, for log shippers (Vector, Fluent Bit, Filebeat,
Logstash, the OpenTelemetry collector's Elasticsearch exporter, the official
clients' ``helpers.bulk``).

``POST /_bulk`` and ``POST /{index}/_bulk`` take NDJSON: an action line
(``index`` or ``create``; ``delete`` and ``update`` are refused per item:
records are immutable), then the document. Each document goes through the
import path (the JSON lines parser, the sender's data policies, the
behavior rules, the write-ahead log) and the reply comes once every
accepted document is durable, in the bulk reply's shape: ``took``,
``errors``, and per item ``status`` 201 or an ``error`` object; a
document that cannot be stored fails alone, as in Elasticsearch.

Index names map to the lake: ``flows-<vendor>`` (or ``flow-<vendor>``)
stores flows, any other name events; the vendor is the name without that
prefix (``logs-nginx-default`` is vendor ``logs-nginx-default``). ECS
``message`` becomes ``@message`` when the document has none. A name that
names no vendor (``flows-`` alone, ``bad name!``) fails its items with
``invalid_index_name_exception``. A body may be gzip (``Content-Encoding``
or its magic bytes) or deflate (zlib or raw, both are sent), capped after
decompression like an import; another encoding is a 400 naming it.

Shippers check the server before sending: ``GET /`` (with a JSON
``Accept``; browsers still get the web interface), license, xpack,
template, ILM and pipeline probes are answered so they proceed, and every
answer carries ``X-Elastic-Product: Elasticsearch`` (the official clients
refuse answers without it).

Authentication: a seclake API token as ``Authorization: ApiKey <token>``
(or base64 of ``<any id>:<token>``, the form ES API keys take), any header
``/api`` accepts, or basic auth with a user's credentials (a session is
opened once and reused while it lives). The caller needs the ``ingest``
permission.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import threading
import time
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seclake.api.authentication import token_from
from seclake.api.body import read_capped
from seclake.api.request import LoginRequest
from seclake.api.threads import in_thread
from seclake.errors import Forbidden, SeclakeError, Unauthorized, disk_full
from seclake.ingest.reader import compression_of
from seclake.model import validated
from seclake.query.matcher import compile_matcher
from seclake.record.dataset import DATASETS
from seclake.record.identity import record_id
from seclake.service.bulk import problem, read_bulk
from seclake.service.caller import Caller
from seclake.service.ingestion import MemoryBudget

PRODUCT_HEADERS = {"X-Elastic-Product": "Elasticsearch"}
# The version shippers see: they pick their request format by its major.
VERSION = {
    "number": "8.11.0", "build_flavor": "default", "build_type": "docker", "build_snapshot": False,
    "lucene_version": "9.8.0", "minimum_wire_compatibility_version": "7.17.0",
    "minimum_index_compatibility_version": "7.0.0",
}
# User agents of shippers that ask GET / without a JSON Accept header.
SHIPPERS = ("elastic", "beat", "vector", "fluent", "logstash", "opentelemetry", "otel")


class ElasticResponse(Response):
    media_type = "application/json"

    def __init__(self, content: Any, status_code: int = 200):
        super().__init__(orjson.dumps(content), status_code=status_code, headers=PRODUCT_HEADERS)


def _error(status: int, kind: str, reason: str) -> ElasticResponse:
    return ElasticResponse({"error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason},
                            "status": status}, status)


# -- authentication ------------------------------------------------------------


class BasicSessions:
    """Sessions opened for basic-auth senders, reused while they live: a
    password check (argon2) per bulk request would cost more than the bulk."""

    MAX = 1000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, str] = {}

    def caller(self, services: Any, username: str, password: str, client: str) -> Caller:
        # A digest of the pair, never the password itself, keys the cache.
        key = hashlib.sha256(f"{username}\0{password}".encode()).hexdigest()
        with self._lock:
            token = self._tokens.get(key)
        if token is not None:
            try:
                return services.auth.caller(token)
            except Unauthorized:  # the session ended: log in again
                pass
        sent = validated(LoginRequest, {"username": username, "password": password}, "Authorization")
        token = services.login.login(sent.username, sent.password, client).token
        with self._lock:
            if len(self._tokens) >= self.MAX:
                self._tokens.clear()
            self._tokens[key] = token
        return services.auth.caller(token)


def _basic_sessions(request: Request) -> BasicSessions:
    state = request.app.state
    sessions = getattr(state, "basic_sessions", None)
    if sessions is None:  # one per app: made at the first basic-auth request
        sessions = state.basic_sessions = BasicSessions()
    return sessions


def _caller(request: Request) -> Caller:
    services = request.app.state.services
    header = request.headers.get("authorization", "")
    scheme, _, credentials = header.partition(" ")
    scheme, credentials = scheme.lower(), credentials.strip()
    client = request.client.host if request.client else ""
    if scheme == "basic":
        try:
            username, sep, password = base64.b64decode(credentials, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthorized("basic credentials are not base64 of user:password") from None
        if not sep:
            raise Unauthorized("basic credentials are not base64 of user:password")
        caller = _basic_sessions(request).caller(services, username, password, client)
    elif scheme == "apikey":
        caller = services.auth.caller(_api_key(credentials))
    else:
        caller = services.auth.caller(token_from(request.headers))
    if not caller.may("ingest"):
        raise Forbidden(f"user {caller.username!r} may not send records (it needs the ingest permission)")
    return caller


def _api_key(credentials: str) -> str:
    """A seclake token sent as an API key: as is, or base64 of ``id:token``."""
    if credentials.startswith(("slk_", "sls_")):
        return credentials
    try:
        decoded = base64.b64decode(credentials, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return credentials
    return decoded.partition(":")[2] or decoded


# -- the bulk call -------------------------------------------------------------


def _item(action: str, index: Any, doc_id: Any, status: int, error: dict | None = None, seq: int | None = None) -> dict:
    body: dict[str, Any] = {"_index": index, "_id": doc_id, "status": status}
    if error is None:
        body.update({"_version": 1, "result": "created", "_seq_no": seq or 0, "_primary_term": 1,
                     "_shards": {"total": 1, "successful": 1, "failed": 0}})
    else:
        body["error"] = error
    return {action: body}


def store_bulk(services: Any, caller: Caller, body: bytes, default_index: str | None,
               compressed: bool | str | None) -> dict[str, Any]:
    settings = services.settings
    started = time.perf_counter()
    MemoryBudget(settings.max_import_memory_mb << 20).check(body, compressed=compressed, max_bytes=settings.max_import_bytes)
    received_ms = int(time.time() * 1000)
    parsers = services.ingestion.parsers
    # With ``prepared`` (a worker's or this thread's JSON and rule matches of the records), each
    # entry's record is its position there; ``record_of`` gives the record itself.
    if parsers is not None and parsers.takes(body):
        detector = services.ingestion.detector
        parsed = parsers.parse_bulk(body, default_index, compressed=compressed, max_bytes=settings.max_import_bytes,
                                    received_ms=received_ms, rules=detector.ruleset() if detector is not None else None)
        entries, prepared = parsed.entries, parsed.prepared

        def record_of(entry: Any) -> dict[str, Any]:
            # From a worker, the record as the log will replay it: decoded from the JSON it stores.
            return orjson.loads(prepared.bodies[entry.record])
    else:
        # Read between the import's checkpoints; each record's JSON and rule matches made as it is read
        # (``Ingestion.made_here``; None where this process does not write the lake).
        made = services.ingestion.made_here()
        here: list[dict[str, Any]] = []

        def taken(entry: Any) -> Any:
            if made is None or entry.error is not None:
                return entry
            here.append(entry.record)
            made.add(entry.dataset, entry.record)
            return entry._replace(record=len(here) - 1)

        entries = [taken(e) for e in services.ingestion.paced(read_bulk(
            body, default_index, compressed=compressed, max_bytes=settings.max_import_bytes, received_ms=received_ms))]
        prepared = made.prepared() if made is not None else None

        def record_of(entry: Any) -> dict[str, Any]:
            return here[entry.record] if made is not None else entry.record
    admit: dict[str, Any] = {}
    items: list[tuple[str, dict[str, Any]]] = []
    kept: list[int] = []  # of each item, its record's position in ``prepared``
    answers: list[tuple[str, Any, Any, int | None, dict | None]] = []  # (action, index, id, position in items, error)
    for entry in entries:
        action, index, doc_id, dataset = entry.action, entry.index, entry.doc_id, entry.dataset
        if entry.error is not None:
            answers.append((action, index, doc_id, None, entry.error))
            continue
        record = record_of(entry)
        if dataset not in admit:
            restriction = caller.restriction(DATASETS[dataset], settings)
            admit[dataset] = None if restriction is None else compile_matcher(restriction, DATASETS[dataset])
        visible = admit[dataset]
        if visible is not None and not visible(record):
            answers.append((action, index, doc_id, None, problem(
                "security_exception", f"the record (@customer {record.get('@customer')!r}) is outside the data policies "
                f"of {caller.username!r}")))
            continue
        answers.append((action, index, doc_id, len(items), None))
        items.append((dataset, record))
        if prepared is not None:
            kept.append(entry.record)
    first = None
    if items:
        first, _last = services.ingestion.append_records(items, prepared.taken(kept) if prepared is not None else None,
                                                         bulk=True)
    ids = services.record_ids
    out = []
    for action, index, doc_id, position, error in answers:
        if error is not None:
            out.append(_item(action, index, doc_id, 403 if error["type"] == "security_exception" else 400, error))
        else:
            number = ids.number(first + position)  # a keyed permutation, ~3 µs: once per item
            out.append(_item(action, index, doc_id if doc_id is not None else record_id(number), 201, seq=number))
    rejected = len(answers) - len(items)
    for dataset in DATASETS:
        if dataset in ("event", "flow"):
            stored = sum(1 for d, _ in items if d == dataset)
            if stored:
                services.metrics.records.labels("bulk", dataset, "accepted").inc(stored)
    if rejected:  # refused documents are counted under event: their dataset may be unknown
        services.metrics.records.labels("bulk", "event", "rejected").inc(rejected)
    return {"took": round((time.perf_counter() - started) * 1000), "errors": rejected > 0, "items": out}


async def bulk(request: Request) -> Response:
    services = request.app.state.services
    started = time.perf_counter()
    outcome, username = "ERROR", None
    try:
        caller = await in_thread(_caller, request)
        username = caller.username
        # deflate once fell through as plain text ("line 1: expected an action").
        compressed = compression_of(request.headers.get("content-encoding", ""))
        body = await read_capped(request, services.settings.max_import_bytes)
        index = request.path_params.get("index")
        reply = await in_thread(store_bulk, services, caller, body, index, compressed)
        outcome = "OK"
        return ElasticResponse(reply)
    except SeclakeError as e:
        from seclake.api.envelope import status_of

        status = status_of(e)
        kind = {401: "security_exception", 403: "security_exception", 413: "request_entity_too_large"}.get(
            status, "illegal_argument_exception")
        return _error(status, kind, e.message)
    except Exception as e:
        if disk_full(e):
            return _error(507, "insufficient_storage", "the server's disk is full: nothing of this request was stored")
        ref = secrets.token_hex(4)
        import logging

        logging.getLogger("seclake.api").exception("bulk failed unexpectedly (ref %s)", ref)
        outcome = "EXCEPTION"
        return _error(500, "exception", f"internal error: {type(e).__name__} (ref {ref}, see the server log)")
    finally:
        seconds = time.perf_counter() - started
        services.metrics.request("_bulk", outcome, seconds)
        client = request.client.host if request.client else ""
        services.audit.call(username, "_bulk", client, outcome, 200 if outcome == "OK" else 400, round(seconds * 1000), None)


# -- what shippers ask before they send ----------------------------------------


async def root(request: Request) -> Response:
    """Browsers get the web interface; clients asking for JSON get the cluster info."""
    accept = request.headers.get("accept", "").lower()
    agent = request.headers.get("user-agent", "").lower()
    shipper = "json" in accept or "authorization" in request.headers or any(n in agent for n in SHIPPERS)
    if "text/html" in accept or not shipper:
        from seclake.web import index

        return await index(request)
    return ElasticResponse({
        "name": "seclake", "cluster_name": "seclake", "cluster_uuid": "seclake",
        "version": VERSION, "tagline": "You Know, for Search",
    })


async def probe(request: Request) -> Response:
    """Template, ILM, pipeline and license probes: acknowledged, so shippers go on to send."""
    path = request.url.path
    if path.startswith("/_license"):
        return ElasticResponse({"license": {"status": "active", "type": "basic", "uid": "seclake", "mode": "basic"}})
    if path.startswith("/_xpack"):
        return ElasticResponse({"build": {}, "features": {}, "license": {"status": "active", "type": "basic", "mode": "basic"}})
    if path.startswith("/_cluster/health"):
        return ElasticResponse({"cluster_name": "seclake", "status": "green", "timed_out": False})
    if request.method in ("PUT", "POST"):
        return ElasticResponse({"acknowledged": True})
    # GET/HEAD of a template, policy or pipeline: none is kept, so none exists.
    return _error(404, "resource_not_found_exception", f"{path[:100]} is not kept by seclake (it stores records as sent)")


def routes() -> list[Route]:
    probes = ["/_license", "/_xpack", "/_cluster/health", "/_template/{name}", "/_index_template/{name}",
              "/_component_template/{name}", "/_ilm/policy/{name}", "/_ingest/pipeline/{name}", "/_data_stream/{name}"]
    return [
        Route("/", root, methods=["GET", "HEAD"]),
        Route("/_bulk", bulk, methods=["POST", "PUT"]),
        Route("/{index}/_bulk", bulk, methods=["POST", "PUT"]),
        *[Route(p, probe, methods=["GET", "HEAD", "PUT", "POST"]) for p in probes],
    ]
