"""ds/collector_list's inventory over HTTP: every source of the demo data is
listed from the lake with its last event, events per minute and parse errors,
the same after a restart (no counter of the node's memory), and within the
caller's data policy."""

from __future__ import annotations

import time

import pytest

from seclake.service.demo import load_demo
from tests.conftest import running_server

pytestmark = pytest.mark.slow

CALL = "ds/collector_list"
# The demo generator's sources (seclake/demo/generator.py), and their datasets.
DEMO = {"fortigate": "event", "bind": "event", "squid": "event", "windows": "event", "edr": "event",
        "okta": "event", "sshd": "event", "suricata": "event", "netflow": "flow"}
JUNK = ["this line is no log format at all", '{"a broken": json line', "key=value understood=yes"]


def _count(srv, token, dataset, query, range_from, range_to):
    res = srv.call("ds/get_index_zoom_histogram_lv3", {"partition": "default", "dataType": dataset, "options": {
        "searchStr": query, "range_from": range_from, "range_to": range_to, "fetchLimit": 1,
        "sortField": "@timestamp", "sortOrder": "desc", "dateFacetField": "@timestamp", "facets": {}}}, token)
    hits = res["hits"]["hits"]
    return res["hits"]["total"], (hits[0]["_source"]["@timestamp"] if hits else None)


def test_every_demo_source_is_listed_from_the_lake_and_stays_after_a_restart(tmp_path):
    now = int(time.time() * 1000)
    with running_server(tmp_path, commit_interval_seconds=0.2) as srv:
        load_demo(srv.services.ingestion, days=1, end_ms=now)
        token = srv.login()
        r = srv.http.post("/api/import/junk", content="\n".join(JUNK).encode(), headers={"Servicetoken": token})
        assert r.json()["response"]["raw"] == 2, r.text
        srv.services.lake.flush()
        asked = int(time.time() * 1000)
        before = srv.call(CALL, {}, token)
        answered = int(time.time() * 1000)
        rows = {row["source"]: row for row in before["inventory"]}
        assert set(DEMO) | {"junk"} == set(rows), sorted(rows)
        assert before["recentMinutes"] == 60
        for source, dataset in DEMO.items():
            row = rows[source]
            total, newest = _count(srv, token, dataset, f"@source:{source}", 0, now + 3_600_000)
            # The last hour is the server's, ending when it answered: between the two searches'.
            most, _ = _count(srv, token, dataset, f"@source:{source}", asked - 3_600_000, now)
            least, _ = _count(srv, token, dataset, f"@source:{source}", answered - 3_600_000, now)
            assert row["dataType"] == dataset and row["receivedBy"] == "import"
            # The figures are the lake's: what a search of the source finds.
            assert row["records"] == total > 0, (source, row, total)
            # Within the day loaded (a sparse source, sshd at night, may have said nothing for hours).
            assert row["lastSeen"] == newest and now - 86_400_000 < newest <= now, (source, row)
            assert least / 60 - 0.01 <= row["eventsPerMinute"] <= most / 60 + 0.01, (source, row, least, most)
            assert row["parseErrors"] == 0, row
        assert sum(r["eventsPerMinute"] for r in before["inventory"]) > 0, "no source sent in the last hour"
        # What a source says it is, from its records.
        assert "FortiGate" in rows["fortigate"]["describes"] and "Okta" in rows["okta"]["describes"]
        # Lines no parser understood are kept raw and counted as parse errors of their source.
        assert rows["junk"]["records"] == 3 and rows["junk"]["parseErrors"] == 2
        # Newest first.
        seen = [r["lastSeen"] for r in before["inventory"]]
        assert seen == sorted(seen, reverse=True)
        # An analyst whose policy shows one customer's events sees only those sources and counts.
        srv.call("auth/dataPolicyAdd", {"policy": {"name": "only-sshd", "filters": {"event": "@source:sshd"}}}, token)
        srv.call("auth/userAdd", {"user": {"username": "narrow", "password": "user-password-1", "roles": ["analyst"],
                                           "dataPolicies": ["only-sshd"]}}, token)
        narrow = srv.call(CALL, {}, srv.login("narrow", "user-password-1"))
        assert [(r["source"], r["records"]) for r in narrow["inventory"]] == [("sshd", rows["sshd"]["records"])]
    # After a restart the same sources and figures: they come from the lake, not the node's memory.
    with running_server(tmp_path, commit_interval_seconds=0.2) as srv:
        after = srv.call(CALL, {}, srv.login())
        strip = [{k: v for k, v in r.items() if k != "eventsPerMinute"} for r in before["inventory"]]
        assert [{k: v for k, v in r.items() if k != "eventsPerMinute"} for r in after["inventory"]] == strip
