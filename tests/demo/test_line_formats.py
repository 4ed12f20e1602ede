"""Every line is well-formed in its own standard format and carries its own timestamp."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime

import orjson
import pytest

from seclake.demo import DemoLine

from .conftest import is_sysmon

RFC3164 = re.compile(
    r"^<(?P<pri>\d{1,3})>(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?P<day>[ 12]\d|3[01]) "
    r"(?P<time>\d\d:\d\d:\d\d) (?P<host>\S+) (?P<msg>.+)$"
)
RFC5424 = re.compile(
    r"^<(?P<pri>\d{1,3})>1 (?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (?P<host>\S+) (?P<app>\S+) "
    r"(?P<procid>\S+) (?P<msgid>\S+) (?P<sd>-|\[.*?\]) (?P<msg>.+)$"
)
KV = re.compile(r'(\w+)=("[^"]*"|\S+)')
CEF_PIPE = re.compile(r"(?<!\\)\|")
CEF_EXT_KEY = re.compile(r"(?:^| )(\w+)=")
FLOW_FIELDS = {"sip", "dip", "sp", "dp", "prot", "rxB", "txB", "totalB", "rxP", "txP", "dur", "time_ms"}


def _kv(text: str) -> dict[str, str]:
    return {k: v.strip('"') for k, v in KV.findall(text)}


def _by_vendor(week: list[tuple[int, DemoLine]]) -> dict[str, list[tuple[int, DemoLine]]]:
    """Lines by vendor; the Windows source's Sysmon lines under "sysmon" (test_sysmon.py)."""
    out: dict[str, list[tuple[int, DemoLine]]] = defaultdict(list)
    for t, d in week:
        out["sysmon" if is_sysmon(d) else d.vendor].append((t, d))
    return out


@pytest.fixture(scope="module")
def by_vendor(week: list[tuple[int, DemoLine]]) -> dict[str, list[tuple[int, DemoLine]]]:
    return _by_vendor(week)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _bsd(ms: int) -> tuple[str, int, str]:
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%b"), dt.day, dt.strftime("%H:%M:%S")


def _check_3164(t: int, d: DemoLine) -> re.Match[str]:
    m = RFC3164.match(d.line)
    assert m, d.line
    assert int(m["pri"]) <= 191
    assert (m["mon"], int(m["day"]), m["time"]) == _bsd(t), d.line
    return m


def test_fortigate_is_rfc3164_with_a_key_value_body(by_vendor: dict) -> None:
    key_sets = set()
    for t, d in by_vendor["fortigate"]:
        m = _check_3164(t, d)
        kv = _kv(m["msg"])
        key_sets.add(frozenset(kv))
        assert kv["devname"] == m["host"]
        assert kv["date"] + "T" + kv["time"] == _iso(t)[:19]
        assert kv["action"] in {"accept", "deny", "close"}
        assert 13 <= len(kv) <= 21 and kv["logid"] == "0000000013" and kv["devid"].startswith("FG")
        for k in ("srcport", "dstport", "proto", "policyid"):
            int(kv[k])
        if kv["action"] == "deny":
            assert "sentbyte" not in kv
        else:
            assert int(kv["sentbyte"]) >= 0 and int(kv["rcvdbyte"]) >= 0
    assert len(key_sets) >= 2  # denied sessions lack the byte counters


def test_sshd_is_rfc3164_with_the_openssh_messages(by_vendor: dict) -> None:
    kinds = set()
    for t, d in by_vendor["sshd"]:
        m = _check_3164(t, d)
        assert re.fullmatch(r"sshd\[\d+\]: .+", m["msg"]), d.line
        kinds.add(m["msg"].split(": ", 1)[1].split(" for ")[0].split(" from ")[0])
    assert {"Failed password", "Accepted password", "Accepted publickey"} <= kinds
    assert any("Failed password for invalid user admin from" in d.line for _, d in by_vendor["sshd"])


def test_bind_is_rfc5424_with_a_key_value_message(by_vendor: dict) -> None:
    rcodes = set()
    for t, d in by_vendor["bind"]:
        m = RFC5424.match(d.line)
        assert m, d.line
        assert m["ts"] == _iso(t)
        kv = _kv(m["msg"])
        assert {"client", "query", "qtype", "rcode"} <= set(kv)
        rcodes.add(kv["rcode"])
        assert ("answers" in kv) == (kv["rcode"] == "NOERROR")
    assert {"NOERROR", "NXDOMAIN"} <= rcodes


