"""Syslog listeners on a real server, fed by real senders: util-linux ``logger``
over UDP and TCP (octet counting and newline framing), and a TLS client."""

from __future__ import annotations

import socket
import ssl
import subprocess
import time

import pytest

from seclake.service import listeners as listeners_module
from seclake.service.listeners import ListenerSpec, _Framer

SEARCH = "ds/get_index_zoom_histogram_lv3"


def _free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _search(server, token, query, limit=50):
    kargs = {"partition": "default", "dataType": "event",
             "options": {"dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": limit,
                         "range_from": 0, "range_to": 4_102_444_800_000}}
    return server.call(SEARCH, kargs, token)


def _wait(server, token, query, n, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        res = _search(server, token, query)
        if res["hits"]["total"] >= n or time.monotonic() > deadline:
            return res
        time.sleep(0.1)


def _logger(*args: str) -> None:
    done = subprocess.run(["logger", *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def certs(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture
def syslog_server(start_server, certs):
    udp, tcp, tls = _free_port(socket.SOCK_DGRAM), _free_port(), _free_port()
    cert, key = certs
    server = start_server(listeners=[
        f"syslog+udp://127.0.0.1:{udp}?vendor=linux&customer=acme",
        f"syslog+tcp://127.0.0.1:{tcp}?vendor=fortigate&customer=globex",
        f"syslog+tls://127.0.0.1:{tls}?vendor=secure&cert={cert}&key={key}",
    ])
    server.ports = {"udp": udp, "tcp": tcp, "tls": tls}
    server.token = server.login()
    return server


def test_logger_over_udp_and_tcp_reaches_search_with_customer_source_and_sender(syslog_server):
    srv, ports = syslog_server, syslog_server.ports
    for i in range(5):
        _logger("-n", "127.0.0.1", "-P", str(ports["udp"]), "-d", "--rfc3164", "-t", "sshd",
                f"Failed password for invalid user admin{i} from 203.0.113.9 port 22 ssh2")
    _logger("-n", "127.0.0.1", "-P", str(ports["tcp"]), "-T", "--octet-count", "-t", "fw",
            'date=2026-11-20 time=10:00:00 devname="fg1" srcip=198.51.100.7 dstip=10.0.0.5 action="deny" tag=octets')
    _logger("-n", "127.0.0.1", "-P", str(ports["tcp"]), "-T", "--rfc5424", "-t", "fw",
            'srcip=198.51.100.8 action="accept" tag=newline')
    udp = _wait(srv, srv.token, "@source:linux", 5)
    assert udp["hits"]["total"] == 5
    sources = [h["_source"] for h in udp["hits"]["hits"]]
    assert all(s["@customer"] == "acme" and s["@fields"]["log"]["source"]["address"] == "127.0.0.1" for s in sources)
    assert {s["@fields"].get("program") for s in sources} == {"sshd"}
    tcp = _wait(srv, srv.token, "@source:fortigate", 2)
    assert tcp["hits"]["total"] == 2
    by_tag = {h["_source"]["@fields"].get("tag"): h["_source"] for h in tcp["hits"]["hits"]}
    assert set(by_tag) == {"octets", "newline"}, by_tag
    assert by_tag["octets"]["@fields"]["srcip"] == "198.51.100.7" and by_tag["octets"]["@customer"] == "globex"
    # The sources call: one row per sending address and listener.
    listed = srv.call("ds/collector_list", {}, srv.token)
    from seclake.api.schema import SourcesReply

    SourcesReply.model_validate(listed)  # the documented shape
    rows = {(r["listener"], r["address"]): r for r in listed["sources"]}
    assert rows[(f"syslog+udp://127.0.0.1:{ports['udp']}", "127.0.0.1")]["records"] == 5
    assert rows[(f"syslog+tcp://127.0.0.1:{ports['tcp']}", "127.0.0.1")]["records"] == 2
    assert all(r["lastSeen"] > 0 and r["bytes"] > 0 for r in rows.values())
    assert len(listed["listeners"]) == 3
    metrics = srv.http.get("/metrics").text
    assert f'seclake_records_total{{dataset="event",outcome="accepted",path="syslog+udp://127.0.0.1:{ports["udp"]}"}} 5.0' in metrics


def test_tls_delivers_and_a_failed_handshake_is_counted(syslog_server, certs):
    srv, port = syslog_server, syslog_server.ports["tls"]
    context = ssl.create_default_context(cafile=str(certs[0]))
    with socket.create_connection(("127.0.0.1", port)) as raw, context.wrap_socket(raw, server_hostname="localhost") as s:
        s.sendall(b"<134>Nov 20 10:00:00 vpn1 openvpn[7]: user jdoe connected tag=tls1\n"
                  b"<134>Nov 20 10:00:01 vpn1 openvpn[7]: user jdoe disconnected tag=tls1\n")
    assert _wait(srv, srv.token, "@source:secure", 2)["hits"]["total"] == 2
    # Plain text to the TLS port: the handshake fails, the listener goes on.
    with socket.create_connection(("127.0.0.1", port)) as plain:
        plain.sendall(b"<134>not tls at all\n" * 10)
        plain.settimeout(5)
        try:
            plain.recv(100)
        except (ConnectionError, TimeoutError, OSError):
            pass
    deadline = time.monotonic() + 5
    while True:
        faults = {x["listener"]: x["faults"] for x in srv.call("ds/collector_list", {}, srv.token)["listeners"]}
        if faults[f"syslog+tls://127.0.0.1:{port}"].get("tls_handshake_failures") or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert faults[f"syslog+tls://127.0.0.1:{port}"]["tls_handshake_failures"] == 1
    with socket.create_connection(("127.0.0.1", port)) as raw, context.wrap_socket(raw, server_hostname="localhost") as s:
        s.sendall(b"<134>Nov 20 10:00:02 vpn1 openvpn[7]: still here tag=tls2\n")
    assert _wait(srv, srv.token, '@source:secure AND "still here"', 1)["hits"]["total"] == 1


def test_hostile_senders_cost_a_count_not_the_listener(syslog_server, monkeypatch):
    srv, ports = syslog_server, syslog_server.ports
    # Binary garbage and an empty datagram over UDP: kept raw or skipped, never fatal.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(bytes(range(256)) + b" tag=garbage", ("127.0.0.1", ports["udp"]))
        s.sendto(b"", ("127.0.0.1", ports["udp"]))
    garbage = _wait(srv, srv.token, "@source:linux AND garbage", 1)["hits"]
    assert garbage["total"] == 1 and garbage["hits"][0]["_source"]["@customer"] == "acme"
    # A bad octet count ends that connection only; an overlong newline frame is cut.
    with socket.create_connection(("127.0.0.1", ports["tcp"])) as s:
        s.sendall(b"99999999 " + b"x" * 100)
    with socket.create_connection(("127.0.0.1", ports["tcp"])) as s:
        s.sendall(b"<13>Nov 20 10:00:00 h p: long tag=long " + b"y" * (200 * 1024) + b"\n<13>Nov 20 10:00:00 h p: after tag=after\n")
    assert _wait(srv, srv.token, "@source:fortigate AND after", 1)["hits"]["total"] == 1
    long = _search(srv, srv.token, "@source:fortigate AND long")["hits"]
    assert long["total"] == 1 and len(long["hits"][0]["_source"]["@message"]) <= 64 * 1024
    # A flood of connections beyond the limit is refused and counted; the server still answers.
    monkeypatch.setattr(listeners_module, "MAX_CONNECTIONS", 3)
    held = [socket.create_connection(("127.0.0.1", ports["tcp"])) for _ in range(6)]
    try:
        deadline = time.monotonic() + 5
        while True:
            rows = {x["listener"]: x for x in srv.call("ds/collector_list", {}, srv.token)["listeners"]}
            tcp = rows[f"syslog+tcp://127.0.0.1:{ports['tcp']}"]
            if tcp["faults"].get("connections_refused", 0) >= 3 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert tcp["faults"]["connections_refused"] == 3 and tcp["faults"]["bad_frames"] == 1
        assert srv.http.get("/healthz").status_code == 200
    finally:
        for s in held:
            s.close()


def test_framing_is_told_apart_and_bounded():
    octets = _Framer()
    assert octets.feed(b"11 <13>hello a") == [("<13>hello a", False)]
    assert octets.feed(b"5 he") == [] and octets.feed(b"llo12 ") == [("hello", False)]
    lines = _Framer()
    assert lines.feed(b"<13>one\r\n<13>tw") == [("<13>one", False)]
    assert lines.feed(b"o\n") == [("<13>two", False)]
    assert lines.feed(b"tail") == [] and lines.end() == [("tail", False)]
    bad = _Framer()
    bad.feed(b"12x <13>x")
    assert bad.error and "not a length" in bad.error


@pytest.mark.parametrize("url,problem", [
    ("http://0.0.0.0:514", "scheme"), ("syslog+udp://0.0.0.0", "HOST:PORT"), ("syslog+tcp://h:1?type=x", "type"),
    ("syslog+tls://h:1", "cert=FILE"), ("syslog+udp://h:1?vendor=bad%20name", "vendor"), ("syslog+udp://h:1?x=1", "unknown"),
])
def test_a_bad_listener_url_says_what_is_wrong(url, problem):
    with pytest.raises(ValueError, match=problem):
        ListenerSpec.parse(url)


def _needs(tool: str) -> str:
    import os
    import shutil

    path = shutil.which(tool) or (f"/usr/sbin/{tool}" if os.path.exists(f"/usr/sbin/{tool}") else None)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{tool} is not installed: .ci/run installs it")
        pytest.skip(f"{tool} is not installed (apt-get install rsyslog rsyslog-gnutls)")
    return path


def test_rsyslog_forwards_over_tcp_and_tls(syslog_server, certs, tmp_path):
    """Debian's rsyslog as a relay: it takes messages on UDP and forwards them
    to seclake over TCP (octet-counted, RFC 5424) and over TLS (gtls, the
    server's certificate checked by name)."""
    rsyslogd = _needs("rsyslogd")
    srv, ports = syslog_server, syslog_server.ports
    cert, _key = certs
    inbound = _free_port(socket.SOCK_DGRAM)
    work = tmp_path / "rsyslog"
    work.mkdir()
    conf = work / "rsyslog.conf"
    conf.write_text(f"""
global(workDirectory="{work}" defaultNetstreamDriverCAFile="{cert}")
module(load="imudp")
input(type="imudp" address="127.0.0.1" port="{inbound}")
action(type="omfwd" target="127.0.0.1" port="{ports['tcp']}" protocol="tcp" TCP_Framing="octet-counted"
       template="RSYSLOG_SyslogProtocol23Format")
action(type="omfwd" target="127.0.0.1" port="{ports['tls']}" protocol="tcp" StreamDriver="gtls"
       StreamDriverMode="1" StreamDriverAuthMode="x509/name" StreamDriverPermittedPeers="localhost")
""")
    proc = subprocess.Popen([rsyslogd, "-n", "-f", str(conf), "-i", str(work / "pid")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.0)
        assert proc.poll() is None, proc.communicate()[0]
        for i in range(3):
            _logger("-n", "127.0.0.1", "-P", str(inbound), "-d", "--rfc3164", "-t", "relayed",
                    f"srcip=192.0.2.{i} action=deny via=rsyslog")
        tcp = _wait(srv, srv.token, "@source:fortigate AND via:rsyslog", 3)
        tls = _wait(srv, srv.token, "@source:secure AND via:rsyslog", 3)
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert tcp["hits"]["total"] == 3, output
    assert tls["hits"]["total"] == 3, output
    assert {h["_source"]["@fields"]["srcip"] for h in tcp["hits"]["hits"]} == {"192.0.2.0", "192.0.2.1", "192.0.2.2"}
    assert all(h["_source"]["@customer"] == "globex" for h in tcp["hits"]["hits"])
