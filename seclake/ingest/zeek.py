"""Zeek JSON logs (conn, dns, http, ssl, notice, smb_files, dce_rpc, kerberos, rdp, x509) in common ECS names.

Zeek's JSON writer keeps its column names, dots included, as flat keys
(``"id.orig_h"``); the record keeps them, and gains ``source.*``,
``destination.*``, ``network.*``, ``event.*`` and per log ``dns.*``,
``url.*``/``http.*``, ``tls.*`` or ``rule.*``. Which log a line comes from is
``_path`` when the shipper adds it (json-streaming-logs, Filebeat), else
told by the columns only that log has; either way it is ``event.dataset``
``zeek.<log>``, which Sigma's ``product: zeek`` rules select by. Imported into the flow dataset, a
conn line also gets the flow fields search and the flow page read
(``sip dip sp dp prot txB rxB totalB txP rxP dur time_ms``; the originator
is the sender). Names follow Elastic's Zeek module. docs/fields.md.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import add_counts, add_http, compact, endpoint, merge, number, port, text, transport
from seclake.ingest.timestamp import parse_time

_PROTOCOL_NUMBERS = {"tcp": 6, "udp": 17, "icmp": 1}


def matches(fields: dict[str, Any]) -> bool:
    return "ts" in fields and ("id.orig_h" in fields or ("note" in fields and ("uid" in fields or "actions" in fields))
                               or "certificate.serial" in fields or _path(fields) is not None)


def _path(fields: dict[str, Any]) -> str | None:
    path = fields.get("_path")
    return path if isinstance(path, str) and path in _KINDS else None


def _kind(fields: dict[str, Any]) -> str | None:
    path = _path(fields)
    if path is not None:
        return path
    # The logs whose columns overlap others' (kerberos has a cipher, as ssl does) first.
    action = fields.get("action")
    if isinstance(action, str) and action.startswith("SMB::FILE_"):
        return "smb_files"
    if "endpoint" in fields and "operation" in fields:
        return "dce_rpc"
    if "request_type" in fields and ("client" in fields or "service" in fields):
        return "kerberos"
    if "security_protocol" in fields or ("cookie" in fields and "result" in fields):
        return "rdp"
    if "certificate.serial" in fields:
        return "x509"
    if "conn_state" in fields or "orig_bytes" in fields or "history" in fields:
        return "conn"
    if "query" in fields or "qtype_name" in fields or "rcode_name" in fields:
        return "dns"
    if "method" in fields or "status_code" in fields:
        return "http"
    if "server_name" in fields or "cipher" in fields or "established" in fields:
        return "ssl"
    if "note" in fields:
        return "notice"
    return None


def enrich(fields: dict[str, Any], dataset: str = "event") -> Any:
    """Add the common names to a Zeek record's ``@fields`` (in place); returns its event time."""
    kind = _kind(fields)
    common: dict[str, Any] = {
        "observer": {"vendor": "Zeek", "product": "Zeek", "type": "ids"},
        "source": endpoint(fields.get("id.orig_h"), fields.get("id.orig_p")),
        "destination": endpoint(fields.get("id.resp_h"), fields.get("id.resp_p")),
        "network": {"transport": transport(fields.get("proto")), "community_id": text(fields.get("community_id"))},
        "event": {"id": text(fields.get("uid")), "dataset": f"zeek.{kind}" if kind else None},
    }
    if kind is not None:
        _KINDS[kind](fields, common)
    merge(fields, compact(common))
    if kind == "conn" and dataset == "flow":
        _flow(fields)
    return fields.get("ts")


def _conn(fields: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "connection", "action": text(fields.get("conn_state"))})
    common["network"]["protocol"] = text(fields.get("service"))
    add_counts(common, fields.get("orig_bytes"), fields.get("resp_bytes"), fields.get("orig_pkts"),
               fields.get("resp_pkts"))
    duration = fields.get("duration")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) and 0 <= duration < 1e9:
        common["event"]["duration"] = int(duration * 1e9)  # ECS: nanoseconds


def _dns(fields: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "protocol", "action": "dns_query"})
    common["network"]["protocol"] = "dns"
    common["dns"] = {
        "id": number(fields.get("trans_id")),
        "question": {"name": text(fields.get("query")), "type": text(fields.get("qtype_name"))},
        "response_code": text(fields.get("rcode_name")),
    }
    answers = fields.get("answers")
    if isinstance(answers, list):
        common["dns"]["resolved_ip"] = [a for a in answers[:64] if isinstance(a, str) and _is_address(a)] or None


