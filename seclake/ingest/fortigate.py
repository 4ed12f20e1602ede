"""Fortinet FortiGate logs (key=value) in common ECS names.

A FortiGate line is key=value with ``logid``, ``type`` and ``subtype`` and
the device's ``devname``/``devid``. The record keeps its pairs and gains
``source.*``/``destination.*`` (``srcip``, ``srcport``, ``sentbyte``...),
``network.*``, ``event.*`` (``logid`` is ``event.code``, ``action`` is
``event.action``), ``user.name``, ``rule.*`` (the policy; the IPS
signature or virus), ``url.*`` (web filter) and ``dns.*`` (DNS filter).
Which category an event has comes from ``type``/``subtype``: traffic is
network, ``utm`` ips/anomaly intrusion detection, virus malware,
webfilter web; ``event`` lines with ``action=login`` are authentication.
Names follow Elastic's Fortinet module. docs/fields.md.
"""

from __future__ import annotations

import re
from typing import Any

from seclake.ingest.ecs import compact, endpoint, number, text, transport

_DENIED = frozenset({"deny", "block", "blocked", "dropped", "drop", "reset", "server-rst", "client-rst"})
_UTM = {"ips": "intrusion_detection", "anomaly": "intrusion_detection", "virus": "malware",
        "webfilter": "web", "dns": "network", "app-ctrl": "network", "ssl": "network"}
_UI_ADDRESS = re.compile(r"\w+\(([0-9A-Fa-f:.]{2,45})\)")


def matches(fields: dict[str, Any]) -> bool:
    return "logid" in fields and ("devid" in fields or "devname" in fields) and "type" in fields


def common_of(fields: dict[str, Any]) -> dict[str, Any]:
    """The common (ECS) names of a parsed FortiGate line."""
    kind, subtype, action = text(fields.get("type")), text(fields.get("subtype")), text(fields.get("action"))
    sent, got = number(fields.get("sentbyte")), number(fields.get("rcvdbyte"))
    event: dict[str, Any] = {"code": text(fields.get("logid")), "action": action}
    if kind == "traffic":
        event.update({"category": "network", "type": "denied" if action in _DENIED else "connection"})
    elif kind == "utm" and subtype in _UTM:
        event.update({"category": _UTM[subtype], "type": "denied" if action in _DENIED else "info"})
        if subtype in ("ips", "anomaly", "virus"):
            event["kind"] = "alert"
    elif kind == "event" and action in ("login", "logout"):
        status = text(fields.get("status"))
        event.update({"category": "authentication", "type": "start" if action == "login" else "end",
                      "outcome": "success" if status == "success" else "failure" if status else None})
    if "outcome" not in event and kind in ("traffic", "utm") and action:
        # A deny is the firewall's action done: ECS keeps it in event.type (denied) with outcome
        # success (asa._DENY), so event.outcome:failure stays failed logins, not blocked traffic.
        event["outcome"] = "success"
    source_ip = fields.get("srcip")
    if source_ip is None and isinstance(fields.get("ui"), str):
        ui = _UI_ADDRESS.fullmatch(fields["ui"])
        source_ip = ui.group(1) if ui else None
    url, host = text(fields.get("url")), text(fields.get("hostname"))
    rule = {"id": text(fields.get("policyid")), "name": text(fields.get("policyname"))}
    if kind == "utm" and (text(fields.get("attack")) or text(fields.get("virus"))):
        rule = {"id": text(fields.get("attackid")) or text(fields.get("virusid")),
                "name": text(fields.get("attack")) or text(fields.get("virus")), "ruleset": subtype}
    return compact({
        "observer": {"vendor": "Fortinet", "product": "FortiGate", "name": text(fields.get("devname")),
                     "serial_number": text(fields.get("devid"))},
        "event": event,
        "source": endpoint(source_ip, fields.get("srcport"), bytes=sent, packets=number(fields.get("sentpkt"))),
        "destination": endpoint(fields.get("dstip"), fields.get("dstport"), bytes=got,
                                packets=number(fields.get("rcvdpkt"))),
        "network": {"transport": transport(fields.get("proto")),
                    "protocol": (text(fields.get("service")) or "").lower()[:32] or None,
                    "bytes": sent + got if sent is not None and got is not None else None},
        "user": {"name": text(fields.get("user"))},
        "rule": rule,
        "url": {"domain": host, "path": url if url and url.startswith("/") else None,
                "original": url, "full": url if url and "://" in url else None},
        "dns": {"question": {"name": text(fields.get("qname")), "type": text(fields.get("qtype"))}},
    })
