"""The request and response envelope over real HTTP: every bad input gets a
clear ERROR with the right status, faults never leak a trace."""

from __future__ import annotations

import logging

import httpx
import orjson
import pytest

from seclake.api.registry import REGISTRY, call
from seclake.api.request import Empty

JSON = {"Content-Type": "application/json"}


from tests.conftest import error_of, status_of


def test_success_is_ok_envelope_with_status_200(server, admin_token) -> None:
    r = server.post("auth/userList", {}, admin_token)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["verdict"] == "OK" and isinstance(body["response"]["users"], list)


def test_other_top_level_keys_are_ignored(server, admin_token) -> None:
    body = {"function": "auth/userList", "provider": "x", "replyQueue": "q", "attachments": [], "kargs": {}}
    r = server.post("auth/userList", token=admin_token, json=body)
    assert r.json()["verdict"] == "OK"


def test_double_slash_and_gridaccount_are_tolerated(server, admin_token) -> None:
    r = server.http.post(
        f"{server.url}//api/auth/userList?gridaccount=acme",
        json={"kargs": {}}, headers={"Servicetoken": admin_token},
    )
    assert r.status_code == 200 and r.json()["verdict"] == "OK"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"this is not json", "not valid JSON"),
        (b"", "empty body"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"kargs"', "must be a JSON object"),
        (b'{"function": "auth/userList"}', 'lacks "kargs"'),
        (b'{"kargs": [1]}', "kargs must be a JSON object, not an array"),
        (b'{"kargs": null}', "kargs must be a JSON object, not null"),
        (b'{"kargs": "x"}', "kargs must be a JSON object, not a string"),
    ],
)
def test_malformed_bodies_get_a_clear_400(server, content: bytes, expected: str) -> None:
    r = server.post("auth/login", content=content, headers=JSON)
    message = error_of(r, 400)
    assert expected in message
    assert message.startswith("auth/login: ")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_not_declared_json_is_415(server, content_type) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    r = server.post("auth/login", content=b'{"kargs": {}}', headers=headers)
    assert "Content-Type must be application/json" in error_of(r, 415)


