"""Reading a JSON call body: media type, size cap, nesting cap, envelope shape."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request

from seclake.errors import BadRequest, LimitExceeded, PayloadTooLarge, UnsupportedMediaType
from seclake.record.jsontype import json_kind as _kind


def check_json_media_type(request: Request) -> None:
    raw = request.headers.get("content-type", "")
    media = raw.split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        shown = f"{raw!r}" if raw else "none"
        raise UnsupportedMediaType(f"Content-Type must be application/json, got {shown}")


async def read_capped(request: Request, limit: int) -> bytes:
    """The body, read chunk by chunk and abandoned as soon as it passes ``limit``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"body of {int(declared)} bytes is larger than the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"body is larger than the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_kargs(body: bytes, max_depth: int) -> dict[str, Any]:
    """The ``kargs`` object of a call envelope; other top-level keys are ignored."""
    if not body.strip():
        raise BadRequest('empty body: send a JSON object such as {"kargs": {}}')
    try:
        envelope = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        if "depth" in str(e).lower() or "recursion" in str(e).lower():
            raise LimitExceeded("JSON nesting depth", "over 1000", max_depth) from None
        raise BadRequest(f"body is not valid JSON: {e}") from None
    depth = nesting_depth(envelope, max_depth)
    if depth > max_depth:
        raise LimitExceeded("JSON nesting depth", f"at least {depth}", max_depth)
    if not isinstance(envelope, dict):
        raise BadRequest(f'body must be a JSON object like {{"kargs": {{}}}}, not {_kind(envelope)}')
    if "kargs" not in envelope:
        raise BadRequest('body lacks "kargs": send {"kargs": {...}} (an empty object when there are no arguments)')
    kargs = envelope["kargs"]
    if not isinstance(kargs, dict):
        raise BadRequest(f"kargs must be a JSON object, not {_kind(kargs)}")
    return kargs


def nesting_depth(value: Any, stop_above: int) -> int:
    """Depth of nested objects and arrays (a scalar is 0, ``{}`` is 1).

    Iterative, so a deep document cannot exhaust the Python stack; stops
    counting once ``stop_above`` is passed.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop_above:
            return deepest
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


