"""ASGI middleware that reads ``//api/x`` as ``/api/x``.

Some clients join a base URL ending in ``/`` with a path starting with one.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

_RUN = re.compile(r"/{2,}")


class CollapseSlashes:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "//" in scope["path"]:
            scope = dict(scope)
            scope["path"] = _RUN.sub("/", scope["path"])
            if scope.get("raw_path"):
                scope["raw_path"] = re.sub(rb"/{2,}", b"/", scope["raw_path"])
        await self.app(scope, receive, send)
