"""SigmaHQ's rules beyond Windows, unmodified, through a real server: Entra ID sign-ins (Graph and the
Azure Monitor export), Zeek, Suricata, FortiGate, Okta, CloudTrail, Linux syslog, auditd and Sysmon for Linux, and Sigma's
generic dns, proxy, webserver and firewall categories.

Each rule is read from SigmaHQ's archive (../shared/sigma) and added over the rule API as its YAML text;
the records are written as each vendor writes them (the golden fixtures' lines, changed where a detection
needs another value) and sent through the server's import. Every rule must fire on exactly the records
written for it: once per record, never on the others (all of them go to the same server, so a rule firing
on another source's record is caught too).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.ingest import sysmonlinux
from tests.sigma.sigmahq import extract

FIXTURES = Path(__file__).resolve().parents[1] / "ingest" / "fixtures"
DAO = "ds/eventwatch_bucket_dao"


def _fixture(name: str, line: int) -> str:
    return (FIXTURES / f"{name}.txt").read_text(encoding="utf-8").splitlines()[line - 1]


def _changed(line: str, **changes) -> str:
    record = json.loads(line)
    for dotted, value in changes.items():
        *head, last = dotted.split("__")
        at = record
        for part in head:
            at = at.setdefault(part, {})
        at[last] = value
    return json.dumps(record)


_GRAPH = _fixture("entra", 1)  # Graph's signIn: 50126, invalid password
_EXPORT = _fixture("entra", 2)  # the Azure Monitor export: a successful sign-in under properties
_OKTA = _fixture("okta", 1)
_TRAIL = _fixture("cloudtrail", 1)


def _zeek(**columns) -> str:
    base = {"ts": 1714564900.25, "uid": "CHhAvVGS1DHFjwGM9", "id.orig_h": "10.0.0.66", "id.orig_p": 49833,
            "id.resp_h": "10.0.0.10", "id.resp_p": 445}
    return json.dumps({**base, **columns})


def _zeek_http(uri: str, agent: str, method: str = "GET", server: str = "198.51.100.20") -> str:
    return _zeek(**{"id.resp_h": server, "id.resp_p": 80, "trans_depth": 1, "method": method,
                    "host": "files.example.net", "uri": uri, "version": "1.1", "user_agent": agent,
                    "request_body_len": 0, "response_body_len": 1024, "status_code": 200, "status_msg": "OK",
                    "tags": [], "resp_mime_types": ["application/x-dosexec" if uri.endswith(".exe") else "text/html"]})


def _suricata(event_type: str, body: dict) -> str:
    return json.dumps({"timestamp": "2024-05-01T12:03:00.123456+0000", "flow_id": 1055573302442399, "in_iface": "eth0",
                       "event_type": event_type, "src_ip": "10.16.1.11", "src_port": 51240, "dest_ip": "10.16.1.2",
                       "dest_port": 53 if event_type == "dns" else 80, "proto": "UDP" if event_type == "dns" else "TCP",
                       event_type: body})


_FGT = ('date=2024-05-01 time=12:05:00 devname="FGT60E-HQ" devid="FGT60ETK19000001" eventtime=1714565100000000000 '
        'tz="+0000" ')

# id -> (the vendor named on import, the line as sent)
LINES: dict[str, tuple[str, str]] = {
    # Entra ID: the Graph shape and the Azure Monitor export's
    "entra-graph-lockout": ("azure", _changed(_GRAPH, id="e1", status={"errorCode": 50053, "failureReason": (
        "Account is locked because user tried to sign in too many times with an incorrect user ID or password.")})),
    "entra-export-lockout": ("azure", _fixture("entra", 3)),
    "entra-azurehound": ("azure", _changed(_GRAPH, id="e3", userAgent="azurehound/v2.1.4", status={"errorCode": 0})),
    "entra-mfa-denied": ("azure", _changed(_GRAPH, id="e4", authenticationRequirement="multiFactorAuthentication",
                                           status={"errorCode": 500121, "failureReason": (
                                               "Authentication failed during strong authentication request."),
                                               "additionalDetails": "MFA denied; user declined the authentication"})),
    "entra-risky-single-factor": ("azure", _changed(
        _EXPORT, properties__authenticationRequirement="singleFactorAuthentication", properties__riskState="atRisk",
        properties__deviceDetail={"deviceId": "", "operatingSystem": "Linux", "trustType": ""})),
    "entra-noncompliant": ("azure", _changed(_GRAPH, id="e6", status={"errorCode": 0}, deviceDetail={
        "deviceId": "4b8d2b52-44d3-4b5f-a1a4-5b0b5b3c8a10", "operatingSystem": "Windows 10", "isCompliant": False,
        "isManaged": True, "trustType": "Azure AD joined"})),
    "entra-bad-password": ("azure", _GRAPH),
    "entra-export-success": ("azure", _EXPORT),
    # Zeek: dce_rpc, kerberos, http, dns (with and without the shipper's _path)
    "zeek-efsrpc": ("zeek", _zeek(rtt=0.000521, named_pipe="\\pipe\\lsarpc", endpoint="efsrpc",
                                  operation="EfsRpcOpenFileRaw")),
    "zeek-samr": ("zeek", _zeek(rtt=0.000311, named_pipe="\\pipe\\samr", endpoint="samr", operation="SamrConnect5")),
    "zeek-tgs-rc4": ("zeek", _zeek(**{"id.resp_p": 88, "request_type": "TGS", "client": "jdoe/CORP.LOCAL",
                                      "service": "MSSQLSvc/sql01.corp.local:1433", "success": True,
                                      "cipher": "rc4-hmac", "forwardable": True, "renewable": True})),
    "zeek-tgs-aes": ("zeek", _zeek(**{"id.resp_p": 88, "request_type": "TGS", "client": "jdoe/CORP.LOCAL",
                                      "service": "cifs/fs01.corp.local", "success": True,
                                      "cipher": "aes256-cts-hmac-sha1-96", "forwardable": True, "renewable": True})),
    "zeek-webdav-put": ("zeek", _zeek_http("/share/payload.exe", "Microsoft-WebDAV-MiniRedir/10.0.19041", "PUT")),
    "zeek-rclone": ("zeek", _zeek_http("/bucket/backup.tar", "rclone/v1.66.0")),
    "zeek-traversal": ("zeek", _zeek_http("/cgi-bin/../../../etc/passwd", "curl/8.5.0")),
    "zeek-f5-bash": ("zeek", _zeek_http("/mgmt/tm/util/bash", "python-requests/2.31", "POST")),
    "zeek-dns-telegram": ("zeek", json.dumps({"_path": "dns", **json.loads(_zeek(**{
        "id.resp_p": 53, "proto": "udp", "trans_id": 4711, "query": "api.telegram.org", "qclass": 1,
        "qclass_name": "C_INTERNET", "qtype": 1, "qtype_name": "A", "rcode": 0, "rcode_name": "NOERROR",
        "AA": False, "TC": False, "RD": True, "RA": True, "Z": 0, "answers": ["149.154.167.220"],
        "TTLs": [300.0], "rejected": False}))})),
    "zeek-dns-onion": ("zeek", _zeek(**{"id.resp_p": 53, "proto": "udp", "trans_id": 4712,
                                        "query": "abcdefgh.onion.link", "qtype_name": "A", "rcode_name": "NOERROR",
                                        "Z": 0, "answers": ["203.0.113.200"], "rejected": False})),
    "zeek-rdp-public": ("zeek", _fixture("zeek", 11)),  # an RDP login from the internet
    "zeek-rdp-internal": ("zeek", _changed(_fixture("zeek", 11), **{"id.orig_h": "10.0.0.66", "uid": "Cr2"})),
    # Suricata EVE: the same DNS query and HTTP client as Zeek saw
    "suricata-dns-telegram": ("suricata", _suricata("dns", {"version": 2, "type": "query", "id": 4711,
                                                            "rrname": "api.telegram.org", "rrtype": "A", "tx_id": 0})),
    "suricata-rclone": ("suricata", _suricata("http", {"hostname": "files.example.net", "url": "/bucket/a.tar",
                                                       "http_user_agent": "rclone/v1.66.0", "http_method": "GET",
                                                       "protocol": "HTTP/1.1", "status": 200, "length": 5120})),
    # FortiGate: a configuration change (event) and forwarded traffic
    "fortigate-admin-added": ("fortigate", _FGT + (
        'logid="0100044547" type="event" subtype="system" level="information" vd="root" '
        'logdesc="Object attribute configured" user="admin" ui="GUI(10.0.0.2)" action="Add" cfgtid=1234 '
        'cfgpath="system.admin" cfgobj="helpdesk2" cfgattr="accprofile[super_admin]" '
        'msg="Add system.admin helpdesk2"')),
    "fortigate-ftp-accept": ("fortigate", _FGT + (
        'logid="0000000013" type="traffic" subtype="forward" level="notice" vd="root" srcip=10.0.0.5 '
        'srcport=51234 srcintf="internal" srcintfrole="lan" dstip=198.51.100.21 dstport=21 dstintf="wan1" '
        'dstintfrole="wan" sessionid=1046601 proto=6 action="accept" policyid=1 policytype="policy" '
        'service="FTP" trandisp="snat" duration=12 sentbyte=1200 rcvdbyte=5400 sentpkt=12 rcvdpkt=10')),
    "fortigate-dns-accept": ("fortigate", _fixture("fortigate", 1)),
    # Linux syslog: sshd, sudo, named
    "sshd-corrupted-mac": ("linux", "<38>May  1 12:06:00 web01 sshd[4250]: Corrupted MAC on input."),
    "sshd-accepted": ("linux", "<38>May  1 12:06:01 web01 sshd[4251]: Accepted publickey for deploy from "
                               "10.1.2.3 port 51515 ssh2: RSA SHA256:abc"),
    "sudo-minus-one": ("linux", "<85>May  1 12:06:02 web01 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; "
                                "USER=#-1 ; COMMAND=/bin/bash"),
    "sudo-root": ("linux", "<85>May  1 12:06:03 web01 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; "
                           "USER=root ; COMMAND=/usr/bin/systemctl restart nginx"),
    "named-axfr": ("linux", '<30>May  1 12:06:04 ns1 named[811]: denied AXFR from [203.0.113.5].53530 for '
                            '"corp.example" (not authoritative)'),
    # Okta System Log
    "okta-locked": ("okta", _changed(_OKTA, uuid="o1", eventType="user.account.lock",
                                     displayMessage="Max sign in attempts exceeded")),
    "okta-mfa-reset": ("okta", _changed(_OKTA, uuid="o2", eventType="user.mfa.factor.reset_all",
                                        displayMessage="Reset all factors for user")),
    "okta-token": ("okta", _changed(_OKTA, uuid="o3", eventType="system.api_token.create",
                                    displayMessage="Create API token")),
    "okta-session": ("okta", _OKTA),
    # CloudTrail
    "trail-stop-logging": ("aws", _changed(_TRAIL, eventID="c1", eventSource="cloudtrail.amazonaws.com",
                                           eventName="StopLogging")),
    "trail-access-key": ("aws", _changed(_TRAIL, eventID="c2", eventSource="iam.amazonaws.com",
                                         eventName="CreateAccessKey")),
    "trail-console-login": ("aws", _TRAIL),
    # auditd: a process start (EXECVE with its path; node= as auditd writes it with name_format=hostname)
    "auditd-base64": ("linux", 'node=web01 type=EXECVE msg=audit(1714565200.120:9120): argc=3 '
                               'a0="/usr/bin/base64" a1="-d" a2="/tmp/p.b64"'),
    "auditd-ls": ("linux", 'node=web01 type=EXECVE msg=audit(1714565200.130:9121): argc=2 a0="/usr/bin/ls" a1="-la"'),
    # Sysmon for Linux over syslog: a process start, file creations, connections
    "sysmon-linux-base64": ("linux", sysmonlinux.process("2024-05-01 12:07:00.120", "/usr/bin/base64",
                                                         "base64 -d /tmp/p.b64", rfc="3164")),
    "sysmon-linux-wget-tmp": ("linux", sysmonlinux.file_created("2024-05-01 12:07:01.000", "/usr/bin/wget",
                                                                "/tmp/payload.sh")),
    "sysmon-linux-wget-home": ("linux", sysmonlinux.file_created("2024-05-01 12:07:01.500", "/usr/bin/wget",
                                                                 "/home/alice/notes.txt")),
    "sysmon-linux-bash-out": ("linux", sysmonlinux.connection("2024-05-01 12:07:02.000", "/usr/bin/bash",
                                                              "203.0.113.50", 4444)),
    "sysmon-linux-bash-local": ("linux", sysmonlinux.connection("2024-05-01 12:07:02.500", "/usr/bin/bash",
                                                                "127.0.0.1", 8080)),
}

# SigmaHQ rule file -> the lines it must fire on (each once); every other line must leave it quiet.
RULES: dict[str, tuple[str, ...]] = {
    "rules/cloud/azure/signin_logs/azure_account_lockout.yml": ("entra-graph-lockout", "entra-export-lockout"),
    "rules/cloud/azure/signin_logs/azure_ad_azurehound_discovery.yml": ("entra-azurehound",),
    "rules/cloud/azure/signin_logs/azure_mfa_denies.yml": ("entra-mfa-denied",),
    "rules/cloud/azure/signin_logs/azure_mfa_interrupted.yml": ("entra-mfa-denied",),
    "rules/cloud/azure/signin_logs/azure_ad_risky_sign_ins_with_singlefactorauth_from_unknown_devices.yml": (
        "entra-risky-single-factor",),
    "rules/cloud/azure/signin_logs/azure_ad_sign_ins_from_noncompliant_devices.yml": ("entra-noncompliant",),
    "rules/network/zeek/zeek_dce_rpc_potential_petit_potam_efs_rpc_call.yml": ("zeek-efsrpc",),
    "rules/network/zeek/zeek_susp_kerberos_rc4.yml": ("zeek-tgs-rc4",),
    "rules/network/zeek/zeek_http_webdav_put_request.yml": ("zeek-webdav-put",),
    "rules/network/zeek/zeek_http_executable_download_from_webdav.yml": ("zeek-webdav-put",),
    "rules/network/zeek/zeek_dns_torproxy.yml": ("zeek-dns-onion",),
    "rules/network/zeek/zeek_rdp_public_listener.yml": ("zeek-rdp-public",),
    "rules/network/dns/net_dns_susp_telegram_api.yml": ("zeek-dns-telegram", "suricata-dns-telegram"),
    "rules/web/proxy_generic/proxy_ua_rclone.yml": ("zeek-rclone", "suricata-rclone"),
    "rules/web/proxy_generic/proxy_f5_tm_utility_bash_api_request.yml": ("zeek-f5-bash",),
    "rules/web/webserver_generic/web_path_traversal_exploitation_attempt.yml": ("zeek-traversal",),
    "rules/network/fortinet/fortigate/fortinet_fortigate_new_admin_account_created.yml": ("fortigate-admin-added",),
    "rules/network/firewall/net_firewall_cleartext_protocols.yml": ("fortigate-ftp-accept",),
    "rules/linux/builtin/sshd/lnx_sshd_susp_ssh.yml": ("sshd-corrupted-mac",),
    "rules-emerging-threats/2019/Exploits/CVE-2019-14287/lnx_sudo_exploit_cve_2019_14287.yml": ("sudo-minus-one",),
    "rules/linux/builtin/syslog/lnx_syslog_susp_named.yml": ("named-axfr",),
    "rules/identity/okta/okta_user_account_locked_out.yml": ("okta-locked",),
    "rules/identity/okta/okta_mfa_reset_or_deactivated.yml": ("okta-mfa-reset",),
    "rules/identity/okta/okta_api_token_created.yml": ("okta-token",),
    "rules/cloud/aws/cloudtrail/aws_cloudtrail_disable_logging.yml": ("trail-stop-logging",),
    "rules/cloud/aws/cloudtrail/aws_iam_backdoor_users_keys.yml": ("trail-access-key",),
    "rules/linux/process_creation/proc_creation_lnx_base64_decode.yml": ("auditd-base64", "sysmon-linux-base64"),
    "rules/linux/file_event/file_event_lnx_wget_download_file_in_tmp_dir.yml": ("sysmon-linux-wget-tmp",),
    "rules/linux/network_connection/net_connection_lnx_back_connect_shell_dev.yml": ("sysmon-linux-bash-out",),
}


@pytest.fixture(scope="module")
def fired(tmp_path_factory):
    """rule file -> the behaviors it made, after every line was sent through a real server."""
    from tests.conftest import running_server  # noqa: PLC0415

    root = extract(tmp_path_factory.mktemp("sigmahq"))
    texts = {path: (root / path).read_text(encoding="utf-8") for path in RULES}
    with running_server(tmp_path_factory.mktemp("sigma-sources")) as srv:
        token = srv.login()
        ids = {}
        for path, text in texts.items():
            ids[path] = srv.call(DAO, {"action": "add", "sigma": text}, token=token)["bucket"]["name"]
        by_vendor: dict[str, list[str]] = {}
        for vendor, line in LINES.values():
            by_vendor.setdefault(vendor, []).append(line)
        for vendor, lines in by_vendor.items():
            r = srv.http.post(f"/api/import/{vendor}", content="\n".join(lines).encode(),
                              headers={"Servicetoken": token})
            assert r.json()["response"]["accepted"] == len(lines), (vendor, r.json())
        want = sum(len(lines) for lines in RULES.values())
        deadline = time.monotonic() + 30
        while True:
            hits = _behaviors(srv, token)
            if len(hits) >= want or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        time.sleep(0.5)  # anything more than wanted has had time to come too
        hits = _behaviors(srv, token)
    by_id = {name: path for path, name in ids.items()}
    out: dict[str, list[dict]] = {path: [] for path in RULES}
    for hit in hits:
        out[by_id[hit["behaviorRule"]]].append(hit)
    return out


def _behaviors(srv, token: str) -> list[dict]:
    got = srv.call("ds/fsm_behavior_search", {"options": {
        "range_from": 0, "range_to": 4_000_000_000_000, "fetchLimit": 500, "searchStr": "*"}}, token=token)
    return [h["_source"] for h in got["hits"]["hits"]]


@pytest.mark.parametrize("path", list(RULES), ids=lambda p: Path(p).stem)
def test_sigmahq_rule_fires_on_its_records_only(fired, path):
    behaviors = fired[path]
    assert len(behaviors) == len(RULES[path]), (path, [b.get("key") for b in behaviors])
    assert all(b["key"] for b in behaviors)


def test_keys_follow_the_source(fired):
    """Identity and cloud rules key by the account, network ones by the client address, syslog by the host."""
    keys = {Path(p).stem: sorted(b["key"] for b in bs) for p, bs in fired.items()}
    assert keys["azure_account_lockout"] == ["jane@contoso.com", "testaccount1@contoso.com"]
    assert keys["proxy_ua_rclone"] == ["10.0.0.66", "10.16.1.11"]  # Zeek's originator, Suricata's source
    assert keys["okta_api_token_created"] == ["admin@example.com"]
    assert keys["lnx_syslog_susp_named"] == ["ns1"]
    assert keys["fortinet_fortigate_new_admin_account_created"] == ["admin"]



@pytest.fixture(scope="module")
def sigmahq_root(tmp_path_factory):
    return extract(tmp_path_factory.mktemp("sigmahq-skips"))


@pytest.mark.parametrize(("path", "named"), [
    # Log Analytics compares the list's JSON text ('[]'); seclake keeps a list, not its text
    ("rules/cloud/azure/signin_logs/azure_ad_sign_ins_from_unknown_devices.yml", "NetworkLocationDetails"),
    # no parser seclake has keeps a request's cookies
    ("rules/web/proxy_generic/proxy_hktl_cobalt_strike_malleable_c2_requests.yml", "cs-cookie"),
])
def test_a_field_without_a_counterpart_skips_the_rule_naming_it(sigmahq_root, path, named):
    from seclake.sigma.importer import read  # noqa: PLC0415

    report = read([sigmahq_root / path])
    assert not report.rules
    (skipped,) = report.skipped
    assert skipped.reason == "field not mapped" and named in skipped.detail
