"""The response envelope, and the one mapping from error codes to the wire.

    {"verdict": "OK", "response": ...}            200
    {"verdict": "ERROR", "error": "..."}          status by error code below
    {"verdict": "EXCEPTION", "exception": "..."}  500, trace only in the log

Every client of this interface reads the body only on HTTP 200 and then
branches on ``verdict``; any other status loses the message (a query's
syntax error position, a validation path). So by default an error is sent
with HTTP 200, and the status it stands for goes in the ``X-Seclake-Status``
header (and in logs and the audit); the setting ``http_error_status`` sends
it as the real status instead, for deployments whose own tools want that.
``Retry-After`` (429) is sent in both modes.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from seclake.errors import SeclakeError, TooManyAttempts

STATUS_HEADER = "X-Seclake-Status"

STATUS_BY_CODE: dict[str, int] = {
    "bad_request": 400,
    "query_syntax": 400,
    "limit_exceeded": 400,
    "invalid": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "too_large": 413,
    "unsupported_media": 415,
    "unprocessable": 422,
    "too_many_attempts": 429,
    "unavailable": 503,
    "timeout": 504,
    "insufficient_storage": 507,
}


def status_of(error: SeclakeError) -> int:
    # A subclass without its own entry falls back to its parent's status.
    for cls in type(error).__mro__:
        code = getattr(cls, "code", None)
        if code in STATUS_BY_CODE:
            return STATUS_BY_CODE[code]
    return 400


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        # orjson writes integers exactly (epoch milliseconds stay integers).
        # Keys that are not strings, in a reply that has any, are written as
        # strings; orjson's option for them costs every reply ~70% more (32
        # against 18 µs for a page of 20 events), so only such a reply pays it.
        try:
            return orjson.dumps(content)
        except TypeError:
            return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def ok(payload: Any) -> JSONResponse:
    return JSONResponse({"verdict": "OK", "response": payload})


def failure(error: SeclakeError, where: str | None = None, *, http_status: bool = True) -> JSONResponse:
    """The ERROR envelope of ``error``; with ``http_status`` False it is sent
    with HTTP 200 (the status it stands for stays in ``X-Seclake-Status``)."""
    message = f"{where}: {error.message}" if where else error.message
    status = status_of(error)
    headers: dict[str, str] = {STATUS_HEADER: str(status)}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="seclake"'
    if isinstance(error, TooManyAttempts) and error.retry_after_seconds:
        headers["Retry-After"] = str(error.retry_after_seconds)
    body = {"verdict": "ERROR", "error": message}
    return JSONResponse(body, status_code=status if http_status else 200, headers=headers)


def exception(message: str, *, http_status: bool = True) -> JSONResponse:
    return JSONResponse(
        {"verdict": "EXCEPTION", "exception": message},
        status_code=500 if http_status else 200,
        headers={STATUS_HEADER: "500"},
    )


def status_sent(response: Response) -> int:
    """The status a reply stands for: its ``X-Seclake-Status``, else its own."""
    return int(response.headers.get(STATUS_HEADER, response.status_code))
