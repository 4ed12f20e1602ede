"""Syslog listeners on a real server, fed by real senders: util-linux ``logger``
over UDP and TCP (octet counting and newline framing), and a TLS client."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time

import pytest

from seclake.service import listeners as listeners_module
from seclake.service.listeners import ListenerSpec, _Framer

SEARCH = "ds/get_index_zoom_histogram_lv3"


def _free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _search(server, token, query, limit=50, data_type="event"):
    kargs = {"partition": "default", "dataType": data_type,
             "options": {"dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": limit,
                         "range_from": 0, "range_to": 4_102_444_800_000}}
    return server.call(SEARCH, kargs, token)


def _wait(server, token, query, n, timeout=10.0, data_type="event"):
    deadline = time.monotonic() + timeout
    while True:
        res = _search(server, token, query, data_type=data_type)
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
    from seclake.api.reply import SourcesReply

    SourcesReply.model_validate(listed)  # the documented shape
    rows = {(r["listener"], r["address"]): r for r in listed["sources"]}
    assert rows[(f"syslog+udp://127.0.0.1:{ports['udp']}", "127.0.0.1")]["records"] == 5
    assert rows[(f"syslog+tcp://127.0.0.1:{ports['tcp']}", "127.0.0.1")]["records"] == 2
    assert all(r["lastSeen"] > 0 and r["bytes"] > 0 for r in rows.values())
    assert len(listed["listeners"]) == 3
    metrics = srv.http.get("/metrics").text
    assert f'seclake_records_total{{dataset="event",outcome="accepted",path="syslog+udp://127.0.0.1:{ports["udp"]}"}} 5.0' in metrics


ROOT_LOGIN = "<38>Nov 21 10:00:{s:02d} bastion sshd[411]: Accepted password for root from 198.51.100.4 port 40022 ssh2 n={n}"


@pytest.mark.parametrize("parse_workers", [0, 1])
def test_a_busy_tcp_sender_s_reads_are_parsed_in_the_parse_workers_as_in_the_listener(start_server, parse_workers):
    # ~170 KiB, read in one or a few reads: from 32 KiB on, a node with parse workers parses one there; the
    # records, the sender's address, the rules' behaviors and the rejected line come out the same.
    port = _free_port()
    srv = start_server(parse_workers=parse_workers, listeners=[f"syslog+tcp://127.0.0.1:{port}?vendor=linux&customer=acme"])
    token = srv.login()
    lines = [ROOT_LOGIN.format(s=n % 60, n=n) + " " + "x" * 100 for n in range(800)]
    lines.insert(150, '{"@message": "not an object", "@fields": 3}')  # rejected: @fields must be an object
    payload = ("\n".join(lines) + "\n").encode()
    assert 160 * 1024 < len(payload) < listeners_module.READ_BYTES
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(payload)
    found = _wait(srv, token, "@source:linux", 800, timeout=30)
    assert found["hits"]["total"] == 800
    assert all(h["_source"]["@fields"]["log"]["source"]["address"] == "127.0.0.1"
               and h["_source"]["@customer"] == "acme" for h in found["hits"]["hits"])
    options = {"searchStr": "behaviorRule:ssh-privileged-password-login", "range_field": "timestamp",
               "range_from": 0, "range_to": int(time.time() * 1000) + 86_400_000, "fetchLimit": 1}
    deadline = time.monotonic() + 10
    while (behaviors := srv.call("ds/fsm_behavior_search", {"options": options}, token)["hits"]["total"]) < 800:
        assert time.monotonic() < deadline, behaviors
        time.sleep(0.1)
    assert behaviors == 800  # the starter rule, once per login
    listed = srv.call("ds/collector_list", {}, token)
    (row,) = listed["sources"]
    assert row["records"] == 800 and row["rejected"] == 1
    assert listed["listeners"][0]["faults"] == {"rejected": 1}
    bodies = srv.services.parsers.parsed if srv.services.parsers is not None else 0
    assert (bodies >= 1) == (parse_workers > 0)


def test_a_read_whose_parse_workers_die_twice_is_parsed_in_the_listener_s_thread(start_server, caplog):
    # An import's client is told to send again (Unavailable); a syslog sender cannot be.
    from tests.service.test_parsepool import _killer

    port = _free_port()
    srv = start_server(parse_workers=1, listeners=[f"syslog+tcp://127.0.0.1:{port}?vendor=linux"])
    token = srv.login()
    stop = threading.Event()
    killed = _killer(stop, 2, srv.services.parsers)  # each worker as it starts: the first, then the one sent again
    payload = "".join(ROOT_LOGIN.format(s=n % 60, n=n) + " " + "x" * 100 + "\n" for n in range(800)).encode()
    with caplog.at_level("WARNING", logger="seclake.ingest"), socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(payload)
        assert _wait(srv, token, "@source:linux", 800, timeout=60)["hits"]["total"] == 800
    stop.set()
    assert len(killed) == 2 and srv.services.parsers.lost == 2
    assert "parsed in the listener's thread" in caplog.text


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


def test_hostile_senders_cost_a_count_not_the_listener(syslog_server):
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
    # Counted, and the server still answers (connection floods: the tests at the end of this file).
    rows = {x["listener"]: x for x in srv.call("ds/collector_list", {}, srv.token)["listeners"]}
    assert rows[f"syslog+tcp://127.0.0.1:{ports['tcp']}"]["faults"]["bad_frames"] == 1
    assert srv.http.get("/healthz").status_code == 200


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


def test_a_listener_s_charset_reads_its_frames_and_a_bom_says_utf8():
    latin = _Framer("iso8859-1")
    assert latin.feed("<13>user josé from München\n".encode("latin-1")) == [("<13>user josé from München", False)]
    counted = _Framer("cp1252")
    frame = "<13>paid 5 € to Zoë".encode("cp1252")
    assert counted.feed(b"%d " % len(frame) + frame) == [("<13>paid 5 € to Zoë", False)]
    # RFC 5424: a MSG that starts with the BOM is UTF-8, whatever the listener reads.
    bom = b"<13>1 2026-11-21T10:00:00Z host app - - - \xef\xbb\xbf" + "user josé".encode()
    assert _Framer("iso8859-1").feed(bom + b"\n")[0][0].endswith("user josé")
    # Codecs that decode to lone surrogates (which no JSON encoder takes): replaced.
    assert _Framer("utf-7").feed(b"<13>x +2AA- y\n") == [("<13>x ? y", False)]
    assert _Framer("raw-unicode-escape").feed(b"<13>x \\ud800 y\n") == [("<13>x ? y", False)]
    # The default stays UTF-8; bytes it cannot read become U+FFFD, never an error.
    assert _Framer().feed("josé\n".encode("latin-1")) == [("jos\ufffd", False)]


def test_latin1_and_cp1252_senders_reach_search_with_their_letters(start_server):
    """logger sends its message's bytes as given: here Latin-1 and cp1252, as
    devices and Windows forwarders set up in those encodings do."""
    udp, tcp = _free_port(socket.SOCK_DGRAM), _free_port()
    srv = start_server(listeners=[f"syslog+udp://127.0.0.1:{udp}?vendor=latin&charset=latin1",
                                  f"syslog+tcp://127.0.0.1:{tcp}?vendor=windows&charset=windows-1252"])
    token = srv.login()
    message = "Failed password for invalid user josé from 203.0.113.9 port 22 ssh2 site=München"
    done = subprocess.run([b"logger", b"-n", b"127.0.0.1", b"-P", str(udp).encode(), b"-d", b"--rfc3164",
                           b"-t", b"sshd", message.encode("latin-1")], capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([b"logger", b"-n", b"127.0.0.1", b"-P", str(tcp).encode(), b"-T", b"--octet-count",
                           b"-t", b"fw", "amount=5€ owner=Zoë".encode("cp1252")], capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    latin = _wait(srv, token, "@source:latin", 1)["hits"]["hits"]
    assert len(latin) == 1 and "josé" in latin[0]["_source"]["@message"] and "München" in latin[0]["_source"]["@message"]
    assert _wait(srv, token, "@source:latin AND user.name:josé", 1)["hits"]["total"] == 1
    windows = _wait(srv, token, "@source:windows", 1)["hits"]["hits"]
    assert len(windows) == 1 and windows[0]["_source"]["@fields"]["owner"] == "Zoë"
    assert windows[0]["_source"]["@fields"]["amount"] == "5€"
    listed = {row["listener"]: row for row in srv.call("ds/collector_list", {}, token)["listeners"]}
    assert listed[f"syslog+udp://127.0.0.1:{udp}"]["charset"] == "iso8859-1"


def test_a_sender_cannot_make_a_codec_s_lone_surrogates_cost_the_batch(start_server):
    """raw_unicode_escape reads the text \\ud800 as a lone surrogate, which the
    log's JSON cannot hold: replaced, the message and the others of its datagram are kept."""
    udp = _free_port(socket.SOCK_DGRAM)
    srv = start_server(listeners=[f"syslog+udp://127.0.0.1:{udp}?vendor=escaped&charset=raw_unicode_escape"])
    token = srv.login()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"<13>Nov 21 10:00:00 h app: bad \\ud800 here\n<13>Nov 21 10:00:01 h app: fine \\u00e9t\\u00e9", ("127.0.0.1", udp))
    hits = _wait(srv, token, "@source:escaped", 2)["hits"]["hits"]
    messages = sorted(h["_source"]["@message"] for h in hits)
    assert len(messages) == 2, messages
    assert messages[0].endswith("bad ? here") and messages[1].endswith("fine été")


