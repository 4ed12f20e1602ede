"""Suricata EVE JSON (alert, flow, dns, http, tls) in common ECS names.

Every EVE line carries ``event_type``, the five-tuple (``src_ip``,
``src_port``, ``dest_ip``, ``dest_port``, ``proto``) and its details in an
object named after the type. The record keeps all of it and gains
``source.*``, ``destination.*``, ``network.*``, ``event.*`` and, per type,
``rule.*`` (alert), ``dns.*``, ``url.*``/``http.*`` or ``tls.*``. Names
follow Elastic's Suricata module. docs/fields.md.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import add_counts, add_http, compact, dig, endpoint, merge, number, text, transport


def matches(fields: dict[str, Any]) -> bool:
    return isinstance(fields.get("event_type"), str) and "src_ip" in fields and "timestamp" in fields


def enrich(fields: dict[str, Any], dataset: str = "event") -> Any:
    """Add the common names to a Suricata EVE record's ``@fields`` (in place); returns its event time."""
    kind = fields["event_type"]
    common: dict[str, Any] = {
        "observer": {"vendor": "OISF", "product": "Suricata", "type": "ids"},
        "source": endpoint(fields.get("src_ip"), fields.get("src_port")),
        "destination": endpoint(fields.get("dest_ip"), fields.get("dest_port")),
        "network": {"transport": transport(fields.get("proto")), "protocol": text(fields.get("app_proto")),
                    "community_id": text(fields.get("community_id"))},
        "event": {"dataset": f"suricata.{kind}"[:64]},
    }
    detail = fields.get(kind)
    handler = _KINDS.get(kind)
    if handler is not None and isinstance(detail, dict):
        handler(detail, common)
    merge(fields, compact(common))
    return fields.get("timestamp")


def _alert(alert: dict[str, Any], common: dict[str, Any]) -> None:
    blocked = alert.get("action") == "blocked"
    common["event"].update({"kind": "alert", "category": "intrusion_detection",
                            "type": "denied" if blocked else "allowed", "action": text(alert.get("action")),
                            "severity": number(alert.get("severity"))})
    sid = number(alert.get("signature_id"))
    common["rule"] = {"id": None if sid is None else str(sid), "name": text(alert.get("signature")),
                      "category": text(alert.get("category"))}


def _flow(flow: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "connection", "action": text(flow.get("state"))})
    add_counts(common, flow.get("bytes_toserver"), flow.get("bytes_toclient"), flow.get("pkts_toserver"),
               flow.get("pkts_toclient"))


def _dns(dns: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "protocol", "action": "dns_" + (text(dns.get("type")) or "event")[:16]})
    common["network"]["protocol"] = "dns"
    common["dns"] = {"id": number(dns.get("id")), "type": text(dns.get("type")),
                     "question": {"name": text(dns.get("rrname")), "type": text(dns.get("rrtype"))},
                     "response_code": text(dns.get("rcode"))}


def _http(http: dict[str, Any], common: dict[str, Any]) -> None:
    add_http(common, host=http.get("hostname"), target=http.get("url"), method=http.get("http_method"),
             status=http.get("status"), version=http.get("protocol"), agent=http.get("http_user_agent"),
             referrer=http.get("http_refer"))


def _tls(tls: dict[str, Any], common: dict[str, Any]) -> None:
    common["event"].update({"category": "network", "type": "protocol", "action": "tls_handshake"})
    common["network"]["protocol"] = "tls"
    sni = text(tls.get("sni"))
    common["tls"] = {"client": {"server_name": sni, "ja3": text(dig(tls, "ja3", "hash"))},
                     "version": text(tls.get("version")),
                     "server": {"subject": text(tls.get("subject")), "issuer": text(tls.get("issuerdn"))}}
    if sni and common["destination"] is not None:
        common["destination"]["domain"] = sni


_KINDS = {"alert": _alert, "flow": _flow, "dns": _dns, "http": _http, "tls": _tls}