def test_json_with_charset_is_accepted(server) -> None:
    r = server.post(
        "auth/login", content=b'{"kargs": {"username": "nobody", "password": "x"}}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert status_of(r) == 401  # reached the login, which refused the credentials


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_wrong_method_is_405(server, admin_token, method: str) -> None:
    r = server.http.request(method, "/api/auth/userList", headers={"Servicetoken": admin_token})
    assert "use POST" in error_of(r, 405)


def test_unknown_call_is_404_naming_it(server, admin_token) -> None:
    r = server.post("auth/noSuchCall", {}, admin_token)
    assert "auth/noSuchCall" in error_of(r, 404)


def test_a_path_outside_api_answers_in_the_envelope(server) -> None:
    # Not a call of any client: a real 404, for browsers and crawlers.
    assert "no such path" in error_of(server.http.post("/nothing"), 404, real=True)


def test_oversized_body_is_413(server) -> None:
    limit = server.settings.max_body_bytes
    big = b'{"kargs": {"username": "' + b"a" * limit + b'"}}'
    assert "larger than the limit" in error_of(server.post("auth/login", content=big, headers=JSON), 413)


def test_oversized_body_without_length_is_413(server) -> None:
    """A chunked body is cut off as soon as it passes the cap."""
    limit = server.settings.max_body_bytes

    def chunks():
        yield b'{"kargs": {"username": "'
        for _ in range(limit // 65536 + 2):
            yield b"a" * 65536
        yield b'"}}'

    r = server.post("auth/login", content=chunks(), headers=JSON)
    assert "larger than the limit" in error_of(r, 413)


@pytest.mark.parametrize("depth", [40, 5000, 100_000])
def test_deep_nesting_is_400_naming_the_limit(server, depth: int) -> None:
    body = b'{"kargs": {"x": ' + b"[" * depth + b"]" * depth + b"}}"
    message = error_of(server.post("auth/login", content=body, headers=JSON), 400)
    assert "JSON nesting depth" in message and "limit of 32" in message


def test_nesting_within_the_limit_is_accepted(server) -> None:
    body = b'{"kargs": {"username": "nobody", "password": "pw", "x": ' + b"[" * 20 + b"]" * 20 + b"}}"
    assert status_of(server.post("auth/login", content=body, headers=JSON)) == 401


def test_epoch_milliseconds_survive_exactly(server, admin_token, new_name) -> None:
    name = new_name("epoch")
    stamps = {"from": 1763712000123, "to": 1763798399999, "big": 2**53 + 1}
    server.call(
        "auth/userAdd",
        {"user": {"username": name, "password": "long-enough-1", "profile": stamps}},
        admin_token,
    )
    raw = server.post("auth/getUser", {"username": name}, admin_token).content
    assert b'"big":9007199254740993' in raw
    assert orjson.loads(raw)["response"]["user"]["profile"] == stamps


@pytest.fixture
def boom_call():
    @call("test/boom", permission="public", request=Empty, reply=dict, summary="Fails, for a test.")
    def boom(ctx, kargs):
        raise ZeroDivisionError("secret internal detail")

    yield
    del REGISTRY.calls["test/boom"]


def test_unexpected_fault_is_exception_500_without_trace(server, boom_call, caplog) -> None:
    with caplog.at_level(logging.ERROR, logger="seclake.api"):
        r = server.post("test/boom", {})
    # HTTP 200 so that clients read the message; what it stands for in the header.
    assert (r.status_code, status_of(r)) == (200, 500)
    body = r.json()
    assert body["verdict"] == "EXCEPTION" and set(body) == {"verdict", "exception"}
    assert "ZeroDivisionError" in body["exception"] and "test/boom" in body["exception"]
    assert "Traceback" not in r.text and "secret internal detail" not in r.text
    logged = [rec for rec in caplog.records if rec.name == "seclake.api"]
    assert logged and logged[-1].exc_info is not None  # the trace goes to the server log


# -- errors the clients can read, and the real-status mode --------------------


def test_errors_are_200_with_their_status_in_a_header(server, admin_token) -> None:
    """Every client reads the body only on HTTP 200: a query's syntax error,
    with its position, must come back as 200 and verdict ERROR."""
    bad = {"partition": "default", "dataType": "event",
           "options": {"dateFacetField": "@timestamp", "searchStr": "action:(deny", "facets": {}}}
    r = server.post("ds/get_index_zoom_histogram_lv3", bad, admin_token)
    assert (r.status_code, r.headers["X-Seclake-Status"]) == (200, "400")
    assert r.json()["verdict"] == "ERROR" and "position" in r.json()["error"]
    # No token: 200 with 401 in the header.
    r = server.post("auth/userList", {})
    assert (r.status_code, status_of(r)) == (200, 401)


def test_real_statuses_when_the_setting_says_so(start_server) -> None:
    srv = start_server(http_error_status=True)
    r = srv.post("auth/userList", {})
    assert (r.status_code, status_of(r)) == (401, 401) and r.headers["WWW-Authenticate"].startswith("Bearer")
    token = srv.login()
    r = srv.post("ds/get_index_zoom_histogram_lv3", {"partition": "default", "dataType": "event",
                 "options": {"dateFacetField": "@timestamp", "searchStr": "a AND", "facets": {}}}, token)
    assert r.status_code == 400 and r.json()["verdict"] == "ERROR" and "position" in r.json()["error"]
    assert "unknown call" in srv.fail("no/such_call", {}, token, status=404)


def test_the_audit_keeps_the_status_an_error_stands_for(server, admin_token) -> None:
    server.post("ds/get_index_zoom_histogram_lv3", {"partition": "nope"}, admin_token)
    mine = [e for e in server.services.audit.recent(20) if e["call"] == "ds/get_index_zoom_histogram_lv3"]
    assert mine[0]["outcome"] == "ERROR" and mine[0]["status"] == 400


def test_a_reply_is_exact_json_whatever_its_keys() -> None:
    from seclake.api.envelope import JSONResponse

    big = 2**53 + 1  # epoch-scale integers stay integers, exactly
    assert orjson.loads(JSONResponse({"n": big, "s": "é"}).body) == {"n": big, "s": "é"}
    # A reply whose keys are not all strings is written with them as strings, not refused.
    assert orjson.loads(JSONResponse({"buckets": {7: "a", "x": 1}}).body) == {"buckets": {"7": "a", "x": 1}}
