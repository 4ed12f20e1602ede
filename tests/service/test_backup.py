"""``seclake backup`` of a running deployment, restored: the same answers."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.api.test_durability import ROOT

DAY = 86_400_000
T0 = 1_763_683_200_000  # 2025-11-21


def _lines(n: int, start: int, tag: str) -> bytes:
    out = []
    for i in range(start, start + n):
        ts = time.strftime("%b %d %H:%M:%S", time.gmtime((T0 + i * 60_000) / 1000))
        who = "root" if i % 3 == 0 else f"user{i % 5}"
        out.append(f"<38>{ts} host{i % 4} sshd[{i}]: Accepted password for {who} from 203.0.113.{i % 50} port {40000 + i} ssh2 {tag}")
    return "\n".join(out).encode()


def _answers(server, token) -> dict:
    """What a user of the deployment sees: records (ids included), facets, the timeline, summaries, users, rules."""
    kargs = {"partition": "default", "dataType": "event",
             "options": {"dateFacetField": "@timestamp", "searchStr": "*", "fetchLimit": 500, "fetchOffset": 0,
                         "range_from": 0, "range_to": 4_102_444_800_000,
                         "facets": {"facets": [{"field": "@sender", "size": 10}]}}}
    events = server.call("ds/get_index_zoom_histogram_lv3", kargs, token)
    timeline = server.call("ds/fsm_behavior_search", {"options": {
        "searchStr": "*", "fetchLimit": 500, "range_from": 0, "range_to": 4_102_444_800_000}}, token)
    summaries = server.call("ds/behavior_summary_search", {"options": {"fetchLimit": 500}}, token)
    return {
        "total": events["hits"]["total"],
        "ids": [(h["_id"], h["docId"], h["_source"]["@message"]) for h in events["hits"]["hits"]],
        "facets": events.get("aggregations"),
        "timeline": sorted((h["_id"], h["_source"]["behaviorRule"], h["_source"]["key"]) for h in timeline["hits"]["hits"]),
        "summaries": sorted((h["_id"], h["_source"]["riskScore"]) for h in summaries["hits"]["hits"]),
        "users": sorted(u["username"] for u in server.call("auth/userList", {}, token)["users"]),
        "rules": server.call("ds/eventwatch_bucket_search", {"options": {"fetchLimit": 100}}, token)["hits"]["total"],
    }


def _backup(src, dest) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seclake", "backup", str(dest), "--data-dir", str(src)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_a_backup_taken_while_the_server_runs_answers_the_same_searches(tmp_path, start_server):
    src, dest = tmp_path / "live", tmp_path / "copy"
    server = start_server(src)
    token = server.login()
    server.add_user(token, "analyst7", ["analyst"])
    headers = {"Servicetoken": token, "Content-Type": "text/plain"}
    for batch in range(3):
        assert server.http.post("/api/import/sshd", content=_lines(40, batch * 40, f"b{batch}"), headers=headers).status_code == 200
    # Searchable, so these records are in splits ...
    server.services.lake.flush()
    assert _answers(server, token)["total"] == 120
    # ... and the last import is in the log only when the copy is taken: the
    # indexer is held behind (its own lock) while it is imported and copied.
    with server.services.lake.flusher.lock:
        assert server.http.post("/api/import/sshd", content=_lines(30, 120, "b3"), headers=headers).status_code == 200
        done = _backup(src, dest)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "backed up to" in done.stdout
        assert _answers(server, token)["total"] == 120, "the last import was not indexed during the backup"
    server.services.lake.flush()
    assert _answers(server, token)["total"] == 150
    server.services.detector.save()  # summaries are folded when the detector saves (periodically)
    expected = _answers(server, token)
    assert expected["timeline"] and expected["summaries"], "the data made behaviors and summaries"
    server.stop()

    restored = start_server(dest)
    deadline = time.monotonic() + 20
    while restored.http.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert _answers(restored, restored.login()) == expected
    # The copy is a deployment of its own: it takes imports.
    r = restored.http.post("/api/import/sshd", content=_lines(1, 500, "after"),
                           headers={"Servicetoken": restored.login(), "Content-Type": "text/plain"})
    assert r.status_code == 200, r.text


def test_a_backup_never_writes_into_a_directory_that_holds_something(tmp_path, start_server):
    server = start_server(tmp_path / "live")
    dest = tmp_path / "busy"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    done = _backup(server.settings.data_dir, dest)
    assert done.returncode == 2 and "not empty" in done.stderr
    assert [p.name for p in dest.iterdir()] == ["keep.txt"]
