"""The browser's side of sign-in with an identity provider (service/oidc.py).

    GET /auth/oidc/<provider>/start?next=/path   -> 302 to the provider
    GET /auth/oidc/<provider>/callback?code&state -> 303 to /login#sso=<one-time code>

These are redirects and pages, not calls: the browser is sent here and away.
The start sets a cookie holding the flow's state (HttpOnly, SameSite=Lax:
the provider's redirect back is a top-level GET, which Lax lets through),
which the callback must match. The callback never puts the session token
in a URL: the sign-in page trades the one-time code for it (auth/ssoSession).
A refusal is a small page saying what went wrong, with the way back.
"""

from __future__ import annotations

import html
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from seclake.api.threads import in_thread
from seclake.service.oidc import SignInFailed
from seclake.web import SECURITY_HEADERS

COOKIE = "seclake_oidc_state"
COOKIE_PATH = "/auth/oidc/"
MAX_PARAM = 4096


async def start(request: Request) -> Response:
    services = request.app.state.services
    name = request.path_params["provider"]
    redirect_uri = _base(request) + f"/auth/oidc/{name}/callback"
    next_path = request.query_params.get("next", "")[:MAX_PARAM]
    try:
        url, state = await in_thread(services.oidc.start, name, redirect_uri, next_path, _client(request))
    except SignInFailed as failure:
        return _page(failure)
    response = RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})
    response.set_cookie(
        COOKIE, state, max_age=600, path=COOKIE_PATH, httponly=True, samesite="lax",
        secure=redirect_uri.startswith("https://"),
    )
    return response


async def callback(request: Request) -> Response:
    services = request.app.state.services
    name = request.path_params["provider"]
    params = {k: v[:MAX_PARAM] for k, v in request.query_params.items() if k in ("code", "state", "error", "error_description")}
    try:
        code, next_path = await in_thread(
            services.oidc.finish, name, params, request.cookies.get(COOKIE), _client(request))
    except SignInFailed as failure:
        response = _page(failure)
    else:
        # The fragment never reaches a server (nor a log); the page trades it at once.
        response = RedirectResponse(f"/login?{urlencode({'next': next_path})}#sso={code}", status_code=303,
                                    headers={"Cache-Control": "no-store"})
    response.delete_cookie(COOKIE, path=COOKIE_PATH)  # single use, whatever the outcome
    return response


def _client(request: Request) -> str:
    return request.client.host if request.client else ""


def _base(request: Request) -> str:
    public = request.app.state.services.settings.public_url
    if public:
        return public.rstrip("/")
    return f"{request.url.scheme}://{request.url.netloc}"


def _page(failure: SignInFailed) -> Response:
    text = html.escape(str(failure))
    body = (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>Sign-in failed · seclake</title><link rel=\"stylesheet\" href=\"/assets/app.css\"></head>"
        "<body><main class=\"login-page\" id=\"main\"><div class=\"login-form\">"
        "<h1>Sign-in failed</h1>"
        f"<p class=\"notice error\" id=\"sso-error\" data-reason=\"{html.escape(failure.reason)}\">{text}</p>"
        "<p><a href=\"/login\">Back to sign-in</a></p></div></main></body></html>"
    )
    return HTMLResponse(body, status_code=failure.status, headers={**SECURITY_HEADERS, "Cache-Control": "no-store"})


def routes() -> list[Route]:
    get = ["GET"]
    return [
        Route("/auth/oidc/{provider}/start", start, methods=get),
        Route("/auth/oidc/{provider}/callback", callback, methods=get),
    ]
