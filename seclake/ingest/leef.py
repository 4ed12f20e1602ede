"""IBM QRadar Log Event Extended Format (LEEF 1.0 and 2.0).

``LEEF:1.0|Vendor|Product|Version|EventID|key=value<TAB>key=value...``
``LEEF:2.0|Vendor|Product|Version|EventID|Delimiter|key=value<D>key=value...``

Header fields become ``leef_format``, ``leef_vendor``, ``leef_product``,
``leef_version`` and ``leef_event_id``; attributes keep their LEEF names
(``src``, ``dst``, ``srcPort``, ``usrName``, ``devTime``...), values as
strings. LEEF 2.0 names its delimiter as one character or as hex (``x09``,
``0x5E``); 1.0 uses a tab, which syslog relays often write as ``#011``
(rsyslog escapes control characters that way), so that is split on too.
A value runs to the next delimiter and may hold ``=``.

``common_of`` maps the predefined attributes to the common (ECS) names.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import account, compact, endpoint, number, text, transport

HEADER_KEYS = ("leef_vendor", "leef_product", "leef_version", "leef_event_id")
# Attributes that carry the event time, in order of preference.
TIME_KEYS = ("devTime",)
SENDER_KEYS = ("identHostName", "devName")


def parse(text_: str) -> dict[str, Any] | None:
    """Fields of a LEEF message starting at ``LEEF:``, or None when the header is not complete."""
    parts = text_.split("|", 6 if text_.startswith("LEEF:2") else 5)
    if len(parts) < 6 or not parts[0].startswith("LEEF:"):
        return None
    version = parts[0][5:].strip()
    if version[:1] not in ("1", "2") or len(version) > 8:
        return None
    fields: dict[str, Any] = {"leef_format": version}
    for key, value in zip(HEADER_KEYS, parts[1:5]):
        fields[key] = value
    if version.startswith("2") and len(parts) == 7:
        delimiter, attributes = _delimiter(parts[5]), parts[6]
        if delimiter is None:  # not a delimiter: 2.0 written without one
            delimiter, attributes = "\t", parts[5] + "|" + parts[6]
    else:
        delimiter, attributes = "\t", "|".join(parts[5:])
    if delimiter == "\t" and "\t" not in attributes and "#011" in attributes:
        delimiter = "#011"
    for pair in attributes.split(delimiter):
        key, sep, value = pair.partition("=")
        key = key.strip()
        if sep and key and len(key) <= 64 and key.replace("_", "").replace("-", "").replace(".", "").isalnum():
            fields.setdefault(key, value.rstrip("\r\n"))
    return fields


def _delimiter(spec: str) -> str | None:
    if len(spec) == 1:
        return spec
    hexa = spec[2:] if spec[:2].lower() == "0x" else spec[1:] if spec[:1].lower() == "x" else None
    if hexa and len(hexa) <= 4:
        try:
            return chr(int(hexa, 16))
        except ValueError:
            return None
    return None


def common_of(fields: dict[str, Any]) -> dict[str, Any]:
    """The common (ECS) names of a parsed LEEF event."""
    sent, got = number(fields.get("srcBytes")), number(fields.get("dstBytes"))
    return compact({
        "observer": {"vendor": text(fields.get("leef_vendor")), "product": text(fields.get("leef_product")),
                     "version": text(fields.get("leef_version"))},
        "event": {"code": text(fields.get("leef_event_id")), "action": text(fields.get("action")),
                  "severity": number(fields.get("sev"))},
        "source": endpoint(fields.get("src"), fields.get("srcPort"), bytes=sent,
                           packets=number(fields.get("srcPackets")), mac=text(fields.get("srcMAC"))),
        "destination": endpoint(fields.get("dst"), fields.get("dstPort"), bytes=got,
                                packets=number(fields.get("dstPackets")), mac=text(fields.get("dstMAC"))),
        "network": {"transport": transport(fields.get("proto")),
                    "bytes": sent + got if sent is not None and got is not None else None},
        "user": {"domain": text(fields.get("domain")),
                 **account(text(fields.get("usrName")) or text(fields.get("accountName")))},
        "url": {"original": text(fields.get("url"))},
        "rule": {"name": text(fields.get("policy"))},
    })
