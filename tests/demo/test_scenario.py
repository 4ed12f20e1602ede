"""The attack episodes are in the output, exactly as the manifest says."""

from __future__ import annotations

import base64
import re

import orjson
import pytest

from seclake.demo import DemoLine, Manifest, generate, manifest, scenario
from seclake.demo.clock import DAY_MS
from seclake.ingest import parse_line

from .conftest import DAYS, END_MS, is_sysmon

NAMES = {"brute_force", "port_scan", "exfiltration", "mimikatz", "encoded_powershell", "bad_domain_dns",
         "admin_new_address", "sql_injection_scan", "cryptominer", "password_spray"}


def _json_lines(week: list[tuple[int, DemoLine]], vendor: str) -> list[tuple[int, dict]]:
    return [(t, orjson.loads(d.line)) for t, d in week if d.vendor == vendor and not is_sysmon(d)]


def _flow(obj: dict) -> dict:
    return obj.get("@fields") or obj["@metaflow"]["flow"]


def test_manifest_lists_every_episode_inside_the_window(week_manifest: Manifest) -> None:
    assert {e.name for e in week_manifest.episodes} == NAMES
    assert week_manifest.start_ms == END_MS - DAYS * DAY_MS
    for e in week_manifest.episodes:
        assert week_manifest.start_ms <= e.start_ms <= e.end_ms < END_MS
        assert e.customer in {"acme", "globex", "initech"}
        assert e.lines > 0


def test_manifest_depends_on_window_not_seed(week_manifest: Manifest) -> None:
    assert manifest(days=DAYS, end_ms=END_MS) == week_manifest
    shifted = manifest(days=DAYS, end_ms=END_MS + DAY_MS)
    assert shifted.episode("brute_force").start_ms != week_manifest.episode("brute_force").start_ms


def test_episode_lines_match_the_manifest_counts_and_times(week: list, week_manifest: Manifest) -> None:
    _, lines = scenario.build(days=DAYS, end_ms=END_MS)
    output = {(t, d) for t, d in week}
    assert all((t, d) in output for t, d in lines)
    assert len(lines) == sum(e.lines for e in week_manifest.episodes)


def test_brute_force_then_success(week: list, week_manifest: Manifest) -> None:
    e = week_manifest.episode("brute_force")
    v = e.values
    ip = re.escape(v["src_ip"])
    fail = re.compile(rf"sshd\[\d+\]: Failed password for {v['user']} from {ip} port \d+ ssh2$")
    ok = re.compile(rf"sshd\[\d+\]: Accepted password for {v['user']} from {ip} port \d+ ssh2$")
    fails = [t for t, d in week if d.vendor == "sshd" and fail.search(d.line)]
    wins = [t for t, d in week if d.vendor == "sshd" and ok.search(d.line)]
    assert len(fails) == v["failures"] >= 50
    assert fails[0] == v["first_failure_ms"] and fails[-1] == v["last_failure_ms"]
    assert fails[-1] - fails[0] < 5 * 60_000  # within a few minutes
    assert wins == [v["success_ms"]] and wins[0] > fails[-1]
    assert all(v["host"] in d.line for t, d in week if d.vendor == "sshd" and fail.search(d.line))


def test_password_spray_against_okta(week: list, week_manifest: Manifest) -> None:
    # Real Okta System Log events: the parser gives them the same names as sshd's.
    v = week_manifest.episode("password_spray").values
    parsed = [parse_line(d.line, vendor=d.vendor, dataset=d.dataset, received_ms=0, customer=d.customer)[0]
              for _, d in week if d.vendor == "okta" and v["src_ip"] in d.line]
    f = [r["@fields"] for r in parsed]
    failed = [x["user"]["name"] for x in f if x["event"]["outcome"] == "failure"]
    assert failed == [f"{u}@globex.example.com" for u in v["users"]] and len(set(failed)) == v["failures"] >= 20
    assert all(x["source"]["ip"] == v["src_ip"] and x["event"]["category"] == "authentication" for x in f)
    won = [r for r in parsed if r["@fields"]["event"]["outcome"] == "success"]
    assert [r["@timestamp"] for r in won] == [v["success_ms"]]
    assert won[0]["@fields"]["user"]["name"] == f"{v['cracked']}@globex.example.com"
    assert all(r["@customer"] == "globex" for r in parsed)


def test_port_scan_in_flows_and_firewall_denies(week: list, week_manifest: Manifest) -> None:
    v = week_manifest.episode("port_scan").values
    flows = [(t, _flow(o)) for t, o in _json_lines(week, "netflow") if _flow(o)["sip"] == v["src_ip"]]
    ports = {f["dp"] for _, f in flows}
    assert len(ports) == v["distinct_ports"] >= 200
    assert tuple(sorted(ports)) == v["ports"]
    assert {f["dip"] for _, f in flows} == {v["dst_ip"]}
    assert flows[-1][0] - flows[0][0] <= 60_000  # hundreds of ports within a minute
    denies = [d for _, d in week if d.vendor == "fortigate" and f"srcip={v['src_ip']} " in d.line]
    assert len(denies) == len(ports) and all('action="deny"' in d.line for d in denies)


