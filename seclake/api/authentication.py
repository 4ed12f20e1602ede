"""Finding the caller's token in the request headers.

Clients send it as ``Servicetoken`` (the documented header),
``Authorization: Bearer``, or ``FluencyToken``; header names are
case-insensitive, so ``Fluencytoken`` is the same header.
"""

from __future__ import annotations

from starlette.datastructures import Headers


def token_from(headers: Headers) -> str | None:
    token = headers.get("servicetoken")
    if token:
        return token.strip()
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    token = headers.get("fluencytoken")
    if token:
        return token.strip()
    return None
