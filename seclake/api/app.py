"""The app factory: wires settings, services and routes; owns no logic."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import seclake.api.calls  # noqa: F401  (registers every call)
from seclake.api.dispatcher import dispatch
from seclake.api.envelope import JSONResponse, failure
from seclake.api.elastic import routes as elastic_routes
from seclake.api.health import routes as health_routes
from seclake.api.openapi import openapi_document
from seclake.api.proxies import proxy_middleware
from seclake.api.slashes import CollapseSlashes
from seclake.api.sso import routes as sso_routes
from seclake.errors import MethodNotAllowed, NotFound, SeclakeError
from seclake.services import Services
from seclake.settings import Settings
from seclake.web import not_found_page, wants_page
from seclake.web import routes as web_routes

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def create_app(settings: Settings, services: Services | None = None) -> Starlette:
    services = services or Services(settings)
    services.listen()
    generated = services.prepare()
    if generated:
        announce_admin_password(generated, services.users.first_password_file())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        services.start()
        try:
            yield
        finally:
            services.stop()

    # Plain Starlette: the dispatcher reads each request itself, so a
    # framework's per-request validation and dependency solving would only
    # add time to every call.
    document = JSONResponse(openapi_document())

    async def openapi(request: Request) -> Response:
        return document

    routes = [
        # The calls' document (api/openapi.py): public, the same for everyone.
        Route("/api/openapi.json", openapi, methods=["GET", "HEAD"]),
        # Every method reaches the dispatcher, so a GET gets a 405 envelope.
        Route("/api/{name:path}", dispatch, methods=ALL_METHODS),
        *health_routes(),  # /healthz, /readyz, /metrics: api/health.py
        *sso_routes(),  # /auth/oidc/<provider>/start|callback: sign-in with an identity provider (api/sso.py)
        *elastic_routes(),  # GET / for shippers (browsers: the web interface), /_bulk: api/elastic.py
        *web_routes(),  # /, /assets/..., client-side routes: seclake/web/
    ]
    app = Starlette(
        routes=routes,
        # Outermost: every part of the app sees the client, not its proxy.
        middleware=[*proxy_middleware(settings.trusted_proxies), Middleware(CollapseSlashes)],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.services = services
    return app


async def _http_error(request: Request, exc: HTTPException) -> Response:
    """Paths outside /api still answer in the envelope."""
    error: SeclakeError
    if exc.status_code == 404 and wants_page(request):
        return not_found_page(request)  # a browser's unknown page: the interface's not-found page
    if exc.status_code == 404:
        error = NotFound(f"no such path {request.url.path[:100]!r}; calls live under /api/")
    elif exc.status_code == 405:
        error = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path[:100]!r}")
    else:
        error = SeclakeError(str(exc.detail))
    response = failure(error)
    response.status_code = exc.status_code
    return response


def announce_admin_password(password: str, kept_in: Path) -> None:
    """Show a generated admin password on the console, and where it is kept."""
    line = f"  seclake: first start; created user 'admin' with password: {password}  "
    bar = "=" * len(line)
    print(f"\n{bar}\n{line}\n  (also in {kept_in}, readable by its owner only, until the password is changed:\n"
          f"   sign in and change it, or `seclake user passwd admin NEW-PASSWORD`)\n{bar}\n",
          file=sys.stderr, flush=True)
