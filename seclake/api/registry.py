"""The call registry: which function answers which call, with which permission.

A JSON call is a plain synchronous function, run in a worker thread:

    @call("auth/userList", permission="admin")
    def user_list(ctx: CallContext, kargs: dict) -> object:
        return {"users": ctx.services.users.list()}

A raw route answers a body that is not a JSON envelope (log import). Its
handler is async and reads ``ctx.request`` itself; blocking work inside it
must go through ``run_in_threadpool``. Path parameters come as keywords:

    @raw_route("import/{vendor}", permission="ingest")
    async def import_logs(ctx: CallContext, vendor: str) -> object: ...

Both get the same token check, permission check, audit and envelope.
Permissions: public (no token), search, triage, ingest, admin.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.requests import Request

from seclake.service.caller import Caller
from seclake.service.roles import PERMISSIONS

if TYPE_CHECKING:
    from seclake.services import Services


@dataclass
class CallContext:
    services: Services
    caller: Caller | None  # None only in public calls
    client: str
    headers: Headers
    request: Request | None = field(default=None, repr=False)
    # What a successful call changed, for its audit entry ("rule x deleted").
    audit_detail: str | None = None
    # Headers a successful call adds to its response (Idempotent-Replayed).
    response_headers: dict[str, str] = field(default_factory=dict)

    @property
    def settings(self):
        return self.services.settings


Handler = Callable[[CallContext, dict[str, Any]], Any]
RawHandler = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Call:
    name: str
    permission: str
    handler: Handler


@dataclass(frozen=True)
class RawRoute:
    pattern: str
    permission: str
    handler: RawHandler
    regex: re.Pattern[str]


class Registry:
    def __init__(self) -> None:
        self.calls: dict[str, Call] = {}
        self.raw_routes: list[RawRoute] = []

    def call(self, name: str, permission: str) -> Callable[[Handler], Handler]:
        _check_permission(permission)

        def register(handler: Handler) -> Handler:
            if name in self.calls:
                raise ValueError(f"call {name!r} registered twice")
            self.calls[name] = Call(name, permission, handler)
            return handler

        return register

    def raw_route(self, pattern: str, permission: str) -> Callable[[RawHandler], RawHandler]:
        _check_permission(permission)
        # "import/{vendor}" -> one path segment per parameter
        regex = re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(pattern)))

        def register(handler: RawHandler) -> RawHandler:
            self.raw_routes.append(RawRoute(pattern, permission, handler, regex))
            return handler

        return register

    def raw_match(self, name: str) -> tuple[RawRoute, dict[str, str]] | None:
        for route in self.raw_routes:
            m = route.regex.fullmatch(name)
            if m:
                return route, m.groupdict()
        return None


def _check_permission(permission: str) -> None:
    if permission not in PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r}; one of {PERMISSIONS}")


REGISTRY = Registry()
call = REGISTRY.call
raw_route = REGISTRY.raw_route
