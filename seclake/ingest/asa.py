"""Cisco ASA (and FTD) syslog messages in common ECS names.

An ASA line's tag is ``%ASA-<severity>-<message id>`` (``%FTD-`` on
Firepower Threat Defense). The record keeps the line's own fields and gains
``event.code`` (the message id) and ``observer.*`` for every message; the
common message ids below also yield ``source.*``, ``destination.*``,
``network.transport``, ``event.*``, ``user.name`` and ``rule.name`` (the
access list). For ``Built outbound`` the first address ASA writes is the
outside one, so it is the destination (as in Elastic's Cisco module).

Each message id has one anchored pattern without nested quantifiers,
applied to the message part only, so a hostile line costs linear time.
"""

from __future__ import annotations

import re
from typing import Any

from seclake.ingest.ecs import compact, endpoint, number, text, transport

_TAG = re.compile(r"%(ASA|FTD|PIX)-(\d)-(\d{6})")
_IP = r"[0-9A-Fa-f:.]{2,45}"


def _ep(name: str) -> str:
    """``interface:address/port`` (interface and port optional)."""
    return rf"(?:(?P<{name}_if>[^:\s/]+):)?(?P<{name}_ip>{_IP})(?:/(?P<{name}_port>\d{{1,5}}))?"


_CONN = {"category": "network", "type": "connection"}
# A connection the firewall blocked is the firewall's action done: ECS puts the deny in event.type and
# event.action, and its outcome is success ("Using the categorization fields", firewall example), so
# event.outcome:failure stays the failed logins, commands and calls it means.
_DENY = {"category": "network", "type": "denied", "action": "deny", "outcome": "success"}
_AUTH = {"category": "authentication", "type": "start"}

# message id -> (pattern on the text after the tag, the event it means)
_MESSAGES: dict[str, tuple[re.Pattern[str], dict[str, str]]] = {}
for _ids, _pattern, _meaning in (
    (("302013", "302015"),
     rf"Built (?P<dir>inbound|outbound) (?P<proto>TCP|UDP) connection (?P<id>\d+) for {_ep('a')}"
     rf" \([^)]*\)(?: \([^)]*\))? to {_ep('b')}", {**_CONN, "type": "start", "action": "built"}),
    (("302014", "302016"),
     rf"Teardown (?P<proto>TCP|UDP) connection (?P<id>\d+) for {_ep('a')} to {_ep('b')}"
     r" duration (?P<duration>\d+:\d\d:\d\d) bytes (?P<bytes>\d+)", {**_CONN, "type": "end", "action": "teardown"}),
    (("106023",),
     rf"Deny (?P<proto>\w+) src {_ep('a')} dst {_ep('b')} (?:\(type \d+, code \d+\) )?"
     r"(?:type \{[^}]*\} )?by access-group \"(?P<acl>[^\"]*)\"", _DENY),
    (("106001",), rf"Inbound (?P<proto>TCP) connection denied from {_ep('a')} to {_ep('b')} flags", _DENY),
    (("106006", "106007"), rf"Deny inbound (?P<proto>UDP) from {_ep('a')} to {_ep('b')} ", _DENY),
    (("106015",), rf"Deny (?P<proto>TCP) \(no connection\) from {_ep('a')} to {_ep('b')} flags", _DENY),
    (("106100",),
     rf"access-list (?P<acl>\S+) (?P<verdict>permitted|denied|est-allowed) (?P<proto>\w+)"
     rf" (?P<a_if>[^/\s]+)/(?P<a_ip>{_IP})\((?P<a_port>\d{{1,5}})\) -> (?P<b_if>[^/\s]+)/(?P<b_ip>{_IP})"
     r"\((?P<b_port>\d{1,5})\)", {"category": "network", "type": "connection", "action": "access-list"}),
    (("113004",), r"AAA user authentication Successful : server = +(?P<server>\S+) : user = (?P<user>\S+)",
     {**_AUTH, "action": "aaa-authentication", "outcome": "success"}),
    (("113005",),
     rf"AAA user authentication Rejected : reason = (?P<reason>[^:]+?) : server = (?P<server>\S+)"
     rf" : user = (?P<user>\S+)(?: : user IP = (?P<a_ip>{_IP}))?",
     {**_AUTH, "action": "aaa-authentication", "outcome": "failure"}),
    (("113015",),
     rf"AAA user authentication Rejected : reason = (?P<reason>[^:]+?) : local database : user = (?P<user>\S+)"
     rf"(?: : user IP = (?P<a_ip>{_IP}))?", {**_AUTH, "action": "aaa-authentication", "outcome": "failure"}),
    (("605004", "605005"),
     rf"Login (?P<verdict>denied|permitted) from (?P<a_ip>{_IP})/(?P<a_port>\d{{1,5}}) to"
     rf" (?P<b_if>[^:\s]+):(?P<b_ip>{_IP})/(?P<service>\S+) for user \"(?P<user>[^\"]*)\"",
     {**_AUTH, "action": "login"}),
    (("611101", "611102"),
     rf"User authentication (?P<verdict>succeeded|failed): (?:IP address: (?P<a_ip>{_IP}), )?Uname: (?P<user>\S+)",
     {**_AUTH, "action": "user-authentication"}),
    (("716001",), rf"WebVPN session started: Group <(?P<group>[^>]*)> User <(?P<user>[^>]*)> IP <(?P<a_ip>{_IP})>",
     {"category": "session", "type": "start", "action": "webvpn-session"}),
    (("716002",), rf"Group <(?P<group>[^>]*)> User <(?P<user>[^>]*)> IP <(?P<a_ip>{_IP})> WebVPN session terminated",
     {"category": "session", "type": "end", "action": "webvpn-session"}),
    (("111008",), r"User '(?P<user>[^']*)' executed the '(?P<command>[^']*)' command",
     {"category": "configuration", "type": "change", "action": "command"}),
):
    for _id in _ids:
        _MESSAGES[_id] = (re.compile(_pattern), _meaning)