@pytest.mark.parametrize("url,problem", [
    ("syslog+udp://h:1?charset=klingon", "not a text encoding"), ("syslog+udp://h:1?charset=base64", "not a text encoding"),
    ("syslog+tcp://h:1?charset=utf-16", "newlines and digits"), ("syslog+tcp://h:1?charset=utf-32-le", "newlines and digits"),
    ("netflow://h:1?charset=latin1", "syslog listeners"),
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


def test_rsyslog_relaying_a_file_burst_is_parsed_in_the_parse_workers(start_server, tmp_path):
    """A relay with a backlog (Debian's rsyslog reading a file of 4,000 sshd lines with imfile,
    forwarding them over one TCP connection, octet-counted RFC 5424) sends faster than one
    interpreter parses: reads of 32 KiB and more go to the server's parse worker, and every
    line, its sender's address and the starter rule's behavior come out as from the thread."""
    rsyslogd = _needs("rsyslogd")
    port = _free_port()
    srv = start_server(parse_workers=1, listeners=[f"syslog+tcp://127.0.0.1:{port}?vendor=linux&customer=acme"])
    token = srv.login()
    work = tmp_path / "rsyslog"
    work.mkdir()
    source = work / "auth.log"
    n = 4000
    # imfile sends each line as the message of an RFC 5424 frame whose app-name is the tag.
    source.write_text("".join(ROOT_LOGIN.split(": ", 1)[1].format(n=i) + " " + "x" * 120 + "\n" for i in range(n)))
    conf = work / "rsyslog.conf"
    conf.write_text(f"""
global(workDirectory="{work}" maxMessageSize="8k")
module(load="imfile" mode="polling" PollingInterval="1")
input(type="imfile" File="{source}" Tag="sshd[411]:" Severity="info" Facility="auth")
action(type="omfwd" target="127.0.0.1" port="{port}" protocol="tcp" TCP_Framing="octet-counted"
       template="RSYSLOG_SyslogProtocol23Format")
""")
    proc = subprocess.Popen([rsyslogd, "-n", "-f", str(conf), "-i", str(work / "pid")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        found = _wait(srv, token, "@source:linux AND root", n, timeout=60)
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert found["hits"]["total"] == n, output
    assert all(h["_source"]["@fields"]["log"]["source"]["address"] == "127.0.0.1"
               and h["_source"]["@customer"] == "acme" for h in found["hits"]["hits"])
    options = {"searchStr": "behaviorRule:ssh-privileged-password-login", "range_field": "timestamp",
               "range_from": 0, "range_to": int(time.time() * 1000) + 86_400_000, "fetchLimit": 1}
    deadline = time.monotonic() + 10
    while (behaviors := srv.call("ds/fsm_behavior_search", {"options": options}, token)["hits"]["total"]) < n:
        assert time.monotonic() < deadline, behaviors
        time.sleep(0.1)
    assert behaviors == n
    (row,) = srv.call("ds/collector_list", {}, token)["sources"]
    assert row["records"] == n and row["rejected"] == 0
    assert srv.services.parsers.parsed >= 1  # at least one read went to the parse worker


# -- NetFlow / IPFIX from softflowd ------------------------------------------------------------


def _checksum(data: bytes) -> int:
    import struct

    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def _packet(src: str, dst: str, sport: int, dport: int, proto: int, payload: bytes = b"x" * 100) -> bytes:
    """An Ethernet frame with an IPv4 TCP or UDP packet (what a capture holds)."""
    import struct

    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + payload
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, proto, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return bytes.fromhex("001122334455") + bytes.fromhex("66778899aabb") + b"\x08\x00" + ip + l4


def _pcap(path, packets: list[bytes], start_s: int) -> None:
    """A libpcap file, one packet per second from ``start_s``."""
    import struct

    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, p in enumerate(packets):
            f.write(struct.pack("<IIII", start_s + i, 0, len(p), len(p)) + p)


@pytest.mark.parametrize("version", ["5", "9", "10"])
def test_softflowd_exports_netflow_v5_v9_and_ipfix_into_flow_search(start_server, tmp_path, version):
    softflowd = _needs("softflowd")
    port = _free_port(socket.SOCK_DGRAM)
    srv = start_server(listeners=[f"netflow://127.0.0.1:{port}?vendor=edge&customer=acme"])
    token = srv.login()
    # softflowd reports times relative to its own start (uptime counters):
    # a capture from the next seconds keeps them positive.
    start_s = int(time.time()) + 5
    packets = [_packet("10.1.0.5", "203.0.113.9", 40000 + i % 3, 443, 6) for i in range(9)]
    packets += [_packet("10.1.0.6", "198.51.100.53", 5353, 53, 17) for _ in range(2)]
    _pcap(tmp_path / "capture.pcap", packets, start_s)
    done = subprocess.run([softflowd, "-r", str(tmp_path / "capture.pcap"), "-n", f"127.0.0.1:{port}", "-v", version,
                           # No control socket: with one, softflowd may wait on it after the capture ends.
                           "-d", "-p", str(tmp_path / "pid"), "-c", "none"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    res = _wait(srv, token, "@source:edge", 4, data_type="flow")
    # softflowd tracks 4 flows: three TCP source ports and one UDP conversation.
    assert res["hits"]["total"] == 4, res["hits"]
    flows = {(h["_source"]["@metaflow"]["flow"]["sp"], h["_source"]["@metaflow"]["flow"]["prot"]): h["_source"]
             for h in res["hits"]["hits"]}
    dns = flows[(5353, 17)]
    assert dns["@metaflow"]["flow"] | {"time_ms": 0} == dns["@metaflow"]["flow"] | {
        "sip": "10.1.0.6", "dip": "198.51.100.53", "dp": 53, "txB": 2 * 128, "txP": 2, "totalB": 256, "dur": 1000,
        "time_ms": 0}
    # The flow starts when its first packet was captured.
    assert abs(dns["@timestamp"] - (start_s + 9) * 1000) < 2000
    assert dns["@customer"] == "acme" and dns["@sender"] == "127.0.0.1"
    tcp = flows[(40000, 6)]["@metaflow"]["flow"]
    assert (tcp["txP"], tcp["dp"], tcp["dur"]) == (3, 443, 6000)
    # Queries on flow fields work on them like on any flow.
    assert _search(srv, token, "@source:edge AND dp:443 AND totalB:>400", data_type="flow")["hits"]["total"] == 3
    listed = srv.call("ds/collector_list", {}, token)["sources"]
    assert [(r["listener"], r["records"]) for r in listed] == [(f"netflow://127.0.0.1:{port}", 4)]


def test_netflow_data_before_its_template_waits_then_is_dropped_and_garbage_is_counted(start_server, monkeypatch):
    import struct

    from seclake.ingest import netflow

    port = _free_port(socket.SOCK_DGRAM)
    srv = start_server(listeners=[f"netflow://127.0.0.1:{port}"])
    token = srv.login()
    now = int(time.time())
    header = struct.pack("!HHIIII", 9, 1, 1000, now, 1, 7)
    template = struct.pack("!HHHH", 0, 4 + 4 + 3 * 4, 300, 3) + struct.pack("!HHHHHH", 8, 4, 12, 4, 1, 4)
    data = struct.pack("!HH", 300, 4 + 12) + socket.inet_aton("192.0.2.1") + socket.inet_aton("192.0.2.2") + struct.pack("!I", 999)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(header + data, ("127.0.0.1", port))  # data first: held
        s.sendto(b"\x00\x07garbage", ("127.0.0.1", port))  # not NetFlow: counted
        time.sleep(0.3)
        s.sendto(header + template, ("127.0.0.1", port))  # the template releases it
    res = _wait(srv, token, "sip:192.0.2.1", 1, data_type="flow")
    assert res["hits"]["total"] == 1 and res["hits"]["hits"][0]["_source"]["@metaflow"]["flow"]["totalB"] == 999
    # Data of a template that never comes is dropped after the hold, and counted.
    monkeypatch.setattr(netflow, "HOLD_SECONDS", 0.2)
    orphan = struct.pack("!HH", 301, 4 + 12) + bytes(12)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(header + orphan, ("127.0.0.1", port))
        time.sleep(0.5)
        s.sendto(header, ("127.0.0.1", port))  # any later datagram expires what waited too long
    deadline = time.monotonic() + 5
    while True:
        row = srv.call("ds/collector_list", {}, token)
        faults = row["listeners"][0]["faults"]
        if faults.get("data_without_template") or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert faults["bad_datagrams"] == 1 and faults["data_without_template"] == 1
    assert row["sources"][0]["dropped"] == 1 and row["sources"][0]["rejected"] == 1


def test_tls_with_ca_takes_only_senders_with_a_certificate_it_signed(start_server, tmp_path):
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    ca_key, ca, key, csr, cert = (tmp_path / n for n in ("ca.key", "ca.pem", "c.key", "c.csr", "c.pem"))
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=senders-ca")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=fw1")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out", str(cert),
        "-days", "2")
    server_key, server_cert = tmp_path / "s.key", tmp_path / "s.pem"
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(server_key), "-out", str(server_cert),
        "-days", "2", "-subj", "/CN=localhost")
    port = _free_port()
    name = f"syslog+tls://127.0.0.1:{port}"
    srv = start_server(listeners=[f"{name}?vendor=mtls&cert={server_cert}&key={server_key}&ca={ca}"])
    token = srv.login()

    def send(with_cert: bool) -> None:
        context = ssl.create_default_context(cafile=str(server_cert))
        if with_cert:
            context.load_cert_chain(str(cert), str(key))
        with socket.create_connection(("127.0.0.1", port)) as raw, context.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(f"<134>Nov 20 10:00:00 fw1 app: signed={with_cert}\n".encode())
            s.settimeout(2)
            try:
                s.recv(1)  # TLS 1.3: the server's verdict on the certificate arrives after the handshake
            except (ssl.SSLError, ConnectionError, TimeoutError, OSError):
                pass

    send(with_cert=False)
    send(with_cert=True)
    res = _wait(srv, token, "@source:mtls", 1)
    assert [h["_source"]["@fields"].get("signed") for h in res["hits"]["hits"]] == ["True"]
    time.sleep(0.5)
    assert _search(srv, token, "@source:mtls")["hits"]["total"] == 1
    faults = {x["listener"]: x["faults"] for x in srv.call("ds/collector_list", {}, token)["listeners"]}
    assert faults[name]["tls_handshake_failures"] == 1


def test_one_shot_commands_never_bind_the_listeners_of_the_settings(tmp_path):
    """`seclake import` beside a running server reads the same settings: it must
    not try to take the server's listener ports."""
    import os
    import sys

    from tests.api.test_durability import ROOT

    with socket.socket() as held:  # the "server" holds the port
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        (tmp_path / "lines.log").write_text("<13>Nov 20 10:00:00 h app: one line\n")
        env = dict(os.environ, SECLAKE_LISTENERS=f"syslog+tcp://127.0.0.1:{port}", SECLAKE_ADMIN_PASSWORD="admin-test-password")
        done = subprocess.run([sys.executable, "-m", "seclake", "import", str(tmp_path / "lines.log"), "--vendor", "x",
                               "--data-dir", str(tmp_path / "data")], env=env, capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


# -- connection floods (issue 39, finding 2) ---------------------------------------


def _connect_from(address: str, port: int) -> socket.socket:
    """A TCP connection to the listener from another loopback address (127.0.0.0/8 is all loopback on Linux)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((address, 0))
    s.connect(("127.0.0.1", port))
    return s


def _listener_row(srv, token, port, ready, timeout=10.0):
    """The TCP listener's row of ds/collector_list once ``ready(row)`` holds (or the deadline passed)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = {x["listener"]: x for x in srv.call("ds/collector_list", {}, token)["listeners"]}
        row = rows[f"syslog+tcp://127.0.0.1:{port}"]
        if ready(row) or time.monotonic() > deadline:
            return row
        time.sleep(0.05)


def _closed_by_server(s: socket.socket, timeout: float) -> bool:
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionError:
        return True


def test_a_connection_flood_cannot_keep_out_a_logger_sender_and_loses_nothing_it_sent(start_server, monkeypatch):
    # The flood, scaled down: the listener's cap at 40 (was 1,000), 60 connections from one address
    # holding an unfinished message each. A real logger connecting meanwhile must be served, and every byte the
    # listener took from the flood is stored too (closing a connection keeps its unfinished frame, as an EOF does).
    monkeypatch.setattr(listeners_module, "MAX_CONNECTIONS", 40)
    port = _free_port()
    srv = start_server(listeners=[f"syslog+tcp://127.0.0.1:{port}?vendor=linux"])
    token = srv.login()
    flood = []
    try:
        for i in range(60):
            s = _connect_from("127.0.0.2", port)
            s.sendall(f"<13>Nov 21 10:00:00 h flood: unfinished tag=flood{i}".encode())
            flood.append(s)
        row = _listener_row(srv, token, port, lambda r: sum(r["faults"].values()) >= 20)
        assert row["connections"] <= 40, row
        done = subprocess.run(["logger", "-n", "127.0.0.1", "-P", str(port), "-T", "--octet-count", "-t", "honest",
                               "tag=honest sent during the flood"], capture_output=True, text=True, timeout=30)
        honest = _wait(srv, token, "@source:linux AND honest", 1)["hits"]["total"]
        assert honest == 1, f"the logger sender's message was not stored (logger: rc {done.returncode} {done.stderr})"
        # The connections closed to make room kept what they had sent.
        assert _wait(srv, token, "@source:linux AND unfinished", 20)["hits"]["total"] >= 20
        row = _listener_row(srv, token, port, lambda r: True)
        assert row["connections"] <= 40 and row["faults"].get("evicted_listener_full", 0) >= 20, row
        assert "connections_refused" not in row["faults"], row
        metrics = srv.http.get("/metrics").text
        assert f'seclake_listener_connections{{listener="syslog+tcp://127.0.0.1:{port}"}}' in metrics
        assert (f'seclake_listener_faults_total{{kind="evicted_listener_full",listener="syslog+tcp://127.0.0.1:{port}"}}'
                in metrics)
    finally:
        for s in flood:
            s.close()
    # Every flood connection's message is stored: none taken by the kernel and then lost.
    assert _wait(srv, token, "@source:linux AND unfinished", 60)["hits"]["total"] == 60


def test_one_address_cannot_take_another_s_connections_and_silent_ones_close_in_seconds(start_server):
    port = _free_port()
    srv = start_server(listeners=[f"syslog+tcp://127.0.0.1:{port}?vendor=linux"
                                  "&max_per_address=10&first_frame_seconds=2"])
    token = srv.login()
    flood, others = [], []
    try:
        for i in range(30):
            s = _connect_from("127.0.0.2", port)
            s.sendall(f"<13>Nov 21 10:00:00 h flood: unfinished tag=flood{i}".encode())
            flood.append(s)
        for i in range(3):
            s = _connect_from("127.0.0.3", port)
            s.sendall(f"<13>Nov 21 10:00:00 h other: from another address tag=other{i}".encode())
            others.append(s)
        row = _listener_row(srv, token, port, lambda r: r["faults"].get("evicted_per_address", 0) >= 20
                            and r["connections"] == 13)
        assert row["connections"] == 13 and row["faults"]["evicted_per_address"] == 20, row
        # The other address's connections are still open: they finish their message, and send one more later.
        for s in others:
            s.sendall(b"\n")
        # The flood's silent connections (no whole message) are closed after first_frame_seconds, not 10 minutes;
        # the connections that sent a message stay open.
        assert all(_closed_by_server(s, 5) for s in flood[-10:])
        for i, s in enumerate(others):
            s.sendall(f"<13>Nov 21 10:00:05 h other: later tag=later{i}\n".encode())
        assert _wait(srv, token, "@source:linux AND later", 3)["hits"]["total"] == 3
        assert _wait(srv, token, "@source:linux AND other", 6)["hits"]["total"] == 6
        assert _wait(srv, token, "@source:linux AND unfinished", 30)["hits"]["total"] == 30
        row = _listener_row(srv, token, port, lambda r: r["connections"] == 3)
        assert row["connections"] == 3 and row["faults"]["first_frame_timeouts"] == 10, row
    finally:
        for s in flood + others:
            s.close()


@pytest.mark.parametrize("url,problem", [
    ("syslog+tcp://h:1?max_connections=0", "max_connections"), ("syslog+tcp://h:1?max_per_address=x", "max_per_address"),
    ("syslog+tcp://h:1?first_frame_seconds=-1", "first_frame_seconds"), ("syslog+udp://h:1?max_connections=5", "TCP"),
    ("syslog+tls://h:1?cert=c&key=k&idle_seconds=nan", "idle_seconds"),
])
def test_a_bad_connection_limit_says_what_is_wrong(url, problem):
    with pytest.raises(ValueError, match=problem):
        ListenerSpec.parse(url)


def test_an_unfinished_frame_is_kept_at_the_end_of_its_stream():
    lines = _Framer()
    assert lines.feed(b"<13>half a li") == [] and lines.end() == [("<13>half a li", False)]
    octets = _Framer()
    assert octets.feed(b"30 <13>only twenty") == [] and octets.end() == [("<13>only twenty", True)]
    digits = _Framer()
    assert digits.feed(b"30") == [] and digits.end() == []


def test_a_flood_of_faults_is_logged_once_a_minute_with_its_count(monkeypatch, caplog):
    from seclake.service.listeners import Listeners

    spec = ListenerSpec.parse("syslog+tcp://127.0.0.1:1")
    listeners = Listeners([spec], ingestion=None)
    try:
        with caplog.at_level("WARNING", logger="seclake.listeners"):
            for i in range(1000):
                listeners._fault(spec, "evicted_per_address", f"192.0.2.1: closed ({i})")
            assert len(caplog.records) == 1 and listeners.faults[spec.name]["evicted_per_address"] == 1000
            monkeypatch.setattr(listeners_module, "FAULT_LOG_SECONDS", 0.0)
            listeners._fault(spec, "evicted_per_address", "192.0.2.1: closed (last)")
        assert len(caplog.records) == 2 and "(1000 since" in caplog.records[1].getMessage()
    finally:
        listeners.stop()
