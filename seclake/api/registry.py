"""The call registry: which function answers which call, with which permission.

A JSON call is a plain synchronous function, run in a worker thread. It
names its request model (what ``kargs`` must be, ``api/request.py``) and its
reply model (what ``response`` holds, ``api/reply.py``); the dispatcher
reads ``kargs`` into the request model before the function sees it, so a
call gets typed arguments or never runs:

    @call("auth/getUser", permission="admin", request=UsernameRequest,
          reply=dict[str, UserRecord], summary="One user, as {user}.")
    def get_user(ctx: CallContext, args: UsernameRequest) -> object:
        return {"user": user_record(ctx.services.users.get(args.username))}

A raw route answers a body that is not a JSON envelope (log import). Its
handler is async and reads ``ctx.request`` itself; blocking work inside it
must go through ``threads.in_thread``. Path parameters come as keywords:

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

from pydantic import BaseModel
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
    # Whom a call without a caller acted for, for its audit entry (auth/login:
    # the name tried, whatever the outcome).
    audit_username: str | None = None
    # Headers a successful call adds to its response (Idempotent-Replayed).
    response_headers: dict[str, str] = field(default_factory=dict)

    @property
    def settings(self):
        return self.services.settings


Handler = Callable[[CallContext, Any], Any]
RawHandler = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Call:
    name: str
    permission: str
    handler: Handler
    request: type[BaseModel]
    # A model, or a type pydantic can describe (dict[str, UserRecord]).
    reply: Any
    summary: str


@dataclass(frozen=True)
class RawRoute:
    pattern: str
    permission: str
    handler: RawHandler
    regex: re.Pattern[str]
    reply: Any
    summary: str


class Registry:
    def __init__(self) -> None:
        self.calls: dict[str, Call] = {}
        self.raw_routes: list[RawRoute] = []

    def call(
        self, name: str, permission: str, *, request: type[BaseModel], reply: Any, summary: str
    ) -> Callable[[Handler], Handler]:
        _check_permission(permission)

        def register(handler: Handler) -> Handler:
            if name in self.calls:
                raise ValueError(f"call {name!r} registered twice")
            self.calls[name] = Call(name, permission, handler, request, reply, summary)
            return handler

        return register

    def raw_route(self, pattern: str, permission: str, *, reply: Any, summary: str) -> Callable[[RawHandler], RawHandler]:
        _check_permission(permission)
        # "import/{vendor}" -> one path segment per parameter
        regex = re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(pattern)))

        def register(handler: RawHandler) -> RawHandler:
            self.raw_routes.append(RawRoute(pattern, permission, handler, regex, reply, summary))
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
