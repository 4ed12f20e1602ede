"""The dispatcher's rules as others use them: raw routes share token,
permission, audit and envelope but not the JSON cap; calls run off the event
loop, so concurrent callers all get answers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from seclake.api.registry import REGISTRY, CallContext, raw_route
from tests.conftest import status_of


@pytest.fixture
def echo_route():
    @raw_route("test/echo/{word}", permission="ingest", reply=dict, summary="Echo, for a test.")
    async def echo(ctx: CallContext, word: str) -> dict:
        size = 0
        async for chunk in ctx.request.stream():
            size += len(chunk)
        return {"word": word, "bytes": size, "caller": ctx.caller.username}

    yield
    REGISTRY.raw_routes.remove(next(r for r in REGISTRY.raw_routes if r.pattern == "test/echo/{word}"))


def test_raw_route_gets_the_same_guard_and_no_json_cap(server, admin_token, echo_route, new_name) -> None:
    body = b"x" * (server.settings.max_body_bytes * 2)  # past the JSON cap, and not JSON
    r = server.http.post("/api/test/echo/hello", content=body, headers={"Servicetoken": admin_token})
    assert r.json() == {"verdict": "OK", "response": {"word": "hello", "bytes": len(body), "caller": "admin"}}
    assert status_of(server.http.post("/api/test/echo/hello", content=b"x")) == 401
    analyst = server.add_user(admin_token, new_name("an"), ["analyst"])
    r = server.http.post(f"{server.url}//api/test/echo/hello", content=b"x", headers={"Servicetoken": analyst})
    assert status_of(r) == 403 and "test/echo/hello" in r.json()["error"]
    ingest = server.add_user(admin_token, new_name("in"), ["ingest"])
    assert server.http.post("/api/test/echo/w", content=b"x", headers={"Servicetoken": ingest}).status_code == 200
    assert status_of(server.http.get("/api/test/echo/w", headers={"Servicetoken": ingest})) == 405
    entry = server.services.audit.recent(1)[0]
    assert (entry["call"], entry["status"]) == ("test/echo/w", 405)


def test_concurrent_callers_all_get_answers(server, admin_token) -> None:
    api = server.call("auth/api_token", {"action": "add", "name": "load"}, admin_token)["token"]

    def work(i: int) -> int:
        token = api if i % 2 else admin_token
        return status_of(server.post("auth/userList", {}, token))

    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(work, range(200)))
    assert statuses == [200] * 200


@pytest.mark.parametrize("name", ["auth/setUserSitePolicy", "ds/kql_search", "ds/kql_validate",
                                  "ds/get_system_status"])
def test_calls_of_the_original_service_not_served_here_say_so(server, name) -> None:
    """The public clients send these; they get a clear ERROR naming the call and
    what to use instead, not a bare 'unknown call' or an HTTP 404 they cannot read."""
    r = server.post(name, {"kql": "T | take 1"}, server.login())
    assert (r.status_code, status_of(r)) == (200, 404)
    message = r.json()["error"]
    assert message.startswith(f"{name}: not supported by this server: ") and len(message) > 80
