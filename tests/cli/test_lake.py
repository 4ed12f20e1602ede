"""seclake import, demo, retention and up: the lake from the shell."""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from seclake.db.database import Database
from seclake.storage.lake import Lake
from tests.cli.command import run

DAY = 86_400_000


def _records(data_dir, datasets=("event", "flow")) -> list[dict]:
    db = Database(f"sqlite:///{data_dir / 'seclake.db'}")
    lake = Lake(data_dir, db)
    lake.start(background=False)
    try:
        return [r.source for ds in datasets for s in lake.splits(ds) for r in s.all_records()]
    finally:
        lake.stop()
        db.dispose()


@pytest.fixture(params=["0", "2"], ids=["parsed-in-the-command", "parsed-in-workers"])
def parse_workers(request, monkeypatch):
    """An import test runs twice: its files parsed in the command's process, and in parse workers
    (the default from four cores: ``Settings.effective_parse_workers``)."""
    monkeypatch.setenv("SECLAKE_PARSE_WORKERS", request.param)
    return int(request.param)


def test_import_counts_lines_and_reads_gzip(tmp_path, parse_workers):
    plain = tmp_path / "auth.log"
    plain.write_text(
        "<38>Nov 21 10:00:01 bastion sshd[411]: Failed password for invalid user admin from 203.0.113.7 port 51234 ssh2\n"
        "not a log line anyone can parse\n"
        '{"@fields": 5}\n'
    )
    packed = tmp_path / "fw.log.gz"
    packed.write_bytes(gzip.compress(b"srcip=10.0.0.1 dstip=10.0.0.2 action=deny\n" * 4))
    data = tmp_path / "data"
    result = run("import", str(plain), str(packed), "--vendor", "mixed", "--customer", "acme", "--data-dir", str(data))
    assert "accepted 5, kept raw 1, rejected 1" in result.output
    assert "auth.log: line 3" in result.output  # the rejected line, with where
    assert result.exit_code == 3  # some lines were rejected
    records = _records(data)
    assert len(records) == 6
    assert {r["@source"] for r in records} == {"mixed"} and {r["@customer"] for r in records} == {"acme"}


def test_a_gzip_file_cut_short_stores_the_batches_read_before_the_cut_and_says_where(tmp_path, parse_workers):
    packed = gzip.compress(b"".join(b"srcip=10.0.0.%d dstip=10.0.0.2 action=deny\n" % (i % 250) for i in range(20_000)))
    cut = tmp_path / "fw.log.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    data = tmp_path / "data"
    result = run("import", str(cut), "--vendor", "fortigate", "--data-dir", str(data))
    assert result.exit_code == 1 and "error: body: gzip data ends early, after " in result.output, result.output
    # Whole batches of the lines before the cut (5,000 records each), whoever parsed them; not the part after.
    assert len(_records(data)) == 5000


def test_import_of_flows_and_a_bad_type(tmp_path):
    f = tmp_path / "flows.jsonl"
    f.write_text(json.dumps({"@timestamp": 1_700_000_000_000, "@type": "flow", "@fields": {"sip": "10.0.0.1", "dp": 22}}) + "\n")
    data = tmp_path / "data"
    assert run("import", str(f), "--type", "flow", "--data-dir", str(data)).exit_code == 0
    assert _records(data)[0]["@type"] == "flow"
    bad = run("import", str(f), "--type", "alert", "--data-dir", str(data))
    # Checked before the lake opens: a usage error, nothing stored.
    assert bad.exit_code == 2 and "type: must be event or flow, not 'alert'" in bad.output, bad.output


def test_one_import_takes_a_manifest_of_sources_each_with_its_vendor_type_and_customer(tmp_path, parse_workers):
    archive = tmp_path / "archive"
    (archive / "fw").mkdir(parents=True)
    (archive / "fw" / "edge.log.gz").write_bytes(gzip.compress(b"srcip=10.0.0.1 dstip=10.0.0.2 action=deny\n" * 3))
    (archive / "auth.log").write_text(
        "<38>Nov 21 10:00:01 bastion sshd[411]: Failed password for root from 203.0.113.7 port 1 ssh2\n"
    )
    flows = tmp_path / "flows.jsonl"
    flows.write_text(json.dumps({"@timestamp": 1_700_000_000_000, "@fields": {"sip": "10.0.0.1", "dp": 22}}) + "\n")
    manifest = archive / "sources.csv"
    # Relative paths are the manifest's; an empty cell takes the option; blank rows are skipped.
    manifest.write_text(
        "path,vendor,type,customer\n"
        "fw/edge.log.gz,fortigate,,acme\n"
        "\n"
        "auth.log,linux,event,\n"
        f"{flows},netlab,flow,globex\n"
    )
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({"@timestamp": 1_700_000_000_000, "msg": "from the command line"}) + "\n")
    data = tmp_path / "data"
    result = run("import", str(extra), "--manifest", str(manifest), "--vendor", "misc", "--customer", "initech",
                 "--data-dir", str(data))
    assert result.exit_code == 0, result.output
    assert "accepted 6, kept raw 0, rejected 0" in result.output
    got = sorted((r["@type"], r["@source"], r["@customer"]) for r in _records(data))
    assert got == [
        ("event", "fortigate", "acme"), ("event", "fortigate", "acme"), ("event", "fortigate", "acme"),
        ("event", "linux", "initech"), ("event", "misc", "initech"), ("flow", "netlab", "globex"),
    ]


