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
digits, ``_ . - [ ]`` right after whitespace and right before an unescaped
``=``. Values may hold spaces; an escaped ``\\=`` never ends a value.
"""

from __future__ import annotations

import re
from typing import Any

# Header field: anything but | and \, or an escaped character (unrolled loop:
# no per-character alternation).
_FIELD = r"([^|\\]*(?:\\.[^|\\]*)*)\|"
_HEADER = re.compile(r"CEF:\s?(\d+)\|" + _FIELD * 6 + r"(.*)", re.S)
_EXT_KEY = re.compile(r"(?<!\S)([\w.\-\[\]]+)=")
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
    ext = m.group(8)
    keys = list(_EXT_KEY.finditer(ext))
    for i, km in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(ext)
        value = ext[km.end() : end].rstrip()
        if "\\" in value:
            value = _EXT_ESCAPE.sub(_ext_unescape, value)
        # Header names win: an extension cannot overwrite what the header said.
        fields.setdefault(km.group(1), value)
    return fields
