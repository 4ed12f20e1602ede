"""How one value is tokenized, normalized and compared (query-semantics.md)."""

from __future__ import annotations

import ipaddress
import math
import re
import socket

# Text tokens: maximal runs of Unicode letters and digits, lowercased.
# [^\W_] is "word character but not underscore", i.e. letters and digits.
_TOKEN = re.compile(r"[^\W_]+")
# A string that reads as a number: numbers compare as numbers ("443" == 443).
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def as_number(value: object) -> float | None:
    """The numeric value of a JSON number or a numeric-looking string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:  # an int past 1.8e308: no f64 holds it (its keyword still does)
            return None
        return f if math.isfinite(f) else None
    if isinstance(value, str) and len(value) <= 64 and _NUMBER.match(value):
        f = float(value)
        return f if math.isfinite(f) else None
    return None


def canonical_number(value: object) -> str | None:
    """One spelling per number, so 443, 443.0 and "443" share a term and a bucket."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and _NUMBER.match(value) and not any(c in value for c in ".eE"):
        return str(int(value))
    f = as_number(value)
    if f is None:
        return None
    if f.is_integer() and abs(f) < 2**63:
        return str(int(f))
    return repr(f)


def scalar_text(value: object) -> str:
    """The string form of a scalar leaf as ingested (booleans as JSON spells them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 2**63 else repr(value)
    return str(value)


def keyword(value: object) -> str:
    """The normalized keyword of a value: the key terms match and facets group on.

    Numbers (and numeric-looking strings) normalize to their canonical number,
    everything else to its lowercased string form.
    """
    canon = canonical_number(value)
    if canon is not None:
        return canon
    return scalar_text(value).lower()


def keyword_terms(value: object) -> set[str]:
    """Every keyword spelling a term query may hit for this value.

    A numeric-looking string matches both as a number ("007" == 7) and as its
    own lowercased text ("007"), so wildcards on its text still work.
    """
    out = {keyword(value)}
    out.add(scalar_text(value).lower())
    return out


def as_ip(value: object) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``value`` writes, or None.

    ``inet_pton`` turns away what is not an address first (~0.1 µs, where
    ``ipaddress`` raises, twice for a value with a colon: times, MAC
    addresses, URLs); it is as strict as ``ipaddress`` (IPv4: four decimal
    octets up to 255, no leading zeros; ASCII only), but does not read an
    IPv6 zone (``fe80::1%eth0``), which goes to ``ipaddress`` as it is."""
    if not isinstance(value, str) or not value or len(value) > 45:
        return None
    if ":" in value:
        if "%" not in value and not _is_address(_AF_INET6, value):
            return None
    elif not value[0].isdigit() or not _is_address(_AF_INET, value):
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def ip_text(value: object) -> str | None:
    """The address ``value`` writes as the index's IP columns keep it, or None:
    ``str(as_ip(value))`` without an IPv6 zone.

    A column holds an address, not the interface it was seen on: tantivy
    refuses ``fe80::1%10`` (Windows events carry such values), and one such
    value made every build of its split fail (issue 39). Without the zone it
    is in ``fe80::/10`` as the matcher finds it (``ip_in_network``), and its
    keyword term keeps the whole spelling for term queries.

    A dotted quad that ``inet_pton`` reads is its own canonical text, so it
    is not built as an ``ipaddress`` object and written back: split building
    meets every value of every record that may be an address."""
    if isinstance(value, str) and ":" not in value:
        if not value or len(value) > 15 or not value[0].isdigit() or not _is_address(_AF_INET, value):
            return None
        return value
    ip = as_ip(value)
    return str(ip).partition("%")[0] if ip is not None else None


_AF_INET, _AF_INET6 = socket.AF_INET, socket.AF_INET6


def _is_address(family: int, value: str) -> bool:
    try:
        socket.inet_pton(family, value)
    except (OSError, ValueError, UnicodeError):
        return False
    return True


def as_network(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """A CIDR block written as a query value (``10.0.0.0/8``), else None."""
    if "/" not in value:
        return None
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def ip_in_network(value: object, network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    ip = as_ip(value)
    if ip is None:
        return False
    if ip.version != network.version:
        # IPv4-mapped IPv6 addresses belong to IPv4 blocks too.
        if ip.version == 6 and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        else:
            return False
    return ip in network
