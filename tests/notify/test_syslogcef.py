"""Syslog CEF destinations: CEF's escaping, and Debian's rsyslog receiving the
events over UDP, TCP and TLS (its gtls driver, our CA trusted by the
destination), each line read back from the file rsyslog writes."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

from seclake.notify.syslogcef import extension, header, line
from tests.notify.helpers import ingest, setup
from tests.service.test_listeners import _needs


def test_cef_escapes_pipes_and_backslashes_in_the_header_and_equals_and_newlines_in_values() -> None:
    assert header("a|b\\c") == "a\\|b\\\\c"
    assert extension("x=1\\2|3\nnext\r") == "x\\=1\\\\2|3\\nnext\\r"
    cef = line({"kind": "behavior", "at": 1, "summaryId": "s1",
                "behavior": {"behaviorRule": "r|1", "key": "a=b", "keyType": "ip", "customer": "acme",
                             "riskScore": 9000, "scoreLevel": "critical", "risks": ["T1110"]}},
               {"title": "t|x", "text": "line1\nline2", "html": ""}, delivery_id=7, rule="n", link="https://x/y?a=b",
               version="0.1.0", folded=2)
    head, ext = cef.split("|", 7)[:7], cef.split("|", 7)[7]
    assert cef.startswith("CEF:0|seclake|seclake|0.1.0|r\\|1|t\\|x|10|")
    assert "cs1=a\\=b" in ext and "msg=line1\\nline2" in ext and "request=https://x/y?a\\=b" in ext
    assert "cn2=2" in ext and "externalId=7" in ext and "\n" not in cef


def _free(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _certs(tmp_path: Path) -> tuple[Path, Path]:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def test_rsyslog_receives_the_cef_over_udp_tcp_and_tls(start_server, tmp_path) -> None:
    rsyslogd = _needs("rsyslogd")
    cert, key = _certs(tmp_path)
    udp, tcp, tls = _free(socket.SOCK_DGRAM), _free(), _free()
    work = tmp_path / "rsyslog"
    work.mkdir()
    out = {name: work / f"{name}.log" for name in ("udp", "tcp", "tls")}
    conf = work / "rsyslog.conf"
    conf.write_text(f"""
global(workDirectory="{work}" defaultNetstreamDriverCAFile="{cert}"
       defaultNetstreamDriverCertFile="{cert}" defaultNetstreamDriverKeyFile="{key}")
template(name="raw" type="string" string="%msg%\\n")
module(load="imudp")
module(load="imtcp" maxSessions="20")
input(type="imudp" address="127.0.0.1" port="{udp}" ruleset="udp")
input(type="imtcp" address="127.0.0.1" port="{tcp}" ruleset="tcp")
input(type="imtcp" address="127.0.0.1" port="{tls}" ruleset="tls" streamDriver.name="gtls" streamDriver.mode="1"
      streamDriver.authMode="anon")
ruleset(name="udp") {{ action(type="omfile" file="{out['udp']}" template="raw") }}
ruleset(name="tcp") {{ action(type="omfile" file="{out['tcp']}" template="raw") }}
ruleset(name="tls") {{ action(type="omfile" file="{out['tls']}" template="raw") }}
""")
    proc = subprocess.Popen([rsyslogd, "-n", "-f", str(conf), "-i", str(work / "pid")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # rsyslogd listens once its inputs are set up (TLS takes longest, a loaded machine longer):
        # wait until both TCP ports take connections, not a fixed second.
        deadline = time.monotonic() + 20
        for port in (tcp, tls):
            while True:
                assert proc.poll() is None, proc.communicate()[0]
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"rsyslogd does not listen on {port}"
                    time.sleep(0.1)
        srv = start_server(commit_interval_seconds=0.2, public_url="https://seclake.example.org")
        token = srv.login()
        pem = cert.read_text()
        setup(srv, token, {"name": "cef-udp", "kind": "syslog", "url": f"udp://127.0.0.1:{udp}"})
        for name, url, extra in (("cef-tcp", f"tcp://127.0.0.1:{tcp}", {}),
                                 ("cef-tls", f"tls://localhost:{tls}", {"caPem": pem})):
            srv.call("notify/destination_dao", {"action": "add", "destination": {
                "name": name, "kind": "syslog", "url": url, **extra}}, token)
        srv.call("notify/rule_dao", {"action": "update", "rule": {
            "name": "notify-on-logon", "on": "behavior", "destinations": ["cef-udp", "cef-tcp", "cef-tls"],
            "throttleSeconds": 0}}, token)
        assert srv.call("notify/test", {"name": "cef-tls"}, token) == {"sent": True, "error": None}
        ingest(srv, token, ["10.9.0.1", "10.9.0.2"])
        deadline = time.monotonic() + 30
        got: dict[str, list[str]] = {}
        while time.monotonic() < deadline:
            got = {n: [x for x in p.read_text().splitlines() if "CEF:0" in x] if p.exists() else []
                   for n, p in out.items()}
            if len(got["udp"]) >= 2 and len(got["tcp"]) >= 2 and len(got["tls"]) >= 3:
                break
            time.sleep(0.1)
    finally:
        proc.terminate()
        log = proc.communicate(timeout=20)[0]
    assert len(got["udp"]) == 2 and len(got["tcp"]) == 2 and len(got["tls"]) == 3, (got, log)
    for cef in got["udp"] + got["tcp"]:
        assert cef.lstrip().startswith("CEF:0|seclake|seclake|"), cef
        assert "|notify-failed-logon|" in cef and "|8|" in cef  # score 5000 is serious: severity 8
        assert re.search(r"cs1=10\.9\.0\.[12] ", cef) and "cs4=T1110" in cef
        assert "request=https://seclake.example.org/summaries?q\\=" in cef
    assert any("summary-test" in x for x in got["tls"])
