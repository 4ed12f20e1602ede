"""``seclake serve --standby``: a second ingest node on the same data dir waits, then takes over.

Two real server processes on one data dir (embedded mode: the SQLite
database lives there too; in a cluster it would be PostgreSQL and a shared
filesystem). The standby does not listen while the first runs; when the
first is SIGKILLed it takes the lake, replays the log, and serves every
record the first acknowledged.
"""

from __future__ import annotations

import json
import subprocess
import time

import httpx
import pytest

from tests.cluster.apinodes import ApiNode, wait_for


def _lines(now: int, n: int, tag: str) -> list[str]:
    return [json.dumps({"@timestamp": now - i, "@message": "m", "@fields": {"tag": tag, "n": i}}) for i in range(n)]


@pytest.mark.slow
def test_a_standby_waits_without_listening_then_takes_over_with_every_acknowledged_record(tmp_path):
    settings = {"SECLAKE_DATA_DIR": str(tmp_path / "data"), "SECLAKE_COMMIT_INTERVAL_SECONDS": "0.2"}
    now = int(time.time() * 1000)
    since = now - 3_600_000
    nodes = []
    try:
        first = ApiNode("first", tmp_path, settings)
        nodes.append(first)
        first.wait()
        first.login()
        for b in range(3):
            r = first.import_lines(_lines(now - b * 1000, 200, f"b{b}"))
            assert r.status_code == 200 and r.json()["response"]["accepted"] == 200, r.text

        standby = ApiNode("standby", tmp_path, settings, "--standby")
        nodes.append(standby)
        wait_for("the standby waiting", lambda: "standby: waiting" in standby.tail(), 60)
        time.sleep(1.0)
        assert standby.proc.poll() is None
        with pytest.raises(httpx.ConnectError):
            standby.http.get("/", timeout=2)

        # The writer dies (what its log holds past its last split is replayed, as after
        # any crash: tests/api/test_durability.py): the standby takes over.
        first.kill()
        standby.wait(120)
        standby.login()
        wait_for("every acknowledged record searchable on the standby",
                 lambda: standby.events("*", since=since)["hits"]["total"] == 600, 60)
        for b in range(3):
            assert standby.events(f"tag:b{b}", since=since)["hits"]["total"] == 200
        # And it is the writer now.
        r = standby.import_lines(_lines(now, 50, "after"))
        assert r.status_code == 200 and r.json()["response"]["accepted"] == 50, r.text
        wait_for("imports after the takeover searchable", lambda: standby.events("tag:after", since=since)["hits"]["total"] == 50, 30)
    finally:
        for node in nodes:
            node.stop()


def test_a_standby_must_be_an_ingest_node(tmp_path):
    from tests.cluster.raycluster import BIN, env

    e = env()
    e["SECLAKE_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run([str(BIN / "seclake"), "serve", "--standby", "--no-ingest"], env=e,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--standby is for an ingest node" in done.stderr
