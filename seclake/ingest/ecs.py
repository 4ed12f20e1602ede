"""Helpers every source mapping shares: building and merging the common (ECS) names.

A source module (``authlog``, ``winsecurity``, ``zeek``...) reads a record's
own fields and returns the common names as nested dictionaries; ``merge``
adds them beside the record's fields without overwriting any. The helpers
here turn hostile values into nothing rather than into errors: a port that
is not a port, an address that is not text, a byte count that is not a
count are left out, never raised on, so a mutated line still becomes a
record (docs/fields.md).
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Any

# IANA protocol numbers to ECS network.transport names, for the ones logs carry.
TRANSPORTS = {1: "icmp", 6: "tcp", 17: "udp", 47: "gre", 50: "esp", 58: "ipv6-icmp", 132: "sctp"}
_MAX_COUNT = 2**63 - 1


def merge(fields: dict[str, Any], common: dict[str, Any]) -> None:
    """Add ``common`` to a record's fields without overwriting any of its own.

    Where the line already has a plain value under a common object's name
    (FortiGate's ``user="admin"``, a PAM line's ``user=root``), the value
    stays and the common names go beside it as dotted keys (``"user.name"``):
    paths are joined with dots everywhere (search, facets, rules), so
    ``user.name:admin`` finds them all the same. Where both are plain
    values, the line's own wins.
    """
    for key, value in common.items():
        mine = fields.get(key)
        if mine is None:
            fields[key] = value
        elif isinstance(value, dict):
            if isinstance(mine, dict):
                merge(mine, value)
            else:
                for path, leaf in _dotted(key, value):
                    fields.setdefault(path, leaf)


def _dotted(prefix: str, tree: dict[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        if isinstance(value, dict):
            out.extend(_dotted(f"{prefix}.{key}", value))
        else:
            out.append((f"{prefix}.{key}", value))
    return out


def text(value: Any) -> str | None:
    """``value`` when it is non-empty text that says something (not ``-``), else None."""
    if isinstance(value, str) and value and value not in ("-", "N/A", "(null)"):
        return value
    return None


def number(value: Any) -> int | None:
    """A non-negative integer from an int or a string of digits (counts, ports, ids), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= _MAX_COUNT else None
    if isinstance(value, float):
        return int(value) if 0 <= value < 2**63 else None
    if isinstance(value, str) and value.isdigit() and len(value) < 19:
        return int(value)
    return None


def port(value: Any) -> int | None:
    n = number(value)
    return n if n is not None and n <= 65535 else None


def transport(value: Any) -> str | None:
    """ECS ``network.transport`` from a protocol number (6) or name (``TCP``)."""
    n = number(value)
    if n is not None:
        return TRANSPORTS.get(n)
    name = text(value)
    return name.lower() if name is not None and len(name) <= 16 else None


# A dotted quad as ipaddress accepts it: four decimal octets of at most 255,
# no leading zeros. Matched in C: ipaddress costs ~10 us a call, and logs
# carry mostly distinct IPv4 addresses, so a cache rarely hits.
_IPV4 = re.compile(r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}")


def _is_ip(value: str) -> bool:
    if ":" not in value:
        return _IPV4.fullmatch(value) is not None
    return _is_ipv6(value)


@lru_cache(maxsize=65536)
def _is_ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def ip(value: Any) -> str | None:
    """``value`` when it is an IPv4 or IPv6 address in text, else None (``ip`` fields hold addresses only)."""
    address = text(value)
    return address if address is not None and len(address) <= 45 and _is_ip(address) else None


def account(value: Any) -> dict[str, Any]:
    """ECS ``user`` parts of an account name: ``CORP\\bob`` is name ``bob`` in domain ``CORP``."""
    name = text(value)
    if name is None:
        return {}
    domain, sep, rest = name.partition("\\")
    if sep and domain and rest:
        return {"name": rest, "domain": domain}
    return {"name": name}


def endpoint(ip_value: Any, port_value: Any = None, **more: Any) -> dict[str, Any] | None:
    """An ECS ``source``/``destination`` object, or None when there is no address.

    Text that is not an IP address (a host name, a mangled address) goes to
    ``address``, which ECS keeps for exactly that; ``ip`` is always an address.
    """
    out: dict[str, Any] = {}
    address = text(ip_value)
    if address is not None and len(address) <= 255:
        out["ip" if len(address) <= 45 and _is_ip(address) else "address"] = address
    p = port(port_value)
    if p is not None:
        out["port"] = p
    for key, value in more.items():
        if value is not None and value != "" and value != {}:
            out[key] = value
    return out or None


def add_counts(common: dict[str, Any], sent: Any, got: Any, packets_out: Any, packets_in: Any) -> None:
    """What each end sent (IDS flow records: Zeek conn, Suricata flow) as ``source``/``destination``
    bytes and packets, and both directions together as ``network.bytes``/``packets``."""
    sent, got, packets_out, packets_in = number(sent), number(got), number(packets_out), number(packets_in)
    if sent is not None and got is not None:
        common["network"]["bytes"] = sent + got
    if packets_out is not None and packets_in is not None:
        common["network"]["packets"] = packets_out + packets_in
    for side, nbytes, packets in (("source", sent, packets_out), ("destination", got, packets_in)):
        if common[side] is not None:
            common[side].update({k: v for k, v in (("bytes", nbytes), ("packets", packets)) if v is not None})


def add_http(common: dict[str, Any], *, host: Any, target: Any, method: Any, status: Any, version: Any,
             agent: Any, referrer: Any = None) -> None:
    """The common names of one HTTP request (IDS logs: Zeek http, Suricata http) into ``common``:
    web/access, ``url.*`` (``full`` when the target is a path on a known host; ``path``, ``query``
    and ``extension`` of a path target, as ECS splits it: web server and proxy rules read them),
    ``http.*``, ``user_agent.original``, and the outcome by status (4xx and 5xx fail)."""
    common["event"].update({"category": "web", "type": "access", "action": "http_request"})
    host, target, code = text(host), text(target), number(status)
    common["url"] = {"domain": host, "original": target,
                     "full": f"http://{host}{target}" if host and target and target.startswith("/") else None}
    if target and target.startswith("/"):
        path, _, query = target.partition("?")
        leaf = path.rsplit("/", 1)[-1]
        common["url"].update({"path": path, "query": query or None,
                              "extension": leaf.rsplit(".", 1)[-1] if "." in leaf.strip(".") else None})
    common["http"] = {"request": {"method": text(method), "referrer": text(referrer)},
                      "response": {"status_code": code}, "version": text(version)}
    if code is not None:
        common["event"]["outcome"] = "failure" if code >= 400 else "success"
    common["user_agent"] = {"original": text(agent)}


def compact(tree: dict[str, Any]) -> dict[str, Any]:
    """``tree`` without its None, empty-text and empty-object leaves (recursively)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if value is None:
            continue
        if value.__class__ is dict:
            value = compact(value)
            if value:
                out[key] = value
        elif value != "" and value != "-":
            out[key] = value
    return out


def dig(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...`` or None where a step is missing or not an object."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj
