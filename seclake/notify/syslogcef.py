"""Syslog CEF destinations: one CEF event per notification, over UDP, TCP or TLS.

The line is ``CEF:0|seclake|seclake|<version>|<signature>|<name>|<severity>|<extension>``
in an RFC 5424 syslog message, newline-terminated on a stream (RFC 6587's
non-transparent framing; CEF escapes every newline, so none ends a message
early). Escaping is CEF's (ArcSight's "Implementing CEF"): in the header a
backslash and a pipe are escaped with a backslash; in extension values a
backslash and an equals sign are, and a newline is ``\\n`` (a carriage
return ``\\r``); pipes stay as they are there.
"""

from __future__ import annotations

import socket
import ssl
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from seclake.notify.destination import Target
from seclake.notify.mail import tls_context
from seclake.notify.webhook import DeliveryError

SEVERITY = {"critical": 10, "serious": 8, "high": 7, "medium": 5, "low": 3}
MAX_VALUE = 1023
MAX_DATAGRAM = 8192


def header(value: Any) -> str:
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return text.replace("\r", " ").replace("\n", " ")


def extension(value: Any) -> str:
    text = str(value)[:MAX_VALUE]
    return (text.replace("\\", "\\\\").replace("=", "\\=").replace("\r\n", "\\n")
            .replace("\n", "\\n").replace("\r", "\\r"))


def line(event: dict[str, Any], message: dict[str, str], *, delivery_id: int, rule: str, link: str,
         version: str, folded: int) -> str:
    kind = str(event.get("kind") or "test")
    doc = event.get("behavior") or event.get("summary") or {}
    level = str(doc.get("scoreLevel") or "")
    signature = doc.get("behaviorRule") if kind == "behavior" else f"summary-{kind}"
    fields: list[tuple[str, Any]] = [
        ("rt", event.get("at") or int(datetime.now(UTC).timestamp() * 1000)),
        ("externalId", delivery_id), ("act", rule),
        ("cs1Label", "key"), ("cs1", doc.get("key", "")),
        ("cs2Label", "keyType"), ("cs2", doc.get("keyType", "")),
        ("cs3Label", "customer"), ("cs3", doc.get("customer", "")),
        ("cs4Label", "techniques"), ("cs4", ",".join(str(r) for r in doc.get("risks") or [])),
        ("cs5Label", "summaryId"), ("cs5", event.get("summaryId") or doc.get("id") or ""),
        ("cn1Label", "riskScore"), ("cn1", doc.get("riskScore", 0)),
        ("cn2Label", "folded"), ("cn2", folded),
        ("msg", message["text"]),
    ]
    if link:
        fields.append(("request", link))
    ext = " ".join(f"{k}={extension(v)}" for k, v in fields)
    head = "|".join(header(v) for v in ("CEF:0", "seclake", "seclake", version, signature or kind,
                                         message["title"][:512], SEVERITY.get(level, 1)))
    return f"{head}|{ext}"


def framed(cef: str, hostname: str, now: datetime) -> bytes:
    # <PRI> = facility security/authorization (4) * 8 + severity warning (4)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return f"<36>1 {stamp} {hostname or '-'} seclake - - - {cef}".encode("utf-8")


def send(target: Target, payload: bytes, timeout: float) -> None:
    parts = urlsplit(target.get("url"))
    host, port = parts.hostname, parts.port
    try:
        if parts.scheme == "udp":
            with socket.socket(socket.AF_INET6 if ":" in (host or "") else socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.sendto(payload[:MAX_DATAGRAM], (host, port))
            return
        with socket.create_connection((host, port), timeout=timeout) as raw:
            if parts.scheme == "tls":
                context: ssl.SSLContext = tls_context(target.get("caPem"))
                with context.wrap_socket(raw, server_hostname=host) as s:
                    s.sendall(payload + b"\n")
            else:
                raw.sendall(payload + b"\n")
    except (OSError, ssl.SSLError) as e:
        raise DeliveryError(f"syslog {parts.scheme}://{host}:{port}: {type(e).__name__}: {e}"[:500]) from None
