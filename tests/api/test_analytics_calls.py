"""ds/query and its tasks over a real server: part 1's golden queries answered as
the reference evaluator answers them over the records in range, for an unrestricted
user and for a restricted one over the records they may see; errors as a search's;
tasks submitted, polled, fetched, cancelled, expired, and seen by their owner only."""

from __future__ import annotations

import time

import pytest

from seclake.api.calls import analytics as calls
from seclake.errors import QueryError
from seclake.query.matcher import matches
from seclake.query.parser import parse as parse_query
from seclake.record.dataset import EVENTS
from tests.analytics.golden import NOW, QUERIES, RECORDS, agree, documents
from tests.analytics.test_golden import _selected
from tests.conftest import running_server

PASSWORD = "analyst-password-1"
# What the restricted analyst may see: a data policy on a field the records hold.
POLICY = "host.name:(web-1 OR db-1)"
DOCUMENTS = documents()
VISIBLE = [r for r, d in zip(RECORDS, DOCUMENTS) if matches(parse_query(POLICY, EVENTS), d, EVENTS)]
IDS = [g.query[:70] for g in QUERIES]


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("analytics"), analytics_task_keep_seconds=3) as server:
        server.services.lake.append([("event", d) for d in DOCUMENTS])
        server.services.lake.flush()
        token = server.login()
        server.token = token
        server.call("auth/dataPolicyAdd", {"policy": {"name": "some-hosts", "filters": {"event": POLICY}}}, token)
        server.call("auth/userAdd", {"user": {"username": "analyst-hosts", "password": PASSWORD, "roles": ["analyst"],
                                              "dataPolicies": ["some-hosts"]}}, token)
        server.restricted = server.login("analyst-hosts", PASSWORD)
        yield server


@pytest.fixture(autouse=True)
def golden_now(monkeypatch):
    """NOW() is the golden set's now (the server runs in this process)."""
    monkeypatch.setattr(calls, "now_ms", lambda: NOW)


def ask(srv, query: str, token: str | None = None, **kargs):
    return srv.call("ds/query", {"query": query, "dataType": "event", **kargs}, token or srv.token)


@pytest.mark.parametrize("golden", QUERIES, ids=IDS)
def test_every_golden_query_equals_the_reference(srv, golden):
    got = ask(srv, golden.query)
    records = _selected(_head(golden.query), RECORDS)
    problem = agree(got["columns"], got["values"], golden, records)
    assert problem is None, problem
    assert isinstance(got["took"], int)


@pytest.mark.parametrize("golden", QUERIES, ids=IDS)
def test_a_restricted_analyst_gets_the_reference_over_what_they_may_see(srv, golden):
    assert 0 < len(VISIBLE) < len(RECORDS)
    got = ask(srv, golden.query, srv.restricted)
    records = _selected(_head(golden.query), VISIBLE)
    problem = agree(got["columns"], got["values"], golden, records)
    assert problem is None, problem


def _head(query: str) -> str:
    from seclake.analytics import parse

    return parse(query).head


def test_a_syntax_error_in_the_commands_is_a_search_syntax_error_with_its_position(srv):
    text = "* | STATS n = COUNT(*) BY"
    message = srv.fail("ds/query", {"query": text}, srv.token)
    with pytest.raises(QueryError) as e:
        from seclake.analytics import parse

        parse(text)
    assert message == f"ds/query: {e.value}" and "position 25" in message


def test_a_syntax_error_in_the_head_is_a_search_syntax_error_too(srv):
    message = srv.fail("ds/query", {"query": "user.name:(root | STATS n = COUNT(*)"}, srv.token)
    assert message.startswith("ds/query: query error at position")
    # Counted in the whole text, blanks before the head included.
    at = int(message.split("position ")[1].split(":")[0])
    shifted = srv.fail("ds/query", {"query": "   user.name:(root | STATS n = COUNT(*)"}, srv.token)
    assert int(shifted.split("position ")[1].split(":")[0]) == at + 3
    message = srv.fail("ds/query", {"query": "  user.name:root AND | STATS n = COUNT(*)"}, srv.token)
    bare = srv.fail("ds/query", {"query": "user.name:root AND | STATS n = COUNT(*)"}, srv.token)
    assert int(message.split("position ")[1].split(":")[0]) == int(bare.split("position ")[1].split(":")[0]) + 2


