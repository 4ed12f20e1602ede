"""Parse rates per format, on one core, and what the common names cost.

For each format a realistic line varies per line (addresses, ports, users,
times), so no cache flatters the result. Each format is timed twice, side
by side in one run: the whole parse (``parse_line``, the common names
included) and the same parse with the common-name mapping switched off;
their ratio is what mapping to ECS costs on that format. Each figure is the
best of several runs: other processes only ever slow a run down.
``python -m seclake.bench.parsing [LINES]`` prints the table alone.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace

from seclake.ingest import parser
from seclake.ingest.parser import parse_line

RECEIVED = 1714564801000
STAGE = "parse rates per format (one core)"  # its name among the benchmark's stages


def _ip(i: int) -> str:
    return f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


def _ext(i: int) -> str:
    return f"198.51.{(i >> 8) & 255}.{i & 255}"


def _iso(i: int) -> str:
    return f"2024-05-01T11:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z"


# format -> (dataset, line maker). Shapes follow tests/ingest/fixtures/<source>.txt.
SAMPLES: dict[str, tuple[str, Callable[[int], str]]] = {
    "sshd (syslog 3164)": ("event", lambda i: (
        f"<38>May  1 11:{i // 60 % 60:02d}:{i % 60:02d} web{i % 50:02d} sshd[{4000 + i % 900}]: "
        f"Failed password for invalid user admin{i % 97} from {_ext(i)} port {1024 + i % 60000} ssh2")),
    "syslog 5424": ("event", lambda i: (
        f'<165>1 {_iso(i)} host{i % 50} evntslog {i % 9999} ID47 '
        f'[exampleSDID@32473 iut="3" eventSource="Application" eventID="{i % 5000}"] An application event {i}')),
    "auditd": ("event", lambda i: (
        f"type=USER_LOGIN msg=audit(1714564{i % 1000:03d}.{i % 1000:03d}:{i}): pid={1000 + i % 9000} uid=0 "
        f"auid=4294967295 ses=4294967295 msg='op=login acct=\"user{i % 300}\" exe=\"/usr/sbin/sshd\" hostname=? "
        f"addr={_ext(i)} terminal=sshd res={'failed' if i % 3 else 'success'}'")),
    "FortiGate (kv)": ("event", lambda i: (
        f'date=2024-05-01 time=11:59:{i % 60:02d} devname="FGT60E-HQ" devid="FGT60ETK19000001" '
        f'eventtime={1714564740123456789 + i * 1000} tz="+0000" logid="0000000013" type="traffic" '
        f'subtype="forward" level="notice" vd="root" srcip={_ip(i)} srcport={1024 + i % 60000} '
        f'srcintf="internal" dstip=8.8.{i % 256}.8 dstport=53 dstintf="wan1" proto=17 action="deny" '
        f'policyid={i % 40} service="DNS" duration={i % 100} sentbyte={i % 5000} rcvdbyte={i % 9000}')),
    "Cisco ASA": ("event", lambda i: (
        f"<166>May  1 11:58:{i % 60:02d} fw-asa %ASA-6-302013: Built outbound TCP connection {i} for "
        f"outside:{_ext(i)}/443 ({_ext(i)}/443) to inside:{_ip(i)}/{1024 + i % 60000} "
        f"(203.0.113.1/{1024 + i % 60000})")),
    "PAN-OS (CSV)": ("event", lambda i: (
        f"<14>May  1 11:58:{i % 60:02d} pa-fw 1,2024/05/01 11:58:13,012801096514,TRAFFIC,end,2305,"
        f"2024/05/01 11:58:{i % 60:02d},{_ip(i)},{_ext(i)},203.0.113.1,{_ext(i)},allow-web,corp\\user{i % 300},,ssl,"
        f"vsys1,trust,untrust,ethernet1/2,ethernet1/1,Forward,2024/05/01 11:58:13,{i},1,{1024 + i % 60000},443,"
        f"41234,443,0x400064,tcp,allow,{i % 9000},1420,4300,20,2024/05/01 11:58:00,12,computer-and-internet-info,0,"
        f"{i},0x0,10.0.0.0-10.255.255.255,United States,0,11,9,tcp-fin")),
    "CEF": ("event", lambda i: (
        f"CEF:0|Suricata|Suricata IDS|6.0.10|{2019000 + i % 500}|ET SCAN Possible Nmap User-Agent|7|"
        f"src={_ip(i)} spt={1024 + i % 60000} dst=10.0.0.20 dpt=80 proto=TCP act=alert "
        f"cs1Label=classification cs1=Web Application Attack rt={1714564740000 + i} dvchost=ids{i % 4}")),
    "syslog + CEF": ("event", lambda i: (
        f"<134>May  1 11:59:58 edr{i % 20} CEF:0|CrowdStrike|FalconHost|1.0|5|Detection Summary|High|"
        f"suser=CORP\\\\user{i % 300} shost=LAPTOP-{i % 700} fname=evil{i % 9}.exe act=quarantined")),
    "LEEF 2.0": ("event", lambda i: (
        f"LEEF:2.0|Lancope|StealthWatch|1.0|41|^|src={_ip(i)}^dst=10.0.0.5^sev=5^srcPort={1024 + i % 60000}"
        f"^dstPort=21^srcBytes={i % 9000}^dstBytes=300^devTime={_iso(i)}")),
    "Windows (Winlogbeat)": ("event", lambda i: json.dumps({
        "@timestamp": _iso(i), "winlog": {
            "event_id": 4625, "channel": "Security", "computer_name": f"DC{i % 8}.corp.example",
            "event_data": {"TargetUserName": f"user{i % 300}", "TargetDomainName": "CORP", "IpAddress": _ext(i),
                           "IpPort": str(1024 + i % 60000), "LogonType": "3", "Status": "0xc000006d"}}})),
    "Zeek conn": ("event", lambda i: json.dumps({
        "ts": 1714564740.3 + i, "uid": f"C{i:017d}", "id.orig_h": _ip(i), "id.orig_p": 1024 + i % 60000,
        "id.resp_h": _ext(i), "id.resp_p": 443, "proto": "tcp", "service": "ssl", "duration": i % 100 / 7,
        "orig_bytes": i % 9000, "resp_bytes": i % 70000, "conn_state": "SF", "orig_pkts": i % 40,
        "resp_pkts": i % 60})),
    "Suricata EVE alert": ("event", lambda i: json.dumps({
        "timestamp": _iso(i), "flow_id": i, "event_type": "alert", "src_ip": _ext(i), "src_port": 1024 + i % 60000,
        "dest_ip": _ip(i), "dest_port": 80, "proto": "TCP", "app_proto": "http",
        "alert": {"action": "allowed", "signature_id": 2018000 + i % 300, "signature": "ET SCAN Suspicious inbound",
                  "category": "Attempted Information Leak", "severity": 2}})),
    "CloudTrail": ("event", lambda i: json.dumps({
        "eventVersion": "1.08", "userIdentity": {"type": "IAMUser", "principalId": f"AIDA{i:012d}",
                                                 "accountId": "111122223333", "userName": f"user{i % 300}"},
        "eventTime": _iso(i)[:19] + "Z", "eventSource": "signin.amazonaws.com", "eventName": "ConsoleLogin",
        "awsRegion": "us-east-1", "sourceIPAddress": _ext(i), "userAgent": "Mozilla/5.0",
        "responseElements": {"ConsoleLogin": "Failure" if i % 4 else "Success"}, "eventID": f"e-{i}"})),
    "Okta": ("event", lambda i: json.dumps({
        "actor": {"id": f"00u{i}", "type": "User", "alternateId": f"user{i % 300}@example.com",
                  "displayName": f"User {i % 300}"},
        "client": {"ipAddress": _ext(i), "userAgent": {"rawUserAgent": "Mozilla/5.0"}},
        "eventType": "user.session.start", "outcome": {"result": "FAILURE" if i % 4 else "SUCCESS"},
        "published": _iso(i), "uuid": f"u-{i}", "version": "0"})),
    "Entra ID sign-in": ("event", lambda i: json.dumps({
        "id": f"s-{i}", "createdDateTime": _iso(i), "userPrincipalName": f"user{i % 300}@contoso.com",
        "userDisplayName": f"User {i % 300}", "ipAddress": _ext(i), "appDisplayName": "Office 365",
        "status": {"errorCode": 50126 if i % 4 else 0}})),
    "JSON (event shape)": ("event", lambda i: json.dumps({
        "@timestamp": 1714564740000 + i, "@message": f"Failed password for user{i % 300} from {_ip(i)}",
        "@sender": f"web{i % 50}", "@facility": "auth", "@tags": ["linux"],
        "@fields": {"user": f"user{i % 300}", "src": _ip(i), "port": 22}})),
    "flow (@metaflow)": ("flow", lambda i: json.dumps({
        "@timestamp": 1714564740000 + i, "@metaflow": {"flow": {
            "sip": _ip(i), "dip": "1.1.1.1", "sp": 1024 + i % 60000, "dp": 443, "prot": 6, "rxB": i % 100000,
            "txB": i % 7000, "totalB": i % 107000, "rxP": i % 80, "txP": i % 60, "dur": i % 3000,
            "time_ms": 1714564740000 + i}}})),
    "raw (unparsed)": ("event", lambda i: (
        f"2024-05-01 11:59:00,{i % 1000:03d} INFO [main-{i % 8}] request {i} served in {i % 97} ms")),
}


@contextlib.contextmanager
def without_common_names() -> Iterator[None]:
    """Parsing with every mapping to the common names switched off (the source's own fields only)."""
    none = SimpleNamespace(fields_of=lambda *args: None)
    saved = (parser.JSON_SOURCES, parser._add_common, parser.authlog, parser.asa)
    parser.JSON_SOURCES, parser._add_common = (), lambda *args: None
    parser.authlog, parser.asa = none, none  # type: ignore[assignment]
    try:
        yield
    finally:
        parser.JSON_SOURCES, parser._add_common, parser.authlog, parser.asa = saved


def _best(run: Callable[[], None], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def parse_rates(lines: int = 10_000, repeats: int = 3) -> dict[str, dict[str, float]]:
    """format -> {lines_per_second, own_fields_lines_per_second, common_names_share, bytes_per_line}."""
    out: dict[str, dict[str, float]] = {}
    for name, (dataset, make) in SAMPLES.items():
        sample = [make(i) for i in range(lines)]

        def parse_all() -> None:
            for line in sample:
                parse_line(line, vendor="bench", dataset=dataset, received_ms=RECEIVED)

        full = _best(parse_all, repeats)
        with without_common_names():
            own = _best(parse_all, repeats)
        out[name] = {"lines_per_second": lines / full, "own_fields_lines_per_second": lines / own,
                     "common_names_share": max(0.0, (full - own) / full),
                     "bytes_per_line": sum(map(len, sample)) / lines}
    return out


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    print(f"{'format':<22} {'lines/s':>10} {'own only/s':>11} {'ECS share':>9} {'bytes':>6}")
    for fmt, r in parse_rates(n).items():
        print(f"{fmt:<22} {r['lines_per_second']:>10,.0f} {r['own_fields_lines_per_second']:>11,.0f} "
              f"{r['common_names_share']:>9.0%} {r['bytes_per_line']:>6.0f}")
