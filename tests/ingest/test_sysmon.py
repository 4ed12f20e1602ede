"""Sysmon events from Winlogbeat and NXLog: the same common names from either shipper, the event's own
fields kept as sent, and both found by one query on a real server (Winlogbeat through the Elasticsearch
bulk API it ships with, NXLog through /api/import). Golden records: fixtures/sysmon.{txt,json}."""

from __future__ import annotations

import json
import time
from pathlib import Path

from elasticsearch import Elasticsearch, helpers

from seclake.ingest import parse_line
from seclake.ingest.sysmon import EVENTS

FIXTURES = Path(__file__).parent / "fixtures"
LINES = (FIXTURES / "sysmon.txt").read_text(encoding="utf-8").splitlines()
PAIRS = 18  # lines 1-36: each event as Winlogbeat sends it, then as NXLog sends it
# The ids issue 41 lists; every one has a Winlogbeat and an NXLog line in the fixture.
LISTED = {1, 3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 17, 18, 22, 23, 25, 26}
# What seclake adds (docs/fields.md, "Sysmon"); the shippers' own metadata (agent, log.level, event.created,
# NXLog's Severity...) is theirs and differs.
COMMON = ("process", "user", "file", "registry", "dns", "source", "destination", "network", "host")
EVENT = ("code", "provider", "category", "type", "action")


def _parse(line: str) -> dict:
    record, understood = parse_line(line, vendor="windows", dataset="event", received_ms=1714564801000)
    assert understood
    return record


def _common(record: dict) -> dict:
    fields = record["@fields"]
    out = {key: fields[key] for key in COMMON if key in fields}
    out["event"] = {key: fields["event"].get(key) for key in EVENT}
    out["channels"] = (fields["winlog"]["channel"], fields["Channel"])
    out["ids"] = (fields["event"]["code"], fields["EventID"])
    out["@timestamp"] = record["@timestamp"]
    return out


def test_every_listed_event_id_is_mapped_from_both_shippers():
    assert set(EVENTS) == LISTED
    beats = [_parse(LINES[2 * i]) for i in range(PAIRS)]
    nxlogs = [_parse(LINES[2 * i + 1]) for i in range(PAIRS)]
    assert all("winlog" in json.loads(LINES[2 * i]) and "EventID" in json.loads(LINES[2 * i + 1]) for i in range(PAIRS))
    assert {r["@fields"]["EventID"] for r in beats} == {r["@fields"]["EventID"] for r in nxlogs} == LISTED
    for record in beats + nxlogs:
        event = record["@fields"]["event"]
        assert event["category"] and event["type"] and event["action"].endswith(")"), event


def test_both_shippers_give_the_same_common_names():
    for i in range(PAIRS):
        beat, nxlog = _common(_parse(LINES[2 * i])), _common(_parse(LINES[2 * i + 1]))
        assert beat == nxlog, f"sysmon.txt lines {2 * i + 1} and {2 * i + 2}"
        assert beat["channels"] == ("Microsoft-Windows-Sysmon/Operational",) * 2
        assert beat["ids"] == (str(beat["ids"][1]), beat["ids"][1])


def test_process_creation_carries_what_detections_read():
    fields = _parse(LINES[1])["@fields"]  # NXLog's Sysmon 1
    process = fields["process"]
    assert process["executable"].endswith("\\powershell.exe") and process["name"] == "powershell.exe"
    assert process["parent"] == {"executable": "C:\\Windows\\explorer.exe", "name": "explorer.exe", "pid": 3128,
                                 "entity_id": "{0197231E-0012-6928-1400-000000000D00}",
                                 "command_line": "C:\\Windows\\Explorer.EXE"}
    assert process["pe"]["original_file_name"] == "PowerShell.EXE" and process["pe"]["company"] == "Microsoft Corporation"
    assert process["pe"]["imphash"] == "741776aaccfc5b71ff59832dcdcace0f"
    assert process["hash"]["md5"] == "7353f60b1739074eb17c5f4dddefe239" and "imphash" not in process["hash"]
    assert fields["user"] == {"name": "alice", "domain": "CORP"}
    # Sysmon's own names, as sent, beside them.
    assert fields["ParentImage"] == "C:\\Windows\\explorer.exe" and fields["User"] == "CORP\\alice"


def test_the_events_own_fields_stay_as_each_shipper_sent_them():
    for i in range(2 * PAIRS):
        sent = json.loads(LINES[i])
        fields = _parse(LINES[i])["@fields"]
        if "winlog" in sent:
            assert fields["winlog"]["event_data"] == sent["winlog"]["event_data"]
            assert {k: fields["winlog"][k] for k in sent["winlog"]} == sent["winlog"]
            assert {k: fields["event"][k] for k in sent["event"]} == sent["event"]  # the beat's event.* wins
        else:
            assert {k: fields[k] for k in sent} == sent


