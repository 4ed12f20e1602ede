"""Answers every ``/api/<name>`` request: find the call, check method, token
and permission, run it, wrap the result in the envelope, write the audit.

``guarded`` is the part shared by JSON calls and raw routes.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from seclake.api.authentication import token_from
from seclake.api.body import check_json_media_type, parse_kargs, read_capped
from seclake.api.calls.unsupported import unsupported_reason
from seclake.api.envelope import exception, failure, ok, status_sent
from seclake.api.registry import REGISTRY, Call, CallContext
from seclake.api.threads import in_thread
from seclake.errors import (
    Forbidden, InsufficientStorage, MethodNotAllowed, NotFound, SeclakeError, ValidationFailed, disk_full,
)
from seclake.model import validated
from seclake.service.caller import Caller
from seclake.service.logformat import ACCESS, REQUEST

log = logging.getLogger("seclake.api")

REQUEST_ID_HEADER = "X-Request-Id"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

Work = Callable[[CallContext, Callable[[], None]], Awaitable[Any]]


async def dispatch(request: Request) -> Response:
    name = request.path_params["name"].strip("/")
    matched = REGISTRY.raw_match(name)
    if matched is not None:
        route, params = matched

        async def raw(ctx: CallContext, authorize: Callable[[], None]) -> Any:
            await in_thread(authorize)
            return await route.handler(ctx, **params)

        return await guarded(request, name, route.permission, raw)
    call = REGISTRY.calls.get(name)
    if call is None:
        return await guarded(request, name, None, None)
    return await guarded(request, name, call.permission, lambda ctx, authorize: _json_call(call, ctx, authorize))


async def guarded(request: Request, name: str, permission: str | None, work: Work | None) -> Response:
    """Run ``work`` for the named call inside the token, permission, audit and
    envelope rules; ``work`` None means there is no such call.

    ``work`` gets the context and an ``authorize`` function to run (in a
    worker thread: it reads the database) before anything else it does; a
    JSON call runs it in the same thread hop as the call itself.
    """
    services = request.app.state.services
    http_status = services.settings.http_error_status
    started = time.perf_counter()
    client = request.client.host if request.client else ""
    ctx = CallContext(services, None, client, request.headers, request)
    detail: str | None = None
    # Every log line written for this call carries these (service/logformat.py).
    request_id = _request_id(request.headers.get(REQUEST_ID_HEADER))
    context = {"request_id": request_id, "call": _metric_name(name), "client": client}
    REQUEST.set(context)

    def authorize() -> None:
        assert permission is not None
        if permission != "public":
            ctx.caller = _authorized(services, request, name, permission)
            context["caller"] = ctx.caller.username

    try:
        if work is None or permission is None:
            reason = unsupported_reason(name)
            if reason is not None:
                raise NotFound(f"not supported by this server: {reason}")
            raise NotFound(f"unknown call {name[:100]!r}")
        if request.method != "POST":
            raise MethodNotAllowed(f"use POST, not {request.method}")
        if permission == "search":  # a search: bulk imports wait for it (service/priority.py)
            with services.priority.interactive():
                response: Response = ok(await work(ctx, authorize))
        else:
            response = ok(await work(ctx, authorize))
        response.headers.update(ctx.response_headers)
        outcome, detail = "OK", ctx.audit_detail
    except SeclakeError as e:
        response = failure(e, name, http_status=http_status)
        outcome, detail = "ERROR", e.message
    except Exception as e:
        if disk_full(e):
            log.error("call %s: the disk is full (%s)", name[:200], e)
            error = InsufficientStorage("the server's disk is full: nothing of this request was stored; "
                                        "send it again once there is room")
            response = failure(error, name, http_status=http_status)
            outcome, detail = "ERROR", error.message
        else:
            response, outcome, detail = _fault(name, e, http_status)
    seconds = time.perf_counter() - started
    duration_ms = round(seconds * 1000)
    caller = ctx.caller
    # Metrics by the call's registered name only: any other name a client
    # makes up would be a new label (and a new series) each time.
    services.metrics.request(_metric_name(name), outcome, seconds)
    response.headers[REQUEST_ID_HEADER] = request_id
    ACCESS.info("%s %s %d ms", name[:200], outcome, duration_ms,
                extra={"outcome": outcome, "status": status_sent(response), "duration_ms": duration_ms})
    if seconds > services.settings.slow_request_seconds:
        log.warning("slow call %s: %d ms (caller %s, client %s, outcome %s)", name[:200], duration_ms,
                    caller.username if caller else "-", client or "-", outcome)
    try:
        # Queued, not written here: the audit writer commits it in a batch.
        services.audit.call(
            caller.username if caller else ctx.audit_username, name, client, outcome,
            status_sent(response), duration_ms, detail,
        )
    except Exception:
        # A failing audit write is logged; the caller still gets its answer.
        log.exception("could not write the audit entry of call %s", name[:200])
    return response


def _request_id(sent: str | None) -> str:
    """The caller's X-Request-Id when it is a sane token (it goes into logs), else a new one."""
    if sent and _REQUEST_ID.fullmatch(sent):
        return sent
    return secrets.token_hex(8)


def _metric_name(name: str) -> str:
    if name in REGISTRY.calls:
        return name
    matched = REGISTRY.raw_match(name)
    return matched[0].pattern if matched is not None else "(unknown)"


def _fault(name: str, e: Exception, http_status: bool) -> tuple[Response, str, str]:
    """An unexpected fault: a short EXCEPTION for the caller, the trace in the log."""
    ref = secrets.token_hex(4)
    log.exception("call %s failed unexpectedly (ref %s)", name[:200], ref)
    response = exception(
        f"internal error in {name[:100]}: {type(e).__name__} (ref {ref}, see the server log)",
        http_status=http_status,
    )
    return response, "EXCEPTION", f"{type(e).__name__} (ref {ref})"


def _authorized(services: Any, request: Request, name: str, permission: str) -> Caller:
    """The caller behind the request's token, if it may make this call."""
    caller = services.auth.caller(token_from(request.headers))
    if not caller.may(permission):
        raise Forbidden(
            f"user {caller.username!r} with roles {', '.join(caller.roles) or 'none'} "
            f"may not call {name} (it needs the {permission} permission)"
        )
    # API policies narrow what the permissions allow (seclake.service.access).
    assert caller.rights is not None
    if not caller.rights.allows_call(name):
        raise Forbidden(
            f"user {caller.username!r} may not call {name}: it is outside the API policies "
            "of the user, its roles or this token"
        )
    return caller


async def _json_call(call: Call, ctx: CallContext, authorize: Callable[[], None]) -> Any:
    request = ctx.request
    assert request is not None
    settings = ctx.services.settings
    # The body is read here, on the event loop; what it says is judged only
    # after the token is (an unknown caller learns nothing about its body).
    try:
        body: bytes | SeclakeError = await read_capped(request, settings.max_body_bytes)
    except SeclakeError as e:
        body = e

    def run() -> Any:
        authorize()
        check_json_media_type(request)
        if isinstance(body, SeclakeError):
            raise body
        kargs = parse_kargs(body, settings.max_json_depth)
        args = validated(call.request, kargs, "kargs")
        try:
            return call.handler(ctx, args)
        except ValidationFailed as e:
            # Fields named inside a call are relative to kargs; say so on the wire.
            if e.field.startswith("kargs"):
                raise
            raise ValidationFailed(f"kargs.{e.field}", e.message.removeprefix(f"{e.field}: ")) from None

    return await in_thread(run)