def test_suricata_is_cef_with_eight_header_fields(by_vendor: dict) -> None:
    for t, d in by_vendor["suricata"]:
        parts = CEF_PIPE.split(d.line, maxsplit=7)
        assert len(parts) == 8, d.line
        version, vendor, product, _, sid, _, severity, ext = parts
        assert version == "CEF:0" and vendor == "OISF" and product == "Suricata"
        assert sid.isdigit() and 0 <= int(severity) <= 10
        keys = CEF_EXT_KEY.findall(ext)
        assert ext.startswith(f"rt={t} ")
        assert {"rt", "src", "dst", "proto", "act"} <= set(keys)
        assert len(keys) == len(set(keys))
        assert "|" not in ext


def _json(d: DemoLine) -> dict:
    obj = orjson.loads(d.line)
    assert isinstance(obj, dict)
    assert obj["@customer"] == d.customer
    return obj


def test_squid_is_flat_json_with_some_numbers_as_strings(by_vendor: dict) -> None:
    status_types, keysets = set(), set()
    for t, d in by_vendor["squid"]:
        obj = _json(d)
        assert obj["@timestamp"] == _iso(t)
        assert {"url", "host", "method", "status", "bytes", "category"} <= set(obj)
        int(obj["status"])
        int(obj["bytes"])
        status_types.add(type(obj["status"]))
        keysets.add(frozenset(obj))
    assert status_types == {int, str}
    assert len(keysets) > 1  # some requests carry no user or user agent


def test_windows_is_json_in_the_seclake_event_shape(by_vendor: dict) -> None:
    ids = set()
    for t, d in by_vendor["windows"]:
        obj = _json(d)
        assert obj["@timestamp"] == t
        assert obj["@type"] == "event" and obj["@source"] == "windows"
        f = obj["@fields"]
        ids.add(int(f["EventID"]))
        assert {"EventID", "TargetUserName", "LogonType"} <= set(f)
        if int(f["EventID"]) in (4624, 4625):
            assert "IpAddress" in f
    assert {4624, 4625} <= ids


def test_edr_is_flat_json_process_events(by_vendor: dict) -> None:
    missing = 0
    for t, d in by_vendor["edr"]:
        obj = _json(d)
        assert obj["@timestamp"] == t
        assert {"process", "cmdline", "user", "host"} <= set(obj)
        missing += "sha256" not in obj or "parent" not in obj
    assert missing > 0


def test_okta_is_the_system_log_event_shape(by_vendor: dict) -> None:
    kinds = set()
    for t, d in by_vendor["okta"]:
        obj = orjson.loads(d.line)
        # Okta's own keys only: no seclake envelope, the time in `published`.
        assert not any(k.startswith("@") for k in obj)
        assert obj["published"] == _iso(t)
        assert obj["actor"]["type"] == "User" and obj["actor"]["alternateId"].endswith(f"@{d.customer}.example.com")
        assert obj["outcome"]["result"] in ("SUCCESS", "FAILURE") and obj["client"]["ipAddress"]
        kinds.add(obj["eventType"])
    assert {"user.session.start", "user.authentication.sso", "user.authentication.auth_via_mfa"} <= kinds


def test_netflow_is_json_flows_in_both_layouts(by_vendor: dict) -> None:
    layouts = {"@fields": 0, "@metaflow": 0}
    for t, d in by_vendor["netflow"]:
        assert d.dataset == "flow"
        obj = _json(d)
        assert obj["@type"] == "flow" and obj["@timestamp"] == t
        if "@fields" in obj:
            layouts["@fields"] += 1
            f = obj["@fields"]
        else:
            layouts["@metaflow"] += 1
            f = obj["@metaflow"]["flow"]
        assert set(f) == FLOW_FIELDS
        assert f["totalB"] == f["rxB"] + f["txB"]
        assert f["time_ms"] == t
    total = sum(layouts.values())
    assert 0.4 < layouts["@fields"] / total < 0.6