def test_import_on_a_node_that_does_not_ingest_says_where_to_send_it(tmp_path):
    f = tmp_path / "auth.log"
    f.write_text("<38>Nov 21 10:00:01 bastion sshd[411]: Failed password for root from 203.0.113.7 port 1 ssh2\n")
    result = run("import", str(f), "--data-dir", str(tmp_path / "data"), env={"SECLAKE_INGEST": "false"})
    assert result.exit_code == 1, result.output
    assert "error: this API node does not ingest (setting ingest = false)" in result.output


def test_import_with_a_run_key_stores_each_batch_once(tmp_path, monkeypatch, parse_workers):
    from seclake.service import ingestion

    monkeypatch.setattr(ingestion, "BATCH", 3)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"@timestamp": 1_700_000_000_000, "@fields": {"n": n}}) + "\n" for n in range(7)))
    b.write_text(json.dumps({"@timestamp": 1_700_000_000_000, "@fields": {"n": 100}}) + "\n")
    data = tmp_path / "data"
    first = run("import", str(a), "--idempotency-key", "run-1", "--data-dir", str(data))
    assert first.exit_code == 0, first.output
    assert "earlier run" not in first.output
    # Run again (as after a crash), with one more file: only the new file is stored.
    again = run("import", str(a), str(b), "--idempotency-key", "run-1", "--data-dir", str(data))
    assert again.exit_code == 0, again.output
    assert "accepted 8, kept raw 0, rejected 0" in again.output
    assert "7 of them were stored by an earlier run with this key" in again.output
    assert sorted(r["@fields"]["n"] for r in _records(data)) == [*range(7), 100]
    bad = run("import", str(a), "--idempotency-key", "no spaces", "--data-dir", str(data))
    assert bad.exit_code == 2 and "--idempotency-key: must be 1 to 255 characters" in bad.output


def test_an_import_runs_the_rules_on_its_records_whoever_parses_them(tmp_path, parse_workers, monkeypatch):
    from seclake.service import ingestion

    # Parts of 40 lines: the file goes to the workers in several parts, stored in order.
    monkeypatch.setattr(ingestion, "BATCH", 40)
    log = tmp_path / "auth.log"
    # 12 failed logins from one address within a minute, then noise: brute-force-source (10 in 5 minutes).
    lines = [f"<38>Nov 21 10:00:{n:02d} bastion sshd[411]: Failed password for u{n} from 203.0.113.7 port 1 ssh2"
             for n in range(12)]
    lines += [f"<38>Nov 21 10:01:{n % 60:02d} bastion sshd[411]: Accepted password for ops from 198.51.100.{n % 250} "
              f"port 2 ssh2" for n in range(200)]
    log.write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    result = run("import", str(log), "--vendor", "linux", "--data-dir", str(data))
    assert result.exit_code == 0 and "accepted 212, kept raw 0, rejected 0" in result.output, result.output
    behaviors = [b for b in _records(data, ("behavior",)) if b["behaviorRule"] == "brute-force-source"]
    # One, from the tenth failure (its user), whose count crossed the threshold in the log's order.
    assert [(b["key"], {a["key"]: a["value"] for a in b["attributes"]}["user.name"]) for b in behaviors] == [
        ("203.0.113.7", "u9")]


def test_demo_then_retention(tmp_path):
    data = tmp_path / "data"
    result = run("demo", "--days", "2", "--data-dir", str(data))
    assert result.exit_code == 0, result.output
    assert "rejected 0" in result.output
    records = _records(data)
    assert len(records) > 5000
    assert {r["@type"] for r in records} == {"event", "flow"}
    assert any("mimikatz" in r["@message"] for r in records)
    # Nothing is older than 3 days: retention at 3 days keeps everything, at 1 day drops whole old splits.
    assert "deleted 0 splits" in run("retention", "--days", "3", "--data-dir", str(data)).output
    kept = run("retention", "--days", "1", "--data-dir", str(data))
    assert kept.exit_code == 0 and "deleted" in kept.output
    now = time.time() * 1000
    assert all(r["@timestamp"] >= now - 3 * DAY for r in _records(data))


def test_a_running_server_keeps_the_lake_to_itself(tmp_path):
    data = tmp_path / "data"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, SECLAKE_ADMIN_PASSWORD="admin-test-password", SECLAKE_DEMO_DAYS="1")
    proc = subprocess.Popen([sys.executable, "-m", "seclake", "up", "--port", str(port), "--data-dir", str(data)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []  # its output as it comes
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 90
        token = None
        while token is None:
            assert proc.poll() is None, "".join(lines)
            try:
                r = httpx.post(f"http://127.0.0.1:{port}/api/auth/login",
                               json={"kargs": {"username": "admin", "password": "admin-test-password"}}, timeout=5)
                token = r.json()["response"]["sessionToken"]
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        # `seclake up` loaded demo data before it started answering.
        res = httpx.post(f"http://127.0.0.1:{port}/api/ds/get_index_zoom_histogram_lv3", headers={"Servicetoken": token},
                         json={"kargs": {"partition": "default", "options": {"dateFacetField": "@timestamp", "fetchLimit": 1}}}).json()
        assert res["response"]["hits"]["total"] > 1000
        busy = run("retention", "--days", "1", "--data-dir", str(data))
        assert busy.exit_code == 1 and "in use by process" in busy.output
        # It says when it is ready (every acknowledged record searchable), soon
        # after it is; stopped before that, it never would.
        while not any("seclake is ready" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(timeout=10)
    assert "seclake is ready" in "".join(lines)


def test_the_installed_seclake_script_imports_through_its_build_workers(tmp_path):
    # The script as pip installs it (its entry point seclake.__main__:run),
    # run as a user runs it: enough lines that the split is built in a
    # spawned worker process, which imports the script first.
    script = os.path.join(os.path.dirname(sys.executable), "seclake")
    lines = [f"<38>Nov 21 10:{i // 60 % 60:02d}:{i % 60:02d} bastion sshd[{400 + i}]: Failed password for invalid "
             f"user u{i % 7} from 203.0.113.{i % 250} port {40000 + i} ssh2" for i in range(1200)]
    log = tmp_path / "auth.log"
    log.write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    done = subprocess.run([script, "import", str(log), "--vendor", "sshd", "--customer", "acme", "--data-dir",
                           str(data)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SECLAKE_ADMIN_PASSWORD": "admin-test-password"})
    assert done.returncode == 0, done.stderr
    assert "accepted 1200, kept raw 0, rejected 0" in done.stdout
    records = _records(data)
    assert len(records) == 1200 and {r["@fields"]["event"]["outcome"] for r in records} == {"failure"}
    bad = subprocess.run([script, "import", str(log), "--vendor", "../etc", "--data-dir", str(data)],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "SECLAKE_ADMIN_PASSWORD": "admin-test-password"})
    assert bad.returncode == 2 and "vendor" in bad.stderr


def test_lake_check_lists_log_damage_and_acknowledge_damage_clears_it_by_id(tmp_path):
    from seclake.storage.wal import FORMAT_LINE, WriteAheadLog  # noqa: PLC0415

    data = tmp_path / "data"
    assert run("lake", "check", "--data-dir", str(data)).output == "no damage found in the write-ahead log\n"
    log_dir = data / "lake" / "wal"
    wal = WriteAheadLog(log_dir, segment_bytes=200)
    wal.open(0)
    for i in range(6):
        wal.append([("event", {"n": i, "pad": "z" * 40})])
    wal.close()
    first, second, *_ = sorted(log_dir.glob("*.wal"))
    for seg in (first, second):
        raw = bytearray(seg.read_bytes())
        raw[2] ^= 0x5A
        seg.write_bytes(bytes(raw))
    wal.open(0)  # what a start does: finds it, keeps it in the ledger
    wal.close()
    listed = run("lake", "check", "--data-dir", str(data))
    assert listed.exit_code == 1 and "2 not acknowledged" in listed.output, listed.output
    assert f"{first.name}@0" in listed.output and "damaged format line at offset 0" in listed.output
    assert f"{len(FORMAT_LINE)} bytes quarantined to {first.name}.damaged-0, no record lost" in listed.output
    unknown = run("lake", "acknowledge-damage", "nope@1", "--data-dir", str(data))
    assert unknown.exit_code == 2 and "no log damage with the id nope@1" in unknown.output
    one = run("lake", "acknowledge-damage", f"{first.name}@0", "--data-dir", str(data))
    assert one.exit_code == 0 and one.output == f"acknowledged 1: {first.name}@0\n"
    assert "1 not acknowledged" in run("lake", "check", "--data-dir", str(data)).output
    assert run("lake", "acknowledge-damage", "--data-dir", str(data)).output == f"acknowledged 1: {second.name}@0\n"
    done = run("lake", "check", "--data-dir", str(data))
    assert done.exit_code == 0 and done.output.endswith("all acknowledged\n")
