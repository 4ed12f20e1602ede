"""Common (ECS) names across sources: one query finds the same thing in every
source that carries it, and hostile variants of every source's lines never
fault. Golden lines per source: fixtures/<source>.txt (test_golden.py)."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.ingest import parse_line
from seclake.ingest.ecs import compact, ip, merge, number, port, transport
from seclake.record.flatten import values_at

FIXTURES = Path(__file__).parent / "fixtures"
SEARCH = "ds/get_index_zoom_histogram_lv3"
# vendor -> fixture whose lines it sends; each source in its real format.
SOURCES = {"linux": "authlog", "windows": "winsecurity", "aws": "cloudtrail", "okta": "okta", "azure": "entra",
           "zeek": "zeek", "suricata": "suricata", "fortigate": "fortigate", "cisco": "asa", "paloalto": "panos",
           "arcsight": "cef", "qradar": "leef", "auditd": "auditd"}
JSON_SOURCES = ["winsecurity", "sysmon", "zeek", "suricata", "cloudtrail", "okta", "entra"]


def _search(srv, token, query, facets=()):
    kargs = {"partition": "default", "dataType": "event", "options": {
        "dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": 50, "range_from": 0,
        "range_to": 4_102_444_800_000, "facets": {"facets": [{"field": f, "size": 20} for f in facets]}}}
    return srv.call(SEARCH, kargs, token)


def _buckets(reply, field):
    return {b["key"]: b["doc_count"] for b in reply["aggregations"][field]["buckets"]}


def test_one_query_on_common_names_answers_for_every_source(start_server):
    srv = start_server()
    token = srv.login()
    for vendor, fixture in SOURCES.items():
        body = (FIXTURES / f"{fixture}.txt").read_bytes()
        r = srv.http.post(f"/api/import/{vendor}", content=body,
                          headers={"Servicetoken": token, "Content-Type": "text/plain"})
        assert r.status_code == 200 and r.json()["response"]["rejected"] == 0, (vendor, r.text)
    srv.services.lake.flush()

    # Sign-in failures from sshd/sudo/su, Windows, CloudTrail, Okta, Entra ID and three firewalls, by who failed.
    failures = _search(srv, token, "event.category:authentication AND event.outcome:failure",
                       facets=["observer.product", "user.name"])
    products = _buckets(failures, "observer.product")
    assert products == {"CloudTrail": 1, "Okta System Log": 2, "Entra ID": 2, "FortiGate": 1, "ASA": 4,
                        "PAN-OS": 1, "auditd": 2}, products
    users = _buckets(failures, "user.name")
    assert users["JohnDoe"] == 1 and users["admin@example.com"] == 1 and users["jane@contoso.com"] == 1
    assert users["testaccount1@contoso.com"] == 1 and users["administrator"] == 1
    assert users["admin"] == 3 and users["mallory"] == 3  # FortiGate, ASA, PAN-OS; ASA, su and its PAM line
    assert failures["hits"]["total"] == sum(_buckets(
        _search(srv, token, "event.category:authentication AND event.outcome:failure", facets=["@source"]),
        "@source").values())

    # One address, seven systems.
    seen = _search(srv, token, 'source.ip:"203.0.113.50"', facets=["@source"])
    assert _buckets(seen, "@source") == {"aws": 2, "okta": 3, "windows": 1, "fortigate": 1, "cisco": 1,
                                         "paloalto": 2, "auditd": 1}, _buckets(seen, "@source")
    # What ran: auditd's hex-encoded USER_CMD and its EXECVE arguments, decoded alike.
    ran = _search(srv, token, 'process.command_line:"cat /etc/shadow"', facets=["@source"])
    assert _buckets(ran, "@source") == {"auditd": 2}
    # Denied connections, whatever the firewall calls them.
    denied = _search(srv, token, "event.category:network AND event.type:denied", facets=["observer.product"])
    assert _buckets(denied, "observer.product") == {"FortiGate": 1, "ASA": 4, "PAN-OS": 1}
    # An account, however each source spells it (PAN-OS "corp\\jdoe" is user.name jdoe in domain corp,
    # Zeek kerberos' client "jdoe/CORP.LOCAL" jdoe in realm CORP.LOCAL).
    jdoe = _search(srv, token, 'user.name:jdoe', facets=["@source"])
    assert _buckets(jdoe, "@source") == {"fortigate": 2, "paloalto": 2, "qradar": 1, "windows": 3, "zeek": 1}
    # The Suricata http line and the Snort CEF line.
    assert _search(srv, token, 'destination.ip:"203.0.113.0/24"')["hits"]["total"] == 2

    # Network fields: Zeek, Suricata and FortiGate agree on names.
    dns = _search(srv, token, "dns.question.name:*", facets=["dns.question.name"])
    assert _buckets(dns, "dns.question.name") == {"testmyids.com": 1, "www.suricata-ids.org": 1,
                                                  "updates.example.org": 1}
    assert _search(srv, token, "destination.port:443 AND network.protocol:tls")["hits"]["total"] == 2
    # Byte counts are numbers in every source: Zeek 6000, ASA 6512, PAN-OS 5720, FortiGate 102200.
    big = _search(srv, token, "network.bytes:>=5000", facets=["observer.product"])
    assert _buckets(big, "observer.product") == {"Zeek": 1, "ASA": 1, "PAN-OS": 1, "FortiGate": 1}
    alerts = _search(srv, token, "event.kind:alert", facets=["rule.name"])
    assert set(_buckets(alerts, "rule.name")) == {
        "SSH::Password_Guessing", "ET HUNTING GENERIC SUSPICIOUS POST to Dotted Quad with Fake Browser 1",
        "Apache.Log4j.Error.Log.Remote.Code.Execution",  # FortiGate IPS
        "allow-dmz-web", "allow-web"}  # PAN-OS threats name the security rule they matched
    assert _search(srv, token, 'url.domain:"www.digip.org" AND http.response.status_code:200')["hits"]["total"] == 1
    # The source's own names stay beside the common ones.
    assert _search(srv, token, 'eventName:ConsoleLogin AND event.action:ConsoleLogin')["hits"]["total"] == 2


def test_zeek_conn_into_the_flow_dataset_answers_flow_queries(start_server):
    srv = start_server()
    token = srv.login()
    body = (FIXTURES / "zeek.txt").read_bytes()
    r = srv.http.post("/api/import/zeek?type=flow", content=body,
                      headers={"Servicetoken": token, "Content-Type": "text/plain"})
    assert r.status_code == 200, r.text
    srv.services.lake.flush()
    kargs = {"partition": "default", "dataType": "flow", "options": {
        "dateFacetField": "@timestamp", "searchStr": "dp:443 AND prot:6", "fetchLimit": 10, "range_from": 0,
        "range_to": 4_102_444_800_000, "facets": {"facets": []}}}
    flows = srv.call(SEARCH, kargs, token)
    assert flows["hits"]["total"] == 1
    flow = flows["hits"]["hits"][0]["_source"]["@metaflow"]["flow"]
    assert (flow["sip"], flow["txB"], flow["rxB"], flow["dur"]) == ("2001:db8::5", 800, 5200, 1500)


def test_common_names_never_overwrite_the_sources_own():
    fields = {"program": "sshd", "user": "root", "source": "pam", "event": {"outcome": "mine"}}
    merge(fields, {"user": {"name": "x", "target": {"name": "y"}}, "source": {"ip": "1.2.3.4"},
                   "event": {"outcome": "failure", "action": "login"}})
    # The line's own values stay; the common names go beside them as dotted keys, found by the same paths.
    assert fields == {"program": "sshd", "user": "root", "source": "pam", "event": {"outcome": "mine", "action": "login"},
                      "user.name": "x", "user.target.name": "y", "source.ip": "1.2.3.4"}
    assert values_at(fields, "user.target.name") == ["y"] and values_at(fields, "user") == ["root"]


def test_hostile_values_become_nothing_not_errors():
    assert [port(v) for v in (443, "443", "70000", -1, True, "1e3", 2.5)] == [443, 443, None, None, None, None, 2]
    assert number(2**70) is None and number("9" * 30) is None
    assert [transport(v) for v in (6, "17", "TCP", 999, ["x"])] == ["tcp", "udp", "tcp", None, None]
    assert compact({"a": {"b": None, "c": ""}, "d": 0, "e": "-"}) == {"d": 0}


_HOSTILE = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=200),
                     st.lists(st.integers(-1000, 1000), max_size=3),
                     st.dictionaries(st.text(max_size=5), st.integers(-1000, 1000), max_size=3))


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(JSON_SOURCES), st.data())
def test_mutated_lines_of_every_json_source_are_kept_whole(source, data):
    lines = [line for line in (FIXTURES / f"{source}.txt").read_text().splitlines() if line.strip()]
    # (A float that overflows stays text, so the line stays JSON when written back.)
    obj = json.loads(data.draw(st.sampled_from(lines)), parse_float=lambda s: float(s) if abs(float(s)) < 1e300 else s)
    paths = list(_paths(obj))
    for _ in range(data.draw(st.integers(1, 4))):
        path = data.draw(st.sampled_from(paths))
        parent = obj
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            parent[path[-1]] = data.draw(_HOSTILE)
    line = json.dumps(obj)
    record, understood = parse_line(line, vendor=source, dataset=data.draw(st.sampled_from(["event", "flow"])),
                                    received_ms=1714564801000)
    assert understood and record["@message"] == line
    for key, value in obj.items():  # the source's own fields are all there, as sent
        # (A null is an absent field: the common names may take its place,
        # ``{"event": null}`` gets ``event.code`` from the Windows event id.)
        if not key.startswith("@"):
            assert record["@fields"][key] == value or isinstance(value, dict) or value is None, key


TEXT_SOURCES = ["authlog", "auditd", "fortigate", "asa", "panos", "cef", "leef"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TEXT_SOURCES), st.data())
def test_mutated_lines_of_every_text_source_are_kept_whole(source, data):
    lines = [line for line in (FIXTURES / f"{source}.txt").read_text().splitlines() if line.strip()]
    line = data.draw(st.sampled_from(lines))
    for _ in range(data.draw(st.integers(1, 4))):  # cut, insert or replace a piece anywhere
        at = data.draw(st.integers(0, len(line)))
        piece = data.draw(st.sampled_from(["", "=", "|", ",", '"', "\\", ":", "/", " ", "\t", "#011", "%ASA-6-",
                                           "\x00", "é", "999.1.1.1", "65536", "-1", "LEEF:2.0|", "CEF:0|"]))
        line = line[:at] + piece + line[at + data.draw(st.integers(0, 8)):]
    if not line.strip():
        return
    record, _understood = parse_line(line, vendor=source, dataset="event", received_ms=1714564801000)
    assert record["@message"] == line.rstrip("\r\n")


def test_long_hostile_lines_cost_linear_time():
    import time

    lines = [
        "<166>May  1 11:58:21 fw %ASA-6-113005: AAA user authentication Rejected : reason = " + "a : " * 40_000,
        "<166>May  1 11:58:21 fw %ASA-4-106023: Deny tcp src " + "a:1.1.1.1/1 " * 20_000,
        "<166>May  1 11:58:21 fw %ASA-6-106100: access-list x denied tcp " + "in/1.1.1.1(1) " * 20_000,
        "<14>May  1 11:58:17 pa 1,2024/05/01 11:58:17,1,SYSTEM,auth,0,x,,auth-fail,,0,0,g,m,\"" + "'" * 100_000,
        "LEEF:2.0|a|b|c|d|^|" + "k=" * 100_000,
        "date=1 logid=1 devid=x type=utm subtype=ips " + "attack=" * 50_000,
    ]
    started = time.perf_counter()
    for line in lines:
        parse_line(line, vendor="fuzz", dataset="event", received_ms=1714564801000)
    assert time.perf_counter() - started < 5.0  # measured: well under a second; backtracking would take hours


_OCTET = st.one_of(st.integers(0, 300).map(str), st.sampled_from(["01", "00", "", "x", "1e2", " 1", "+1", "\u0661"]))


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(_OCTET, min_size=3, max_size=5).map(".".join), st.ip_addresses().map(str), st.text(max_size=50)))
def test_ip_fields_hold_exactly_what_ipaddress_calls_an_address(text):
    # ip() checks dotted quads by hand (speed); it must agree with ipaddress, which the lake's ip fields use.
    try:
        ipaddress.ip_address(text)
        want = text
    except ValueError:
        want = None
    assert ip(text) == want
