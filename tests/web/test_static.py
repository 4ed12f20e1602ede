"""Serving the web interface: same host and port as the API, no build step,
nothing from elsewhere; the API's 404 envelopes stay as they are."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seclake.web import UI_ROUTES, WEB_DIR
from tests.conftest import status_of

FILES = sorted(p.name for p in WEB_DIR.iterdir() if p.suffix in (".js", ".css"))


def test_index_with_a_strict_content_security_policy(server):
    r = server.http.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="/assets/app.js">' in r.text


@pytest.mark.parametrize("path", [f"/{first}" for first in UI_ROUTES] + ["/search/deep/link", "/admin/users"])
def test_client_side_routes_answer_the_page(server, path):
    r = server.http.get(path, params={"q": "x"})
    assert r.status_code == 200 and '<div id="app">' in r.text


def test_assets_are_served_with_their_types_and_revalidated(server):
    js = server.http.get("/assets/app.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    css = server.http.get("/assets/app.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    again = server.http.get("/assets/app.js", headers={"If-None-Match": js.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert server.http.head("/assets/app.js").status_code == 200


@pytest.mark.parametrize("path", ["/nothing", "/assets/nothing.js", "/assets/__init__.py", "/assets/..%2f__init__.py",
                                  "/assets/index.html", "/searchx"])
def test_other_paths_keep_the_404_envelope(server, path):
    r = server.http.get(path)
    assert r.status_code == 404
    assert r.json()["verdict"] == "ERROR" and "no such path" in r.json()["error"]


def test_the_api_is_untouched(server):
    r = server.http.get("/api/auth/userList")
    assert status_of(r) == 405 and r.json()["verdict"] == "ERROR"
    r = server.http.post("/api/no/such/call", json={"kargs": {}})
    assert status_of(r) == 404 and "unknown call" in r.json()["error"]
    assert server.http.post("/nothing").status_code == 404


def test_every_module_imported_is_served_and_nothing_comes_from_elsewhere(server):
    index = (WEB_DIR / "index.html").read_text()
    wanted = set(re.findall(r'/assets/([\w-]+\.(?:js|css))', index))
    for name in FILES:
        text = (WEB_DIR / name).read_text()
        wanted |= set(re.findall(r"from '\./([\w-]+\.js)'", text))
        # No address of another host, no HTML parsing of data.
        assert not re.search(r"(?<![\w/])(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text.replace("http://www.w3.org/2000/svg", "")), name
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text and "outerHTML" not in text, name
        assert "document.write" not in text and "eval(" not in text, name
    assert wanted <= set(FILES), wanted - set(FILES)
    for name in wanted:
        assert server.http.get(f"/assets/{name}").status_code == 200, name


# A module's static imports (``import ... from './x.js'``, however many lines); ``import('./x.js')``,
# a page's code fetched when the page is first shown (app.js), is not one.
_STATIC_IMPORT = re.compile(r"^(?:import|export)\s[^;]*?\bfrom\s+'\./([\w.-]+\.js)'|^import\s+'\./([\w.-]+\.js)'",
                            re.MULTILINE | re.DOTALL)
_PAGE = re.compile(r"import\('\./([\w.-]+\.js)'\)")
FIRST_PAINT = 150_000  # bytes of one page's first paint (index.html, app.css, app.js and the page, with what they
# import), uncompressed: ~0.12 s at 10 Mbit/s; the whole interface is ~220 KB


def _closure(name: str, seen: set[str]) -> set[str]:
    if name not in seen:
        seen.add(name)
        for m in _STATIC_IMPORT.finditer((WEB_DIR / name).read_text()):
            _closure(m.group(1) or m.group(2), seen)
    return seen


def test_each_page_is_small_enough_for_a_fast_first_paint():
    """The shell loads every page's code only when that page is first shown, so a page's first paint is
    the shell's modules and its own, not the whole interface's."""
    assert Path(WEB_DIR / "index.html").read_text().count("<script") == 1
    shell = _closure("app.js", set())
    pages = _PAGE.findall((WEB_DIR / "app.js").read_text())
    assert len(pages) >= 10 and not set(pages) & shell, (pages, shell)  # every page fetched when shown
    sizes = {}
    for page in pages:
        files = _closure(page, set(shell)) | {"app.css"}
        sizes[page] = sum((WEB_DIR / n).stat().st_size for n in files) + (WEB_DIR / "index.html").stat().st_size
    assert max(sizes.values()) < FIRST_PAINT, sizes
    # Every module is reachable from the shell or a page (none left behind, unused).
    reached = set(shell).union(*(_closure(page, set()) for page in pages))
    assert reached == {n for n in FILES if n.endswith(".js")}, set(FILES) - reached


@pytest.mark.parametrize("path", ["/nonexistent", "/app/unknown", "/searchx?q=1"])
def test_a_browser_asking_for_an_unknown_page_gets_the_interfaces_not_found_page(server, path):
    r = server.http.get(path, headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert '<div id="app">' in r.text  # the router draws "Page not found" (tests/web/e2e.mjs)
    assert "default-src 'none'" in r.headers["content-security-policy"]
    assert server.http.head(path, headers={"Accept": "text/html"}).status_code == 404


@pytest.mark.parametrize("path", ["/api/no/such/call", "/assets/nothing.js", "/api/"])
def test_api_and_asset_paths_keep_their_json_errors_even_for_a_browser(server, path):
    r = server.http.get(path, headers={"Accept": "text/html"})
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["verdict"] == "ERROR"


def test_attack_technique_names_are_served_with_mitres_licence(server):
    r = server.http.get("/assets/attack-techniques.json")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    data = r.json()
    assert data["techniques"]["T1059.001"] == "PowerShell"
    assert data["techniques"]["T1059"] == "Command and Scripting Interpreter"
    assert "The MITRE Corporation" in data["_licence"] and "terms-of-use" in data["_licence"]
    # Every technique the risk model knows has its name.
    tactics = json.loads((WEB_DIR.parent / "detect" / "tactics.json").read_text())["techniques"]
    assert set(tactics) <= set(data["techniques"]), set(tactics) - set(data["techniques"])
    notice = (WEB_DIR / "ATTACK-NOTICE.txt").read_text()
    assert "This work is reproduced and distributed with the permission of The MITRE Corporation" in notice
    assert "hereby grants you a non-exclusive, royalty-free license" in notice
