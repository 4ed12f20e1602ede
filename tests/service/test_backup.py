"""``seclake backup`` of a running deployment, restored: the same answers."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.api.test_durability import ROOT
from tests.conftest import running_server

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


# -- a tampered copy never reaches outside its data dir (issue 39, finding 1) --


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A backup of a deployment with two splits, taken once: each test tampers a copy of it."""
    base = tmp_path_factory.mktemp("pristine")
    with running_server(base / "live") as server:
        headers = {"Servicetoken": server.login(), "Content-Type": "text/plain"}
        for batch in range(2):
            r = server.http.post("/api/import/sshd", content=_lines(20, batch * 20, f"b{batch}"), headers=headers)
            assert r.status_code == 200, r.text
            server.services.lake.flush()
        done = _backup(server.settings.data_dir, base / "copy")
        assert done.returncode == 0, done.stdout + done.stderr
    return base / "copy"


def _tampered(pristine: Path, tmp_path: Path, split_id: str, state: str = "marked") -> tuple[Path, Path, str]:
    """A copy of the backup whose catalog renames one split ``split_id``
    (in ``state``), and a victim directory with a file, outside the copy."""
    copy = tmp_path / "work" / "copy"
    shutil.copytree(pristine, copy, symlinks=True)
    victim = copy.parent / "victim"  # where ../../../../victim leads from lake/splits/event
    victim.mkdir()
    (victim / "precious.txt").write_text("not seclake's")
    with sqlite3.connect(copy / "seclake.db") as db:
        (old,) = db.execute("SELECT split_id FROM splits WHERE state = 'published' AND dataset = 'event' ORDER BY split_id LIMIT 1").fetchone()
        db.execute("UPDATE splits SET split_id = ?, state = ?, time_max = 0 WHERE split_id = ?", (split_id, state, old))
    return copy, victim, old