@pytest.mark.parametrize("kargs, says", [
    ({"query": "| LIMIT 1", "dataType": "audit"}, "dataType"),
    ({"query": 5}, "query"),
    ({"query": "| LIMIT 1", "range_from": 10, "range_to": 5}, "range_from"),
    ({"query": "x" * 20_000}, "query length"),
])
def test_bad_arguments_are_clear_errors(srv, kargs, says):
    assert says in srv.fail("ds/query", kargs, srv.token)


def test_a_query_matching_more_than_the_bound_is_refused_before_reading(start_server):
    srv = start_server(analytics_max_records=5)
    srv.services.lake.append([("event", d) for d in DOCUMENTS[:6]])
    srv.services.lake.flush()
    message = srv.fail("ds/query", {"query": "| STATS n = COUNT(*)"}, srv.login())
    assert "analytics_max_records" in message and "6, above the limit of 5" in message


def test_the_range_bounds_what_is_read(srv):
    times = sorted(r["@timestamp"] for r in RECORDS if isinstance(r["@timestamp"], int))
    cut = times[len(times) // 2]
    got = ask(srv, "@timestamp:* | STATS n = COUNT(*), first = MIN(@timestamp)", range_from=cut)
    n, first = got["values"][0]
    everything = ask(srv, "| STATS n = COUNT(*)")["values"][0][0]
    assert 0 < n < everything == len(RECORDS)
    assert first in (cut, _iso_of(cut))


def _iso_of(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- tasks ---------------------------------------------------------------------------------------


def poll(srv, task_id: str, token: str | None = None, seconds: float = 20.0) -> dict:
    stop = time.monotonic() + seconds
    while True:
        task = srv.call("ds/query_async_get", {"id": task_id}, token or srv.token)
        if not task["is_running"]:
            return task
        assert time.monotonic() < stop, task
        time.sleep(0.05)


def test_a_task_is_submitted_polled_and_fetched(srv):
    golden = QUERIES[1]
    task = srv.call("ds/query_async", {"query": golden.query}, srv.token)
    assert task["state"] in ("queued", "running", "done") and task["query"] == golden.query
    done = poll(srv, task["id"])
    assert done["state"] == "done"
    problem = agree(done["columns"], done["values"], golden, _selected(_head(golden.query), RECORDS))
    assert problem is None, problem
    assert done["progress"]["read"] == done["progress"]["total"] == len(RECORDS)
    assert done["expiresOn"] >= done["submittedOn"]


def test_a_task_is_seen_by_its_owner_only(srv):
    task = srv.call("ds/query_async", {"query": "| STATS n = COUNT(*)"}, srv.token)
    message = srv.fail("ds/query_async_get", {"id": task["id"]}, srv.restricted, status=404)
    assert "no query task" in message
    srv.fail("ds/query_async_cancel", {"id": task["id"]}, srv.restricted, status=404)


def test_a_task_with_a_syntax_error_is_refused_at_submit(srv):
    assert "position" in srv.fail("ds/query_async", {"query": "| STATS BY"}, srv.token)


def test_a_cancelled_task_stops_and_says_so(srv, monkeypatch):
    from seclake.service import analytics

    # A reader that would take minutes: a page of one record, each page slowed.
    monkeypatch.setattr(analytics, "PAGE", 1)
    original = analytics.Progress.check

    def slow(self):
        time.sleep(0.05)
        original(self)

    monkeypatch.setattr(analytics.Progress, "check", slow)
    task = srv.call("ds/query_async", {"query": "| STATS n = COUNT(*)"}, srv.token)
    stop = time.monotonic() + 10
    while srv.call("ds/query_async_get", {"id": task["id"]}, srv.token)["progress"]["read"] < 2:
        assert time.monotonic() < stop
        time.sleep(0.02)
    cancelled = srv.call("ds/query_async_cancel", {"id": task["id"]}, srv.token)
    assert cancelled["state"] == "cancelled" and "columns" not in cancelled
    time.sleep(0.3)
    after = poll(srv, task["id"])
    assert after["state"] == "cancelled" and after["error"] == "the query was cancelled"
    assert after["progress"]["read"] < len(RECORDS)
    read = after["progress"]["read"]
    time.sleep(0.2)
    assert poll(srv, task["id"])["progress"]["read"] == read, "the work stopped"


def test_a_finished_task_expires(srv):
    task = srv.call("ds/query_async", {"query": "| STATS n = COUNT(*)"}, srv.token)
    poll(srv, task["id"])
    time.sleep(3.2)  # analytics_task_keep_seconds=3
    assert "no query task" in srv.fail("ds/query_async_get", {"id": task["id"]}, srv.token, status=404)


def test_queries_and_the_records_they_read_are_counted_in_metrics(srv):
    from tests.api.test_health import sample, scrape

    def counted() -> tuple[float, float]:
        found = scrape(srv)
        return (sample(found, "seclake_analytics_queries_total", mode="call", outcome="done"),
                sample(found, "seclake_analytics_records_read_total"))

    done, read = counted()
    ask(srv, "| STATS n = COUNT(*)")
    ask(srv, "host.name:web-1 | STATS n = COUNT(*)")
    web1 = sum(1 for d in DOCUMENTS if d["@fields"].get("host", {}).get("name") == "web-1")
    assert counted() == (done + 2, read + len(RECORDS) + web1)


@pytest.mark.parametrize("data_type", ["flow", "behavior", "summary"])
def test_every_dataset_is_read(srv, data_type):
    got = srv.call("ds/query", {"query": "| STATS n = COUNT(*)", "dataType": data_type}, srv.token)
    assert got["values"] == [[0]]  # this server holds events only


def test_summaries_are_read_within_the_callers_policy(start_server):
    from tests.detect.test_summaries import apply
    from tests.detect.test_summary import T0 as DAY0, behavior

    srv = start_server()
    token = srv.login()
    apply(srv.services.summaries, [behavior(f"rule-{i % 2}", 100, ts=DAY0 + i, key=f"host-{i}", customer=c)
                                   for i, c in enumerate(["acme", "globex", "acme", "acme"])])
    srv.call("auth/dataPolicyAdd", {"policy": {"name": "acme", "filters": {"summary": "customer:acme"}}}, token)
    srv.call("auth/userAdd", {"user": {"username": "acme-analyst", "password": PASSWORD, "roles": ["analyst"],
                                       "dataPolicies": ["acme"]}}, token)
    query = {"query": "| STATS n = COUNT(*) BY customer | SORT customer", "dataType": "summary"}
    assert srv.call("ds/query", query, token)["values"] == [[3, "acme"], [1, "globex"]]
    assert srv.call("ds/query", query, srv.login("acme-analyst", PASSWORD))["values"] == [[3, "acme"]]


def test_queries_answered_at_once_are_bounded_and_the_rest_refused_saying_what_to_do(start_server, monkeypatch):
    import threading

    from seclake.service import analytics
    from tests.conftest import status_of

    srv = start_server(analytics_max_running_calls=1)
    srv.services.lake.append([("event", d) for d in DOCUMENTS[:20]])
    srv.services.lake.flush()
    token = srv.login()
    release = threading.Event()
    original = analytics.Progress.check

    def held(self):
        release.wait(10)  # the first query waits here, holding its slot
        original(self)

    monkeypatch.setattr(analytics.Progress, "check", held)
    first: dict = {}
    thread = threading.Thread(target=lambda: first.update(srv.call("ds/query", {"query": "| STATS n = COUNT(*)"}, token)))
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while srv.services.query_tasks.calls._value and time.monotonic() < deadline:  # noqa: SLF001 - the slot taken
            time.sleep(0.01)
        r = srv.post("ds/query", {"query": "| STATS n = COUNT(*)"}, token)
        assert status_of(r) == 429
        assert "analytics_max_running_calls" in r.json()["error"] and "ds/query_async" in r.json()["error"]
        # Tasks are not calls: one is accepted meanwhile.
        assert srv.call("ds/query_async", {"query": "| STATS n = COUNT(*)"}, token)["state"] in ("queued", "running")
    finally:
        release.set()
        thread.join(20)
    assert first["values"] == [[20]]
    assert srv.call("ds/query", {"query": "| STATS n = COUNT(*)"}, token)["values"] == [[20]]  # the slot is free again
