"""The web interface: static files (plain ES modules and CSS, no build step)
served by seclake itself, from the same host and port as the API.

    GET /                          index.html
    GET /search, /timeline, ...    index.html (client-side routes; see UI_ROUTES)
    GET /assets/<name>.js|.css|.json  a file of this folder

Everything else keeps the API's behavior: /api/... is the dispatcher, and
other paths answer the 404 envelope, except to a browser asking for a page
(``Accept: text/html``), which gets the interface's own not-found page with
the 404 status (``wants_page``). The interface only calls the public API.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from starlette.exceptions import HTTPException

WEB_DIR = Path(__file__).resolve().parent
# First path segments the interface routes on the client.
UI_ROUTES = ("login", "search", "timeline", "summaries", "rules", "sources", "fields", "admin", "reference", "alerts")
ASSET = re.compile(r"[a-z0-9][a-z0-9-]*\.(js|css|json)")
MEDIA_TYPES = {
    "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "json": "application/json",
}
# The page may load and call only its own origin: no CDN, no outside fonts,
# no inline script (every value from the server is set as text, never HTML).
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def _file_response(request: Request, path: Path, media_type: str) -> Response:
    body = path.read_bytes()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Cache-Control": "no-cache", **SECURITY_HEADERS}
    if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    return Response(body if request.method != "HEAD" else b"", media_type=media_type, headers=headers)


async def index(request: Request) -> Response:
    return _file_response(request, WEB_DIR / "index.html", "text/html; charset=utf-8")


def wants_page(request: Request) -> bool:
    """A browser navigating to a page (not a call, an asset or a shipper): it gets HTML, not the envelope.

    API paths keep their JSON errors whatever the Accept header says (clients depend on them).
    """
    path = request.url.path
    if request.method not in ("GET", "HEAD") or path.startswith(("/api/", "/assets/")) or path == "/api":
        return False
    return "text/html" in request.headers.get("accept", "")


def not_found_page(request: Request) -> Response:
    """The interface with a 404 status: its router draws "Page not found" for an address it does not know."""
    body = (WEB_DIR / "index.html").read_bytes() if request.method != "HEAD" else b""
    return Response(body, status_code=404, media_type="text/html; charset=utf-8",
                    headers={"Cache-Control": "no-cache", **SECURITY_HEADERS})


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    match = ASSET.fullmatch(name)
    path = WEB_DIR / name
    if match is None or not path.is_file():
        raise HTTPException(404)  # the app's handler answers the 404 envelope
    return _file_response(request, path, MEDIA_TYPES[match.group(1)])


def routes() -> list[Route]:
    """The interface's routes; they come after the /api route, which keeps precedence."""
    get = ["GET", "HEAD"]
    out = [Route("/", index, methods=get), Route("/assets/{name}", asset, methods=get)]
    # Only the interface's own first segments: any other path keeps its 404 envelope.
    for first in UI_ROUTES:
        out += [Route(f"/{first}", index, methods=get), Route(f"/{first}/{{rest:path}}", index, methods=get)]
    return out