def test_large_outbound_transfer(week: list, week_manifest: Manifest) -> None:
    v = week_manifest.episode("exfiltration").values
    big = [(t, _flow(o)) for t, o in _json_lines(week, "netflow") if _flow(o)["txB"] >= 1_000_000_000]
    assert [(t, f["sip"], f["dip"], f["txB"]) for t, f in big] == [
        (v["start_ms"], v["src_ip"], v["dst_ip"], v["bytes"])
    ]
    fw = [d.line for _, d in week if d.vendor == "fortigate" and f"sentbyte={v['bytes']}" in d.line]
    assert len(fw) == 1 and f"dstip={v['dst_ip']}" in fw[0]


def test_mimikatz_and_encoded_powershell(week: list, week_manifest: Manifest) -> None:
    edr = _json_lines(week, "edr")
    m = week_manifest.episode("mimikatz")
    hits = [(t, o) for t, o in edr if o["cmdline"] == m.values["cmdline"]]
    assert len(hits) == 1
    t, o = hits[0]
    assert m.start_ms <= t <= m.end_ms
    assert o["cmdline"] == r"C:\Windows\Temp\mimikatz.exe sekurlsa::logonpasswords"
    assert (o["host"], o["user"], o["sha256"]) == (m.values["host"], m.values["user"], m.values["sha256"])

    p = week_manifest.episode("encoded_powershell").values
    enc = [o for _, o in edr if "-EncodedCommand" in o["cmdline"]]
    assert len(enc) == 1 and enc[0]["parent"] == p["parent"]
    payload = enc[0]["cmdline"].rsplit(" ", 1)[1]
    assert base64.b64decode(payload).decode("utf-16-le") == p["decoded"]
    assert [o["cmdline"] for _, o in edr if o["process"].endswith("certutil.exe")] == [p["lolbin_cmdline"]]


def test_bad_domain_queries(week: list, week_manifest: Manifest) -> None:
    v = week_manifest.episode("bad_domain_dns").values
    q = re.compile(r" query=(\S+) ")
    bad = [(d.customer, q.search(d.line)[1], d.line) for _, d in week
           if d.vendor == "bind" and q.search(d.line)[1] in v["domains"]]
    assert len(bad) == v["queries"] >= 3
    assert all(c == "initech" and f"client={v['client']} " in line for c, _, line in bad)


def test_admin_login_from_a_never_seen_address(week: list, week_manifest: Manifest) -> None:
    v = week_manifest.episode("admin_new_address").values
    admin = [o["@fields"] for _, o in _json_lines(week, "windows")
             if o["@fields"]["TargetUserName"] == v["user"] and o["@customer"] == "acme"]
    addresses = [f.get("IpAddress") for f in admin]
    assert addresses.count(v["src_ip"]) == 1
    assert set(addresses) == {v["src_ip"], v["usual_ip"]}
    assert addresses.index(v["src_ip"]) > len(addresses) // 2  # a baseline exists before it
    new = next(f for f in admin if f["IpAddress"] == v["src_ip"])
    assert new["EventID"] == 4624 and new["LogonType"] == v["logon_type"]


def test_needles_are_findable_by_one_word_and_only_in_their_episodes(week: list, week_manifest: Manifest) -> None:
    for word, count in week_manifest.needles.items():
        assert count > 0
        found = sum(1 for _, d in week if word.lower() in d.line.lower())
        assert found == count, word


def test_attacker_addresses_never_appear_in_background(week: list, week_manifest: Manifest) -> None:
    _, episode_lines = scenario.build(days=DAYS, end_ms=END_MS)
    for ip in (scenario.BRUTE_FORCE_IP, scenario.SCANNER_IP, scenario.EXFIL_DST_IP, scenario.NEW_ADDRESS_IP,
               "198.51.100.99"):
        pat = re.compile(rf"(?<![\d.]){re.escape(ip)}(?![\d])")
        expected = sum(1 for _, d in episode_lines if pat.search(d.line))
        assert expected > 0
        assert sum(1 for _, d in week if pat.search(d.line)) == expected, ip


@pytest.mark.parametrize("days", [1, 30])
def test_episodes_fit_short_and_long_windows(days: int) -> None:
    m = manifest(days=days, end_ms=END_MS)
    for e in m.episodes:
        assert END_MS - days * DAY_MS <= e.start_ms <= e.end_ms < END_MS, e.name


def test_without_flows_the_flow_parts_are_left_out() -> None:
    m = manifest(days=1, end_ms=END_MS, flows=False)
    assert all("netflow" not in e.vendors for e in m.episodes)
    assert m.episode("port_scan").values["distinct_ports"] >= 200  # still visible as firewall denies
    lines = list(generate(days=1, end_ms=END_MS, events_per_day=100, flows=False))
    assert sum(1 for d in lines if scenario.SCANNER_IP in d.line) >= 200
