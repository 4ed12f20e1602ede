"""What a node says about itself: a damaged log is served from, and named until acknowledged."""

from __future__ import annotations

from pathlib import Path

from seclake.db.database import Database
from seclake.storage.lake import Lake
from seclake.storage.wal import FORMAT_LINE, HEADER
from tests.api.test_health import _search, sample, scrape
from tests.cli.command import run

DAY0 = 1_763_683_200_000  # 2025-11-21T00:00:00Z


def _logged_only(data: Path, count: int) -> None:
    """``count`` records acknowledged into the log of ``data``'s lake over several
    segments, none of them indexed yet: what a crash under ingest leaves."""
    db = Database(f"sqlite:///{data / 'seclake.db'}")
    lake = Lake(data, db)
    lake.start(background=False)
    lake.wal.segment_bytes = 1500
    for i in range(count):
        lake.append([("event", {"@timestamp": DAY0 + i, "@message": f"walsalvage n{i}", "@fields": {"n": i}})])
    lake.abandon()
    db.dispose()


def _last_entry(path: Path) -> int:
    data = path.read_bytes()
    pos = last = len(FORMAT_LINE)
    while pos < len(data):
        last = pos
        pos += HEADER.size + HEADER.unpack_from(data, pos)[0]
    return last


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x5A
    path.write_bytes(bytes(data))


def test_a_damaged_log_is_served_from_and_named_until_an_operator_acknowledges_it(start_server, tmp_path):
    data = tmp_path / "data"
    start_server(data).stop()  # the deployment: database, admin
    _logged_only(data, 40)
    segments = sorted((data / "lake" / "wal").glob("*.wal"))
    assert len(segments) >= 3
    # One flipped byte in a closed segment's format line (it used to stop the
    # start), one in the last acknowledged entry's payload (reported as a
    # harmless torn tail).
    _flip(segments[1], 4)
    _flip(segments[-1], _last_entry(segments[-1]) + 20)

    server = start_server(data)
    token = server.login()
    # Up to seq 39: the 40th is the damaged entry, never indexed (waiting for it took the whole 30 s).
    assert server.services.lake.wait_indexed(39, timeout=30)
    found = _search(server, token, "walsalvage")
    assert found["hits"]["total"] == 39  # every intact record; the damaged last one is named lost
    quarantined = sorted(p.name for p in (data / "lake" / "wal").iterdir() if ".damaged-" in p.name)
    assert quarantined == [f"{segments[1].name}.damaged-0", f"{segments[-1].name}.damaged-{_last_entry(segments[-1])}"]

    ready = server.http.get("/readyz")
    assert ready.status_code == 200, ready.text  # it serves: the damage is told, not a failed check
    [check] = [c for c in ready.json()["checks"] if c["name"] == "log_damage"]
    assert check["ok"] and "2 damaged ranges" in check["detail"] and segments[1].name in check["detail"]
    alive = server.http.get("/healthz").json()
    assert alive["status"] == "alive"
    assert [d["segment"] for d in alive["log_damage"]] == [segments[1].name, segments[-1].name]
    assert "records between seq 40 and 40 lost" in alive["log_damage"][1]["message"]
    assert sample(scrape(server), "seclake_log_damage_unacknowledged") == 2

    # Still named after a restart: what an operator has not seen yet stays in view.
    server.stop()
    server = start_server(data)
    assert sample(scrape(server), "seclake_log_damage_unacknowledged") == 2

    listed = run("lake", "check", "--data-dir", str(data))
    assert listed.exit_code == 1, listed.output
    assert segments[1].name in listed.output and "records between seq 40 and 40 lost" in listed.output
    acknowledged = run("lake", "acknowledge-damage", "--data-dir", str(data))  # with the server running
    assert acknowledged.exit_code == 0 and "acknowledged 2" in acknowledged.output, acknowledged.output
    assert server.http.get("/healthz").json() == {"status": "alive"}
    [check] = [c for c in server.http.get("/readyz").json()["checks"] if c["name"] == "log_damage"]
    assert check["ok"] and check["detail"] == "no unacknowledged damage in the write-ahead log"
    assert sample(scrape(server), "seclake_log_damage_unacknowledged") == 0
    after = run("lake", "check", "--data-dir", str(data))
    assert after.exit_code == 0 and "acknowledged" in after.output, after.output