_VERDICTS = {"denied": "failure", "failed": "failure", "permitted": "success", "succeeded": "success",
             "est-allowed": "success"}


def fields_of(program: Any, message: str) -> dict[str, Any] | None:
    """The common fields of an ASA line whose tag is ``program``, or None when it is not one."""
    if not isinstance(program, str) or not program.startswith("%"):
        return None
    tag = _TAG.fullmatch(program)
    if tag is None:
        return None
    family, severity, message_id = tag.groups()
    out: dict[str, Any] = {
        "observer": {"vendor": "Cisco", "product": "ASA" if family != "FTD" else "FTD"},
        "event": {"code": message_id, "severity": int(severity)},
    }
    known = _MESSAGES.get(message_id)
    m = known[0].match(message) if known is not None else None
    if m is None:
        return compact(out)
    g = m.groupdict()
    out["event"].update(known[1])  # type: ignore[index]
    if g.get("verdict"):
        out["event"]["outcome"] = _VERDICTS[g["verdict"]]
        if message_id == "106100":  # an access list's verdict, not a login's: the deny is done (_DENY)
            out["event"]["type"] = "denied" if g["verdict"] == "denied" else "allowed"
            out["event"]["outcome"] = "success"
    first = endpoint(g.get("a_ip"), g.get("a_port"))
    second = endpoint(g.get("b_ip"), g.get("b_port"))
    if g.get("dir") == "outbound":  # ASA writes the outside (foreign) end first
        first, second = second, first
    out["source"], out["destination"] = first, second
    out["network"] = {"transport": transport(g.get("proto")), "direction": g.get("dir")}
    if g.get("bytes"):
        out["network"]["bytes"] = number(g["bytes"])
    if g.get("duration"):
        h, mi, s = g["duration"].split(":")
        out["event"]["duration"] = (int(h) * 3600 + int(mi) * 60 + int(s)) * 1_000_000_000
    out["user"] = {"name": text(g.get("user"))}
    out["rule"] = {"name": text(g.get("acl"))}
    out["event"]["reason"] = text(g.get("reason"))
    out["process"] = {"command_line": text(g.get("command"))}
    return compact(out)
