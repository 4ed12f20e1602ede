"""Searches first: a bulk import waits at its checkpoints while a search runs, boundedly, and loses nothing."""

from __future__ import annotations

import os
import threading
import time

import httpx

from seclake.service.priority import Priority
from seclake.storage.builder import MERGE, MERGE_NICENESS


def test_a_checkpoint_waits_while_a_search_runs_and_goes_on_when_it_ends():
    priority = Priority(share=0.9, max_wait_seconds=5)
    started = time.monotonic()
    priority.yield_to_interactive()  # nothing running: at once
    assert time.monotonic() - started < 0.05 and priority.yields == 0
    held = threading.Event()

    def search() -> None:
        with priority.interactive():
            held.set()
            time.sleep(0.3)

    thread = threading.Thread(target=search)
    thread.start()
    held.wait(5)
    started = time.monotonic()
    priority.yield_to_interactive()
    waited = time.monotonic() - started
    thread.join()
    assert 0.2 < waited < 2  # until the search ended, not the 5 s bound
    assert priority.yields == 1 and priority.yield_seconds >= 0.2


def test_the_wait_is_bounded_per_checkpoint_and_in_share_and_paced_items_all_come():
    priority = Priority(share=0.9, max_wait_seconds=0.1)
    with priority.interactive():  # a search that outlasts every checkpoint
        started = time.monotonic()
        items = list(priority.paced(range(1000), every=256))
        waited = time.monotonic() - started
    assert items == list(range(1000))
    assert priority.yields == 4 and 0.3 < waited < 2  # checkpoints at 0, 256, 512, 768, ~0.1 s each
    assert priority._active == 0
    # Under a search that never ends, ingest waits at most its share of the time.
    priority = Priority(share=0.2, max_wait_seconds=0.1)
    with priority.interactive():
        started = time.monotonic()
        while time.monotonic() - started < 1.5:
            priority.yield_to_interactive()
            time.sleep(0.01)  # the import's work between checkpoints
        assert priority.yield_seconds < 0.2 * 1.5 + 0.1 + 0.05


def test_an_import_waits_for_a_running_search_stores_everything_and_is_counted(start_server):
    srv = start_server(ingest_yield_share=0.9)
    token = srv.login()
    lines = "\n".join(f'{{"@timestamp": {1_700_000_000_000 + i}, "user": "u{i}", "n": {i}}}' for i in range(600))
    replies: list[tuple[float, dict]] = []

    def send() -> None:
        t = time.monotonic()
        r = httpx.post(f"{srv.url}/api/import/app", content=lines.encode(), headers={"Servicetoken": token},
                       timeout=30)
        replies.append((time.monotonic() - t, r.json()))

    with srv.services.priority.interactive():  # a search in flight for the whole import
        thread = threading.Thread(target=send)
        thread.start()
        thread.join(30)
    (seconds, reply), = replies
    assert reply["response"]["stored"] == 600, reply
    # Checkpoints while parsing (every 32 lines) and before the log, each within the budget:
    # 0.25 s at first, then what 0.9 of the time since refilled.
    metrics = httpx.get(f"{srv.url}/metrics").text
    waited = next(float(line.split()[-1]) for line in metrics.splitlines()
                  if line.startswith("seclake_ingest_yield_seconds_total"))
    assert seconds >= waited >= 0.4
    # With no search running the same import does not wait.
    t = time.monotonic()
    assert httpx.post(f"{srv.url}/api/import/app", content=lines.encode(), headers={"Servicetoken": token},
                      timeout=30).json()["response"]["stored"] == 600
    assert time.monotonic() - t < waited
    srv.services.lake.flush()
    found = srv.call("ds/get_index_zoom_histogram_lv3", {"partition": "default", "options": {
        "dateFacetField": "@timestamp", "searchStr": "n:599", "fetchLimit": 5, "range_from": 0,
        "range_to": 2_000_000_000_000}}, token=token)
    assert found["hits"]["total"] == 2


def test_by_default_the_split_builders_run_at_a_lower_cpu_priority_than_the_server(services):
    """Under a full-speed import the two builders took both cores beside the searches: at niceness 10
    the kernel gives a search the CPU first (issue 45; docs/operations.md). Merges stay lower still."""
    assert services.settings.build_niceness == 10
    builder = services.lake.builder
    # os.nice(0) answers the calling process's niceness: here in a build worker, then in a merge worker.
    assert builder._run(os.nice, 0) == min(os.nice(0) + 10, 19)
    assert builder._run(os.nice, 0, kind=MERGE) == min(os.nice(0) + MERGE_NICENESS, 19)


def _matching_under_the_log_s_lock(srv, monkeypatch) -> list[bool]:
    """Whether the log's lock was held at each rule matching from now on."""
    from seclake.detect.ruleset import RuleSet

    lock = srv.services.lake.wal._lock
    under_lock: list[bool] = []
    matching = RuleSet.matching

    def spied(self, dataset, record):
        under_lock.append(lock.locked())
        return matching(self, dataset, record)

    monkeypatch.setattr(RuleSet, "matching", spied)
    return under_lock


def test_an_import_matches_its_rules_before_the_log_s_lock_and_detects_the_same(start_server, monkeypatch):
    # Nothing under the log's lock yields to a search: the rules' matching of a body the request
    # thread parses (a third of a full-speed import's time in the interpreter) happens before it.
    srv = start_server()
    token = srv.login()
    under_lock = _matching_under_the_log_s_lock(srv, monkeypatch)
    # Failed sshd logins of one user from two addresses: the starter pack's brute-force rules.
    lines = [f"<38>Nov 21 10:00:{i:02d} bastion sshd[41{i}]: Failed password for admin from 198.51.100.{i % 2 + 1} "
             f"port 4002{i} ssh2" for i in range(12)]
    r = httpx.post(f"{srv.url}/api/import/sshd", content="\n".join(lines).encode(),
                   headers={"Servicetoken": token, "Content-Type": "text/plain"}, timeout=30)
    assert r.status_code == 200 and r.json()["response"]["accepted"] == 12, r.text
    assert len(under_lock) == 12 and not any(under_lock)
    srv.services.lake.flush()
    found = srv.call("ds/fsm_behavior_search", {"options": {
        "range_from": 0, "range_to": 4_000_000_000_000, "range_field": "timestamp", "fetchLimit": 50}}, token=token)
    assert found["hits"]["total"] > 0, "the matches found before the lock made no behavior"


def test_a_bulk_body_read_here_matches_its_rules_before_the_log_s_lock(start_server, monkeypatch):
    srv = start_server()
    token = srv.login()
    under_lock = _matching_under_the_log_s_lock(srv, monkeypatch)
    body = "".join(f'{{"index":{{}}}}\n{{"message":"bulk {i}","tag":"early"}}\n' for i in range(20)).encode()
    r = httpx.post(f"{srv.url}/early/_bulk", content=body, timeout=30, headers={
        "Servicetoken": token, "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200 and r.json()["errors"] is False, r.text
    assert len(under_lock) == 20 and not any(under_lock)
    srv.services.lake.flush()
    found = srv.call("ds/get_index_zoom_histogram_lv3", {"partition": "default", "options": {
        "dateFacetField": "@timestamp", "searchStr": "tag:early", "fetchLimit": 5, "range_from": 0,
        "range_to": 4_000_000_000_000}}, token=token)
    assert found["hits"]["total"] == 20
