"""ArcSight Common Event Format (CEF).

``CEF:Version|Device Vendor|Device Product|Device Version|Signature ID|Name|Severity|Extension``

Header fields become ``cef_format`` (the CEF version), ``cef_vendor``,
``cef_product``, ``cef_version`` (the device version), ``signature_id``,
``name`` and ``cef_severity`` (as written: ``0``-``10`` or ``Low``/``High``...).
Extension keys keep their CEF names (``src``, ``dst``, ``spt``, ``act``,
``suser``, ``cs1Label``...), values as strings, as key=value does.

Escaping (CEF spec, "Character Encoding"): in the header ``\\|`` and ``\\\\``;
in extension values ``\\=``, ``\\\\``, ``\\n`` and ``\\r``. Senders also write
``\\|`` in extensions; it unescapes too. Any other backslash is kept as
written, so an unescaped Windows path is not mangled.

An extension value runs to the next `` key=``: a key is a token of letters,
digits, ``_ . - [ ]`` right after a space and right before an unescaped
``=``. Values may hold spaces; an escaped ``\\=`` never ends a value, and
neither does an unescaped ``=`` whose left side is not a key
(``request=http://h/?a=b`` keeps its query string).

The extension is split on ``=`` with ``str.split`` and the pieces re-joined
where an ``=`` belongs to a value: several times faster than scanning it with
a regular expression, and CEF lines are often the bulk of an import.
"""

from __future__ import annotations

import re
from typing import Any

from seclake.ingest.ecs import account, compact, endpoint, number, text, transport

# Header field: anything but | and \, or an escaped character (unrolled loop:
# no per-character alternation).
_FIELD = r"([^|\\]*(?:\\.[^|\\]*)*)\|"
_HEADER = re.compile(r"CEF:\s?(\d+)\|" + _FIELD * 6 + r"(.*)", re.S)
_EXT_KEY = re.compile(r"[\w.\-\[\]]+")
_HEADER_ESCAPE = re.compile(r"\\([|\\])")
_EXT_ESCAPE = re.compile(r"\\([\\=|nr])")
_EXT_UNESCAPED = {"\\": "\\", "=": "=", "|": "|", "n": "\n", "r": "\r"}

HEADER_KEYS = ("cef_vendor", "cef_product", "cef_version", "signature_id", "name", "cef_severity")
# Extension fields that carry the event time, in order of preference:
# receipt time, then end and start of the activity.
TIME_KEYS = ("rt", "end", "start")
# Extension fields naming the reporting device.
SENDER_KEYS = ("dvchost", "dvc")


def _ext_unescape(m: re.Match[str]) -> str:
    return _EXT_UNESCAPED[m.group(1)]


def parse(text: str) -> dict[str, Any] | None:
    """Fields of a CEF message starting at ``CEF:``, or None when the header is not complete."""
    m = _HEADER.match(text)
    if m is None:
        return None
    fields: dict[str, Any] = {"cef_format": m.group(1)}
    for key, value in zip(HEADER_KEYS, m.groups()[1:7]):
        fields[key] = _HEADER_ESCAPE.sub(r"\1", value) if "\\" in value else value
    pieces = m.group(8).split("=")
    if len(pieces) < 2:
        return fields
    # pieces[0] ends with the first key; each middle piece is "<value> <next key>"
    # unless its "=" is part of the value; the last piece is the last value.
    key = pieces[0].rsplit(None, 1)[-1] if pieces[0].strip() else ""
    value: list[str] = []
    for piece in pieces[1:-1]:
        if piece.endswith("\\") and (len(piece) - len(piece.rstrip("\\"))) % 2:
            value.append(piece + "=")  # an escaped \=, still the same value
            continue
        cut = piece.rfind(" ")
        nxt = piece[cut + 1 :]
        if cut == -1 or not (nxt.isidentifier() or _EXT_KEY.fullmatch(nxt)):
            value.append(piece + "=")  # no key before this "=": it is part of the value
            continue
        value.append(piece[:cut])
        _add(fields, key, value)
        key, value = nxt, []
    value.append(pieces[-1])
    _add(fields, key, value)
    return fields


def _add(fields: dict[str, Any], key: str, parts: list[str]) -> None:
    if not key or not (key.isidentifier() or _EXT_KEY.fullmatch(key)):
        return
    value = "".join(parts).rstrip() if len(parts) != 1 else parts[0].rstrip()
    if "\\" in value:
        value = _EXT_ESCAPE.sub(_ext_unescape, value)
    # Header names win: an extension cannot overwrite what the header said.
    fields.setdefault(key, value)


def common_of(fields: dict[str, Any]) -> dict[str, Any]:
    """The common (ECS) names of a parsed CEF event, after the ArcSight dictionary
    (the names Elastic's CEF module gives them)."""
    sent, got = number(fields.get("in")), number(fields.get("out"))
    suser, duser = text(fields.get("suser")), text(fields.get("duser"))
    request = text(fields.get("request"))
    severity = number(fields.get("cef_severity"))
    outcome = text(fields.get("outcome"))
    outcome = outcome.strip("/").lower() if outcome else None
    return compact({
        "observer": {"vendor": text(fields.get("cef_vendor")), "product": text(fields.get("cef_product")),
                     "version": text(fields.get("cef_version")), "hostname": text(fields.get("dvchost")),
                     "ip": text(fields.get("dvc"))},
        "event": {"code": text(fields.get("signature_id")), "action": text(fields.get("act")),
                  "severity": severity if severity is not None and severity <= 10 else None,
                  "outcome": outcome if outcome in ("success", "failure") else None},
        "source": endpoint(fields.get("src"), fields.get("spt"), domain=text(fields.get("shost")), bytes=sent,
                           mac=text(fields.get("smac"))),
        "destination": endpoint(fields.get("dst"), fields.get("dpt"), domain=text(fields.get("dhost")), bytes=got,
                                mac=text(fields.get("dmac"))),
        "network": {"transport": transport(fields.get("proto")),
                    "bytes": sent + got if sent is not None and got is not None else None},
        # suser acts; duser is who it was done to (or the only user named).
        "user": {**account(suser or duser), "target": account(duser) if suser else {}},
        "url": {"original": request, "full": request if request and "://" in request else None},
        "http": {"request": {"method": text(fields.get("requestMethod"))}},
        "user_agent": {"original": text(fields.get("requestClientApplication"))},
        "process": {"name": text(fields.get("deviceProcessName")) or text(fields.get("sproc")),
                    "command_line": text(fields.get("cmdLine"))},
        "file": {"name": text(fields.get("fname")), "path": text(fields.get("filePath"))},
    })