def _http(fields: dict[str, Any], common: dict[str, Any]) -> None:
    common["network"]["protocol"] = "http"
    add_http(common, host=fields.get("host"), target=fields.get("uri"), method=fields.get("method"),
             status=fields.get("status_code"), version=fields.get("version"), agent=fields.get("user_agent"),
             referrer=fields.get("referrer"))


def _ssl(fields: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "protocol", "action": "tls_handshake"})
    common["network"]["protocol"] = "tls"
    established = fields.get("established")
    common["tls"] = {"client": {"server_name": text(fields.get("server_name"))}, "cipher": text(fields.get("cipher")),
                     "version": text(fields.get("version")),
                     "established": established if isinstance(established, bool) else None}
    if isinstance(established, bool):
        common["event"]["outcome"] = "success" if established else "failure"
    if text(fields.get("server_name")):
        common["destination"] = {**(common["destination"] or {}), "domain": fields["server_name"]}


def _notice(fields: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"kind": "alert", "category": "intrusion_detection", "type": "info",
                            "action": text(fields.get("note"))})
    common["rule"] = {"name": text(fields.get("note")), "description": text(fields.get("msg"))}
    if common["source"] is None:
        common["source"] = endpoint(fields.get("src"))
    if common["destination"] is None:
        common["destination"] = endpoint(fields.get("dst"), fields.get("p"))


def _smb_files(fields: dict[str, Any], common: dict[str, Any]) -> None:
    # A file opened, read, written... over SMB: path is the share, name the file in it.
    common["event"].update({"category": "file", "type": "access", "action": text(fields.get("action"))})
    common["network"]["protocol"] = "smb"
    name = text(fields.get("name"))
    common["file"] = {"name": name.replace("\\", "/").rsplit("/", 1)[-1] if name else None}


def _dce_rpc(fields: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "protocol", "action": text(fields.get("operation"))})
    common["network"]["protocol"] = "dce_rpc"


def _kerberos(fields: dict[str, Any], common: dict[str, Any]) -> None:
    success = fields.get("success")
    common["event"].update({"category": "authentication", "type": "start",
                            "action": text(fields.get("request_type")),
                            "outcome": ("success" if success else "failure") if isinstance(success, bool) else None,
                            "reason": text(fields.get("error_msg"))})
    common["network"]["protocol"] = "kerberos"
    client = text(fields.get("client"))  # user/REALM
    if client:
        name, _, realm = client.partition("/")
        common["user"] = {"name": name, "domain": realm or None}


def _rdp(fields: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "protocol", "action": "rdp_connection"})
    common["network"]["protocol"] = "rdp"


def _x509(fields: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "protocol", "action": "x509_certificate"})
    common["tls"] = {"server": {"subject": text(fields.get("certificate.subject")),
                                "issuer": text(fields.get("certificate.issuer")),
                                "x509": {"serial_number": text(fields.get("certificate.serial"))}}}


_KINDS = {"conn": _conn, "dns": _dns, "http": _http, "ssl": _ssl, "notice": _notice, "smb_files": _smb_files,
          "dce_rpc": _dce_rpc, "kerberos": _kerberos, "rdp": _rdp, "x509": _x509}


def _flow(fields: dict[str, Any]) -> None:
    """The flow dataset's own names for a conn line (what the originator sent is tx)."""
    sip, dip = text(fields.get("id.orig_h")), text(fields.get("id.resp_h"))
    if sip is None or dip is None:
        return  # not a flow without both ends
    proto = fields.get("proto")
    ms = parse_time(fields.get("ts"), 0)
    duration = fields.get("duration")
    if not isinstance(duration, (int, float)) or isinstance(duration, bool) or not 0 <= duration < 1e9:
        duration = 0
    sent, got = number(fields.get("orig_bytes")) or 0, number(fields.get("resp_bytes")) or 0
    flow = {
        "sip": sip, "dip": dip, "sp": port(fields.get("id.orig_p")), "dp": port(fields.get("id.resp_p")),
        "prot": _PROTOCOL_NUMBERS.get(proto, proto) if isinstance(proto, str) else None,
        "txB": sent, "rxB": got, "totalB": sent + got,
        "txP": number(fields.get("orig_pkts")) or 0, "rxP": number(fields.get("resp_pkts")) or 0,
        "dur": int(duration * 1000),
        "time_ms": ms,
    }
    for key, value in flow.items():
        if value is not None:
            fields.setdefault(key, value)


def _is_address(value: str) -> bool:
    return len(value) <= 45 and (value.count(".") == 3 or ":" in value) and not any(c.isspace() for c in value)
