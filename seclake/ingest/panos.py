"""Palo Alto Networks PAN-OS logs (syslog CSV: TRAFFIC, THREAT, SYSTEM) in common ECS names.

PAN-OS sends each log as one CSV line (the "default" syslog format):
``FUTURE_USE,receive time,serial,TYPE,subtype,...``. The columns are fixed
per type; they become fields under PAN-OS's own names (``src``, ``dst``,
``sport``, ``rule``, ``srcuser``, ``app``, ``action``, ``bytes_sent``...),
and the common names join them: ``source.*``, ``destination.*``,
``network.*``, ``event.*``, ``user.*`` (``srcuser`` split at ``\\``),
``rule.name`` (the security rule), ``url.original`` (URL filtering).
SYSTEM ``auth`` events whose description names a user and an address are
authentication. Columns past the ones named here stay unnamed (the raw
line keeps them). Names follow Elastic's PAN-OS module. docs/fields.md.
"""

from __future__ import annotations

import csv
import re
from typing import Any

from seclake.ingest.ecs import account, compact, endpoint, number, text, transport

_START = re.compile(r"\d{1,3},\d{4}/\d\d/\d\d \d\d:\d\d:\d\d,[^,]{0,32},(TRAFFIC|THREAT|SYSTEM),")
_SESSION = ("src dst natsrc natdst rule srcuser dstuser app vsys from to inbound_if outbound_if logset"
            " future_use2 sessionid repeatcnt sport dport natsport natdport flags proto action").split()
_HEAD = "future_use1 receive_time serial type subtype future_use3 time_generated".split()
_COLUMNS = {
    "TRAFFIC": _HEAD + _SESSION + ("bytes bytes_sent bytes_received packets start elapsed category future_use4"
                                   " seqno actionflags srcloc dstloc future_use5 pkts_sent pkts_received"
                                   " session_end_reason").split(),
    "THREAT": _HEAD + _SESSION + ("misc threatid category severity direction seqno actionflags srcloc dstloc"
                                  " future_use4 contenttype pcap_id filedigest cloud url_idx user_agent filetype"
                                  " xff referer sender subject recipient reportid").split(),
    "SYSTEM": _HEAD + ("vsys eventid object future_use4 future_use5 module severity opaque seqno"
                       " actionflags").split(),
}
_ALLOWED = frozenset({"allow", "alert", "continue", "override"})
_THREATS = {"virus": "malware", "wildfire-virus": "malware", "spyware": "malware", "vulnerability":
            "intrusion_detection", "url": "web", "file": "file", "flood": "intrusion_detection",
            "scan": "intrusion_detection", "wildfire": "malware"}
_AUTH_USER = re.compile(r"[^']{0,200}'(?P<user>[^']{1,256})'")
_AUTH_FROM = re.compile(r"From: (?P<ip>[0-9A-Fa-f:.]{1,45}[0-9A-Fa-f])")  # not the sentence's full stop


def looks_like(msg: str) -> bool:
    return _START.match(msg) is not None


def parse(msg: str) -> dict[str, Any] | None:
    """The named columns of a PAN-OS CSV line, or None when it is not one."""
    m = _START.match(msg)
    if m is None:
        return None
    try:
        row = next(csv.reader([msg]))
    except (csv.Error, StopIteration):
        return None
    names = _COLUMNS[m.group(1)]
    fields: dict[str, Any] = {}
    for name, value in zip(names, row):
        if value and not name.startswith("future_use"):
            fields[name] = value
    return fields


def common_of(fields: dict[str, Any]) -> dict[str, Any]:
    """The common (ECS) names of a parsed PAN-OS line."""
    kind, subtype, action = fields.get("type"), text(fields.get("subtype")), text(fields.get("action"))
    event: dict[str, Any] = {"action": action}
    common: dict[str, Any] = {"observer": {"vendor": "Palo Alto Networks", "product": "PAN-OS",
                                           "serial_number": text(fields.get("serial"))}}
    if kind == "SYSTEM":
        event.update({"code": text(fields.get("eventid")), "action": text(fields.get("eventid"))})
        description = text(fields.get("opaque")) or ""
        if subtype == "auth" or (fields.get("eventid") or "").startswith("auth-"):
            user, address = _AUTH_USER.match(description), _AUTH_FROM.search(description)
            failed = "fail" in (fields.get("eventid") or "") or "failed" in description
            event.update({"category": "authentication", "type": "start",
                          "outcome": "failure" if failed else "success"})
            common["user"] = {"name": user.group("user") if user else None}
            common["source"] = endpoint(address.group("ip") if address else None)
    else:
        sent, got = number(fields.get("bytes_sent")), number(fields.get("bytes_received"))
        allowed = action in _ALLOWED if action else None
        if kind == "TRAFFIC":
            event.update({"category": "network", "type": "denied" if allowed is False else
                          ("end" if subtype == "end" else "start" if subtype == "start" else "connection")})
        else:
            event.update({"kind": "alert", "category": _THREATS.get(subtype or "", "intrusion_detection"),
                          "type": "denied" if allowed is False else "allowed"})
            common["url"] = {"original": text(fields.get("misc")) if subtype == "url" else None}
            common["user_agent"] = {"original": text(fields.get("user_agent"))}
        if allowed is not None:
            # Allowed or denied, the firewall did what it decided: ECS keeps the verdict in event.type
            # and its outcome success (asa._DENY), so event.outcome:failure is not every blocked packet.
            event["outcome"] = "success"
        common["source"] = endpoint(fields.get("src"), fields.get("sport"), bytes=sent,
                                    packets=number(fields.get("pkts_sent")),
                                    nat={"ip": text(fields.get("natsrc"))} if fields.get("natsrc") != "0.0.0.0" else None)
        common["destination"] = endpoint(fields.get("dst"), fields.get("dport"), bytes=got,
                                         packets=number(fields.get("pkts_received")))
        common["network"] = {"transport": transport(fields.get("proto")), "application": text(fields.get("app")),
                             "bytes": number(fields.get("bytes")), "packets": number(fields.get("packets"))}
        common["user"] = account(fields.get("srcuser"))
        common["rule"] = {"name": text(fields.get("rule"))}
    common["event"] = event
    return compact(common)
