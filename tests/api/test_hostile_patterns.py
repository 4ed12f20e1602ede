"""A hostile wildcard or regex cannot stall the server (docs/security.md).

Before patterns were matched by RE2, ``*a*a*a*a*a*a*a*b`` against a long run
of a's backtracked for minutes in Python's ``re`` while holding the
interpreter, so every other request (``GET /`` included) waited, and SIGTERM
did not stop it. Each test sends the exact request of the report to a real
server and checks two things a user notices: the hostile call answers within
seconds, and the server keeps answering others meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest

# A regression would hold the interpreter inside the regex engine, where no
# signal is seen: the thread method ends the whole run instead of hanging CI.
pytestmark = pytest.mark.timeout(120, method="thread")

DAO = "ds/eventwatch_bucket_dao"
RULE_TEST = "ds/eventwatch_rule_test"
SUMMARIES = "ds/behavior_summary_search"

STARS = "*a*a*a*a*a*a*a*b"  # seven stars: O(n^7) backtracking on a's without a b
A_RUN = "a" * 3000
# Generous for a shared, noisy machine; the backtracking took minutes.
ANSWER_WITHIN = 10.0
OTHERS_WITHIN = 3.0


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory):
    from tests.conftest import running_server  # noqa: PLC0415

    with running_server(tmp_path_factory.mktemp("hostile")) as s:
        yield s


@pytest.fixture(scope="module")
def admin(srv) -> str:
    return srv.login()


def _rule(name: str, query: str) -> dict[str, Any]:
    return {
        "name": name, "behavior": "Odd User", "description": "a user name the tests make up",
        "query": query, "keyField": "TargetUserName", "keyType": "username", "risks": ["T1078"], "riskScore": 100,
    }


def _meanwhile(srv, work: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``work`` in a thread while probing ``GET /``: (its result, its
    seconds, the slowest probe's seconds)."""
    out: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            out["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the test's thread
            out["error"] = exc
        out["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    slowest = 0.0
    probes = 0
    while thread.is_alive() and probes < 200:
        started = time.monotonic()
        assert srv.http.get("/", timeout=OTHERS_WITHIN * 2).status_code == 200
        slowest = max(slowest, time.monotonic() - started)
        probes += 1
        time.sleep(0.02)
    thread.join(ANSWER_WITHIN * 3)
    assert not thread.is_alive(), "the hostile call did not answer"
    if "error" in out:
        raise out["error"]
    return out["result"], out["seconds"], slowest


@pytest.mark.parametrize(
    ("query", "value"),
    [
        (f"TargetUserName:{STARS}", A_RUN),
        # Exponential in the run's length for a backtracking engine (28 a's took 14.5 s).
        ("TargetUserName:/(a|a)*b/", "a" * 60),
        ("/(a|aa)*c/", "a" * 5000),
    ],
)
def test_rule_test_with_a_hostile_pattern_answers_at_once(srv, admin: str, query: str, value: str) -> None:
    kargs = {"bucket": _rule("adhoc", query), "input": {"@fields": {"TargetUserName": value}}}
    got, seconds, slowest = _meanwhile(srv, lambda: srv.call(RULE_TEST, kargs, admin))
    assert got["matched"] is False
    assert seconds < ANSWER_WITHIN and slowest < OTHERS_WITHIN, (seconds, slowest)


def test_a_hostile_rule_does_not_stall_imports(srv, admin: str) -> None:
    srv.call(DAO, {"action": "add", "bucket": _rule("hostile-stars", f"TargetUserName:{STARS}")}, admin)
    try:
        body = b"\n".join(orjson.dumps({"EventID": 1, "TargetUserName": A_RUN + str(i)}) for i in range(20))
        r, seconds, slowest = _meanwhile(
            srv, lambda: srv.http.post("/api/import/test", content=body, headers={"Servicetoken": admin})
        )
        assert r.status_code == 200 and r.json()["response"]["accepted"] == 20, r.text
        assert seconds < ANSWER_WITHIN and slowest < OTHERS_WITHIN, (seconds, slowest)
    finally:
        srv.call(DAO, {"action": "delete", "name": "hostile-stars"}, admin)


def test_summary_search_with_a_hostile_wildcard_answers_at_once(srv, admin: str) -> None:
    # A summary whose key is a long run of a's, made by a rule at import as any summary is.
    srv.call(DAO, {"action": "add", "bucket": _rule("odd-user", "EventID:4625")}, admin)
    try:
        line = orjson.dumps({"EventID": 4625, "TargetUserName": A_RUN})
        r = srv.http.post("/api/import/test", content=line, headers={"Servicetoken": admin})
        assert r.status_code == 200, r.text
        everything = {"options": {"searchStr": "", "range_field": "from", "range_from": 0, "range_to": 2**42}}
        deadline = time.monotonic() + 10
        while srv.call(SUMMARIES, everything, admin)["hits"]["total"] == 0:
            assert time.monotonic() < deadline, "no summary was folded from the import"
            time.sleep(0.1)
        hostile = {"options": {**everything["options"], "searchStr": STARS}}
        got, seconds, slowest = _meanwhile(srv, lambda: srv.call(SUMMARIES, hostile, admin))
        assert got["hits"]["total"] == 0
        assert seconds < ANSWER_WITHIN and slowest < OTHERS_WITHIN, (seconds, slowest)
        # The same shape of pattern still finds what it should.
        found = srv.call(SUMMARIES, {"options": {**everything["options"], "searchStr": "*a*a*a*a*a*a*a*"}}, admin)
        assert found["hits"]["total"] >= 1
    finally:
        srv.call(DAO, {"action": "delete", "name": "odd-user"}, admin)


def test_a_flood_of_leading_wildcards_is_refused_with_what_it_would_cost(srv, admin: str) -> None:
    # Issue 17.2: this 8 KB query kept ~1.5 GB of compiled automata per
    # distinct text; four of them took the server from 105 MB to 6.1 GB.
    words = (f"{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{i % 10}" for i in range(830))
    query = " OR ".join(f"*{w}*" for w in words)
    kargs = {"options": {"searchStr": query, "range_from": 0, "range_to": 2**42, "fetchLimit": 1, "dateFacetField": "@timestamp"}}
    message = srv.fail("ds/get_index_zoom_histogram_lv3", kargs, admin)
    assert "wildcards, regexes and string ranges compile to" in message and "above the limit of 64" in message