def test_hostile_values_are_left_out_of_the_common_names():
    fields = _parse(LINES[38])["@fields"]  # a Sysmon 3 whose pid, addresses, port and protocol are not such
    assert "pid" not in fields["process"] and "ip" not in fields["source"] and "destination" not in fields
    assert "transport" not in fields["network"] and fields["winlog"]["event_data"]["SourceIp"] == "999.1.1.1"
    fields = _parse(LINES[39])["@fields"]  # hashes it cannot name; a parent image of "-"; the beat's host.name
    assert "hash" not in fields["process"] and "imphash" not in fields["process"]["pe"]
    assert "executable" not in fields["process"]["parent"] and fields["host"]["name"] == "ws7"
    # NXLog's own EventType (INFO) where Sysmon's would be: the event id decides.
    assert _parse(LINES[36])["@fields"]["event"]["type"] == "change"


def _search(srv, token, query, facets=()):
    kargs = {"partition": "default", "dataType": "event", "options": {
        "dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": 50, "range_from": 0,
        "range_to": 4_102_444_800_000, "facets": {"facets": [{"field": f, "size": 20} for f in facets]}}}
    return srv.call("ds/get_index_zoom_histogram_lv3", kargs, token)


def test_one_query_finds_the_event_from_both_shippers_on_a_real_server(start_server):
    srv = start_server()
    token = srv.login()
    key = srv.call("auth/api_token", {"action": "add", "name": "winlogbeat"}, token)["token"]
    # Winlogbeat ships with its Elasticsearch output: the bulk API, index winlogbeat-<version>.
    es = Elasticsearch(srv.url, api_key=key, request_timeout=30)
    beats = [json.loads(LINES[2 * i]) for i in range(PAIRS)]
    ok, _errors = helpers.bulk(es, ({"_index": "winlogbeat-8.13.4", "_op_type": "create", "_source": doc}
                                    for doc in beats))
    assert ok == PAIRS
    # NXLog's om_http (or om_tcp) sends its JSON lines.
    body = "\n".join(LINES[2 * i + 1] for i in range(PAIRS)).encode()
    r = srv.http.post("/api/import/nxlog", content=body, headers={"Servicetoken": token, "Content-Type": "text/plain"})
    assert r.status_code == 200 and r.json()["response"]["rejected"] == 0, r.text
    srv.services.lake.flush()

    def both(query: str) -> None:
        deadline = time.monotonic() + 10
        while True:
            reply = _search(srv, token, query, facets=["@source"])
            sources = {b["key"]: b["doc_count"] for b in reply["aggregations"]["@source"]["buckets"]}
            if sources == {"winlogbeat-8.13.4": 1, "nxlog": 1} or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert sources == {"winlogbeat-8.13.4": 1, "nxlog": 1}, (query, sources)

    both('process.parent.executable:"C:\\\\Windows\\\\explorer.exe" AND process.pe.original_file_name:"PowerShell.EXE"')
    both("process.parent.command_line:*Explorer.EXE AND event.code:1")
    both('winlog.channel:"Microsoft-Windows-Sysmon/Operational" AND EventID:10 AND process.thread.id:5100')
    both('registry.value:Updater AND registry.hive:HKLM AND event.type:change')
    both("dns.question.name:raw.githubusercontent.com AND dns.resolved_ip:185.199.109.133")
    both('destination.ip:"203.0.113.0/24" AND destination.port:443 AND network.transport:tcp')
    both('file.path:*RTCore64.sys AND event.category:driver AND file.code_signature.status:Expired')
    both('file.name:"\\\\MSSE-1337-server" AND event.type:access')
    # Sysmon's own names, where each shipper puts them.
    both("winlog.event_data.GrantedAccess:0x1010 OR GrantedAccess:0x1010")


def test_a_registry_event_whose_event_type_is_not_a_string_is_kept_whole():
    # Found by tests/ingest/test_ecs.py's mutations: a list there raised (unhashable) and lost the line.
    nxlog = next(json.loads(line) for line in LINES if '"EventID":12' in line and '"SourceModuleName"' in line)
    for odd in ([], ["CreateKey"], {"a": 1}, 7):
        record = _parse(json.dumps({**nxlog, "EventType": odd}))
        assert record["@fields"]["event"]["category"] == "registry" and record["@fields"]["EventType"] == odd
