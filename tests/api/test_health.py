"""GET /healthz, /readyz and /metrics on a real server, and ``seclake status``."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.requests import Request

from seclake.api.health import _refusal
from tests.api.test_durability import ROOT, _free_port, _login, _start

SEARCH = "ds/get_index_zoom_histogram_lv3"
ROOT_LOGIN = "<38>Nov 21 10:00:02 bastion sshd[411]: Accepted password for root from 198.51.100.4 port 40022 ssh2"


def scrape(server, **headers) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics, parsed by prometheus-client's own parser."""
    r = server.http.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def sample(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _search(server, token, query):
    kargs = {"partition": "default", "dataType": "event",
             "options": {"dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": 10,
                         "range_from": 0, "range_to": 4_102_444_800_000}}
    return server.call(SEARCH, kargs, token)


def test_health_and_readiness_answer_without_a_token(start_server):
    server = start_server()
    r = server.http.get("/healthz")
    assert (r.status_code, r.json()) == (200, {"status": "alive"})
    r = server.http.get("/readyz")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ready"
    assert {c["name"] for c in body["checks"]} >= {"migrations", "database", "started", "log_replayed"}
    assert all(c["ok"] for c in body["checks"])
    assert server.http.head("/readyz").status_code == 200


def test_metrics_move_with_the_work(start_server):
    server = start_server()
    token = server.login()
    before = scrape(server)
    assert sample(before, "process_resident_memory_bytes") > 10 << 20
    assert sample(before, "seclake_ready") == 1
    lines = [ROOT_LOGIN] * 3 + ["no parser knows this line"]
    r = server.http.post("/api/import/sshd", content="\n".join(lines).encode(),
                         headers={"Servicetoken": token, "Content-Type": "text/plain"})
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 10
    while _search(server, token, "@source:sshd")["hits"]["total"] < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    server.post("ds/no_such_call", {}, token)
    server.post(SEARCH, {"partition": "default", "options": {"searchStr": "a AND ("}}, token)
    after = scrape(server)

    def moved(name, **labels):
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert moved("seclake_records_total", path="import", dataset="event", outcome="accepted") == 3
    assert moved("seclake_records_total", path="import", dataset="event", outcome="raw") == 1
    assert moved("seclake_requests_total", call="import/{vendor}", outcome="OK") == 1
    assert moved("seclake_requests_total", call=SEARCH, outcome="OK") >= 1
    assert moved("seclake_requests_total", call=SEARCH, outcome="ERROR") == 1
    # A made-up call name is not a label of its own (each would be a new series).
    assert moved("seclake_requests_total", call="(unknown)", outcome="ERROR") == 1
    assert not any(dict(labels).get("call") == "ds/no_such_call" for _, labels in after)
    assert moved("seclake_request_duration_seconds_count", call=SEARCH) >= 2
    # The starter rule on password logins as root fired once per line.
    assert moved("seclake_behaviors_total", rule="ssh-privileged-password-login") == 3
    assert moved("seclake_lake_records", dataset="event") == 4
    assert sample(after, "seclake_log_last_sequence") >= 4
    assert sample(after, "seclake_log_bytes") > 0
    assert sample(after, "seclake_log_lag_records") == 0
    assert 0 < sample(after, "seclake_indexer_busy_ratio") < 1  # the import's split, built moments ago
    assert sample(after, "seclake_merges_waiting") == 0


def test_metrics_need_the_token_when_one_is_set(start_server):
    server = start_server(metrics_token="scrape-me-please")
    r = server.http.get("/metrics")
    assert r.status_code == 401 and "Authorization: Bearer" in r.text
    assert server.http.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    # A seclake session token is not the metrics token.
    assert server.http.get("/metrics", headers={"Authorization": f"Bearer {server.login()}"}).status_code == 401
    assert scrape(server, Authorization="Bearer scrape-me-please")


@pytest.mark.parametrize("host,allowed", [("127.0.0.1", True), ("::1", True), ("10.1.2.3", False), ("", False)])
def test_without_a_token_metrics_answer_loopback_clients_only(host, allowed):
    # The server's real clients are all loopback here: the rule itself is checked on a request's scope.
    request = Request({"type": "http", "method": "GET", "path": "/metrics", "headers": [],
                       "client": (host, 5000) if host else None})
    refused = _refusal(request, None)
    assert (refused is None) == allowed
    if not allowed:
        assert refused.status_code == 403 and b"metrics_token" in refused.body


def test_after_a_crash_the_node_says_it_is_not_ready_until_the_log_is_searchable(tmp_path, start_server):
    data = tmp_path / "data"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    # This server dies right after the import is durable: the records are in the log only.
    proc = _start(data, port, module="tests.api.crashserver")
    try:
        token = _login(url, time.monotonic() + 30)
        body = "\n".join(f"replayed line {i}" for i in range(7)).encode()
        with pytest.raises(httpx.HTTPError):
            httpx.post(f"{url}/api/import/replay", content=body, timeout=30,
                       headers={"Servicetoken": token, "Idempotency-Key": "k1", "Content-Type": "text/plain"})
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Restarted with a slow indexer, so the window before the replay is indexed is wide.
    server = start_server(data, commit_interval_seconds=6)
    r = server.http.get("/readyz")
    assert r.status_code == 503, r.text
    failing = [c for c in r.json()["checks"] if not c["ok"]]
    assert [c["name"] for c in failing] == ["log_replayed"]
    assert "7 records" in failing[0]["detail"]
    token = server.login()
    res = _search(server, token, "@source:replay")
    assert res["hits"]["total"] == 0 and "7 records" in res["incomplete"]
    assert sample(scrape(server), "seclake_ready") == 0
    assert sample(scrape(server), "seclake_log_lag_records") == 7
    # `seclake status` says the same, with exit status 1.
    status = subprocess.run([sys.executable, "-m", "seclake", "status", "--url", server.url],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert status.returncode == 1, status.stdout + status.stderr
    assert "not ready" in status.stdout and "log_replayed" in status.stdout
    deadline = time.monotonic() + 20
    while server.http.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "never ready"
        time.sleep(0.2)
    res = _search(server, token, "@source:replay")
    assert res["hits"]["total"] == 7 and "incomplete" not in res
    status = subprocess.run([sys.executable, "-m", "seclake", "status", "--url", server.url],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert status.returncode == 0 and "ready" in status.stdout


def test_status_of_a_server_that_does_not_answer():
    port = _free_port()
    status = subprocess.run([sys.executable, "-m", "seclake", "status", "--url", f"http://127.0.0.1:{port}"],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert status.returncode == 2
    assert "does not answer" in status.stdout + status.stderr


def test_a_killed_build_worker_is_replaced_and_counted(start_server):
    """The OOM killer's favourite pick is a big idle worker: imports after it
    must still become searchable, and operators must see that it happened."""
    import os
    import signal

    import orjson

    server = start_server()
    token = server.login()

    def imported_and_searchable(first: int, n: int) -> None:
        # WORKER_THRESHOLD records or more: built in a worker process.
        body = b"\n".join(orjson.dumps({"@timestamp": 1_763_683_200_000 + i, "@message": f"batch{first} {i}"})
                          for i in range(first, first + n))
        r = server.http.post("/api/import/bulk", content=body, headers={"Servicetoken": token})
        assert r.json()["response"]["accepted"] == n, r.text
        deadline = time.monotonic() + 30
        while _search(server, token, f"batch{first}")["hits"]["total"] < n:
            assert time.monotonic() < deadline, f"batch {first} never became searchable"
            time.sleep(0.1)

    imported_and_searchable(0, 1000)
    pool = server.services.lake.builder._pools["build"]
    for pid in list(pool._processes):
        os.kill(pid, signal.SIGKILL)
    imported_and_searchable(1000, 1000)
    imported_and_searchable(2000, 1000)
    assert sample(scrape(server), "seclake_workers_lost_total") == 1


def test_parse_workers_are_counted_and_a_killed_one_is_replaced(start_server):
    import os
    import signal

    server = start_server(parse_workers=1)
    server.services.parsers.min_bytes = 0  # every body, however small
    token = server.login()

    def imported(n: int) -> None:
        r = server.http.post("/api/import/linux", content=("\n".join([ROOT_LOGIN] * n) + "\n").encode(),
                             headers={"Servicetoken": token})
        assert r.json()["response"]["accepted"] == n, r.text

    imported(3)
    assert sample(scrape(server), "seclake_parse_worker_bodies_total") == 1
    for pid in list(server.services.parsers._pool._processes):
        os.kill(pid, signal.SIGKILL)
    imported(4)
    samples = scrape(server)
    assert sample(samples, "seclake_parse_workers_lost_total") == 1
    assert sample(samples, "seclake_parse_worker_bodies_total") == 2


def test_a_server_with_a_lost_split_starts_answers_from_the_rest_and_says_which_split_is_missing(
        start_server, tmp_path):
    import shutil

    import orjson

    data = tmp_path / "data"
    server = start_server(data)
    token = server.login()
    day = 86_400_000
    body = b"\n".join(orjson.dumps({"@timestamp": 1_763_683_200_000 + (i % 2) * day, "@message": f"lost{i % 2} n{i}"})
                      for i in range(40))
    assert server.http.post("/api/import/bulk", content=body,
                            headers={"Servicetoken": token}).json()["response"]["accepted"] == 40
    server.services.lake.flush()
    [lost] = [s for s in server.services.lake.splits("event") if s.meta.time_min < 1_763_683_200_000 + day]
    server.stop()
    shutil.rmtree(lost.path)

    again = start_server(data)  # it used to refuse to start
    token = again.login()
    found = _search(again, token, "n*")
    assert found["hits"]["total"] == 20
    assert all(h["_source"]["@message"].startswith("lost1") for h in found["hits"]["hits"])
    assert found["_shards"]["failed"] == 1
    assert found["_shards"]["failures"][0]["index"] == lost.meta.split_id
    assert "cannot be read" in found["_shards"]["failures"][0]["reason"]
    assert sample(scrape(again), "seclake_splits_damaged") == 1


def test_metrics_count_the_detectors_live_threshold_windows(start_server):
    server = start_server()
    token = server.login()
    before = scrape(server)
    assert sample(before, "seclake_detector_windows") == 0
    # Failed sshd logins of one user from two addresses: the starter pack's
    # brute-force rules keep one window per address and one for the user.
    lines = [f"<38>Nov 21 10:00:0{i} bastion sshd[41{i}]: Failed password for admin from 198.51.100.{i % 2 + 1} "
             f"port 4002{i} ssh2" for i in range(4)]
    r = server.http.post("/api/import/sshd", content="\n".join(lines).encode(),
                         headers={"Servicetoken": token, "Content-Type": "text/plain"})
    assert r.status_code == 200 and r.json()["response"]["accepted"] == 4, r.text
    after = scrape(server)
    assert sample(after, "seclake_detector_windows") == 3
    assert ("seclake_detector_windows_evicted_total", ()) in after
    assert sample(after, "seclake_detector_windows_evicted_total") == 0