def _seclake(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seclake", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def _splits_of(copy: Path) -> list[str]:
    return sorted(p.name for p in (copy / "lake" / "splits" / "event").iterdir())


# Names a tampered catalog might give a split: `{victim}` is the victim's absolute path.
HOSTILE_IDS = {
    "traversal": "../../../../victim",
    "absolute": "{victim}",
    "parent": "..",
    "dot": ".",
    "empty": "",
    "nul": "event-20251121-0123456789ab\0/../../../../../victim",
    "backslash": "..\\..\\..\\..\\victim",
    "long": "event-20251121-" + "0" * 300,
    "other dataset's form": "flow-20251121-0123456789ab",
    "id with a path in it": "event-20251121-0123456789ab/../../../../../victim",
}


@pytest.mark.parametrize("name", list(HOSTILE_IDS))
def test_a_backup_whose_catalog_names_a_path_is_refused_and_nothing_outside_is_deleted(pristine, tmp_path, name):
    copy, victim, old = _tampered(pristine, tmp_path, HOSTILE_IDS[name].format(victim=tmp_path / "work" / "victim"))
    before = _splits_of(copy)
    # A marked row's directory is deleted by the next start: the restored
    # lake's first command is where the victim went.
    done = _seclake("retention", "--days", "1", "--data-dir", str(copy))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "table splits" in done.stderr and "seclake never writes" in done.stderr, done.stderr
    assert "nothing was opened or deleted" in done.stderr
    assert "Traceback" not in done.stderr
    assert (victim / "precious.txt").read_text() == "not seclake's"
    assert _splits_of(copy) == before, "a refused start removes nothing of the lake either"


def test_retention_on_a_restored_backup_naming_a_split_outside_the_data_dir_deletes_nothing(pristine, tmp_path):
    """The issue's case: a published row named ``../../../../victim``, retention, then a start."""
    copy, victim, _ = _tampered(pristine, tmp_path, "../../../../victim", state="published")
    for _ in range(2):  # retention marks it; the next start would delete a marked split's directory
        done = _seclake("retention", "--days", "1", "--data-dir", str(copy))
        assert done.returncode == 1, done.stdout + done.stderr
        assert "split id '../../../../victim' is not of the form <dataset>-<day>-<12 hex digits>" in done.stderr
    assert (victim / "precious.txt").exists()


def test_a_server_refuses_to_start_on_a_tampered_backup_and_says_what_is_wrong(pristine, tmp_path):
    copy, victim, _ = _tampered(pristine, tmp_path, "../../../../victim", state="published")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = subprocess.run([sys.executable, "-m", "seclake", "serve", "--data-dir", str(copy), "--port", str(port)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "SECLAKE_ADMIN_PASSWORD": "Correct-Horse-9"})
    assert done.returncode == 3, done.stderr  # uvicorn: the application did not start
    assert "table splits, a published row: split id '../../../../victim'" in done.stderr, done.stderr
    assert (victim / "precious.txt").exists()


def test_a_dataset_directory_linked_out_of_the_lake_has_nothing_deleted_through_it(pristine, tmp_path):
    """Symbolic links in a restored data dir: ``lake/splits/flow`` leads to the victim, whose
    directories a catalog row (well formed) and the start's sweep of unpublished directories name."""
    copy, victim, _ = _tampered(pristine, tmp_path, "flow-20251121-0123456789ab", state="marked")
    with sqlite3.connect(copy / "seclake.db") as db:
        db.execute("UPDATE splits SET dataset = 'flow' WHERE split_id = 'flow-20251121-0123456789ab'")
    for d in ("flow-20251121-0123456789ab", "photos"):
        (victim / d).mkdir()
        (victim / d / "precious.txt").write_text("not seclake's")
    flows = copy / "lake" / "splits" / "flow"
    shutil.rmtree(flows, ignore_errors=True)
    flows.symlink_to(victim, target_is_directory=True)
    done = _seclake("retention", "--days", "1", "--data-dir", str(copy))
    assert sorted(p.relative_to(victim).as_posix() for p in victim.rglob("*")) == [
        "flow-20251121-0123456789ab", "flow-20251121-0123456789ab/precious.txt",
        "photos", "photos/precious.txt", "precious.txt"]
    assert "outside" in done.stderr and "flow-20251121-0123456789ab" in done.stderr, done.stderr


def test_a_backup_never_copies_what_a_split_directory_links_to(pristine, tmp_path):
    copy, victim, old = _tampered(pristine, tmp_path, "event-20251121-0123456789ab", state="published")
    (victim / "split.json").write_text("{}")
    (copy / "lake" / "splits" / "event" / "event-20251121-0123456789ab").symlink_to(victim, target_is_directory=True)
    done = _seclake("backup", str(tmp_path / "again"), "--data-dir", str(copy))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "event-20251121-0123456789ab" in done.stderr and "outside" in done.stderr, done.stderr
    assert not list((tmp_path / "again").rglob("precious.txt"))


def test_a_split_s_analytics_columns_are_not_copied_and_a_link_in_their_place_is_refused(pristine, tmp_path):
    """``columns/`` (storage/columns.py) is computed again by the first query that reads it."""
    copy = tmp_path / "work" / "copy"
    shutil.copytree(pristine, copy, symlinks=True)
    split = sorted((copy / "lake" / "splits" / "event").iterdir())[0]
    (split / "columns").mkdir()
    (split / "columns" / "docids.npy").write_bytes(b"x")
    done = _seclake("backup", str(tmp_path / "again"), "--data-dir", str(copy))
    assert done.returncode == 0, done.stdout + done.stderr
    again = tmp_path / "again" / "lake" / "splits" / "event" / split.name
    assert (again / "split.json").exists() and not (again / "columns").exists()
    shutil.rmtree(split / "columns")
    (split / "columns").symlink_to(tmp_path, target_is_directory=True)
    # In process (the command's start is ~2 s): the same function the command runs.
    from seclake.service.backup import BackupRefused, backup
    from seclake.settings import load_settings

    with pytest.raises(BackupRefused, match="not a plain file"):
        backup(load_settings(data_dir=copy), tmp_path / "third")


def test_a_backup_of_a_data_dir_whose_catalog_was_altered_is_refused(pristine, tmp_path):
    copy, victim, _ = _tampered(pristine, tmp_path, "../../../../victim", state="published")
    done = _seclake("backup", str(tmp_path / "again"), "--data-dir", str(copy))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "table splits, a published row: split id '../../../../victim'" in done.stderr
    assert not (tmp_path / "again" / "lake" / "splits" / "victim").exists()
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
