"""Syslog headers: RFC 5424, RFC 3164 (BSD) and the common variants between them.

``parse`` splits a line into its header (time, host, facility and fields) and
the MSG part; the caller parses MSG further (CEF, key=value, JSON).

Fields produced (all under ``@fields``):

- ``severity`` (``emerg`` ... ``debug``) and ``severity_code`` (0-7) from PRI;
  the facility name (``kern``, ``auth``, ``daemon``, ``local0``...) becomes
  ``@facility``;
- ``program`` (RFC 5424 APP-NAME, RFC 3164 TAG) and ``pid`` (PROCID, ``[pid]``);
- ``msgid`` (RFC 5424);
- ``sd``: RFC 5424 structured data as ``{sd_id: {param: value}}``, so it is
  reachable as ``@fields.sd.<id>.<param>``. A repeated param keeps its last value.

Accepted shapes (``-`` is the RFC 5424 nil value, dropped):

- ``<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD [MSG]``            (RFC 5424)
- ``[<PRI>]MMM dd HH:MM:SS[.frac][ yyyy] [HOST ][TAG[[PID]]: ]MSG`` (RFC 3164),
  also ``MMM dd yyyy HH:MM:SS: `` (Cisco devices with ``logging timestamp``)
- ``<PRI>ISO-TIMESTAMP [HOST ][TAG[[PID]]: ]MSG``  (rsyslog's high-precision
  3164, very common)
- ``<PRI>MSG``: a PRI and nothing we recognize after it (RFC 3164 4.3.2 says
  a relay should keep such a line; we keep it with the PRI's fields).

RFC 3164 is ambiguous by design: the word after the date is the HOSTNAME
unless it is followed by ``:`` or ``[pid]:`` (then it is the TAG of a sender
that left the host out). A line with no host and no tag loses its first word
to ``@sender``; the RFC makes HOSTNAME mandatory, so that is the sender's bug.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from seclake.ingest.timestamp import MONTHS, civil_ms, from_iso

FACILITIES = (
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
    "uucp", "cron", "authpriv", "ftp", "ntp", "security", "console", "solaris-cron",
    "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
)  # fmt: skip
SEVERITIES = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")

_5424 = re.compile(r"<(\d{1,3})>(\d{1,2}) (\S+) (\S+) (\S+) (\S+) (\S+) ?")
# The year may follow the time (rsyslog's "... 11:58:13 2024") or precede it, with a
# colon after the time (Cisco's "logging timestamp": "May 01 2024 11:58:13: %ASA-...").
_3164_BSD = re.compile(
    r"(?:<(\d{1,3})>)?([A-Z][a-z]{2}) {1,2}(\d{1,2})(?: (\d{4}))? (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?"
    r"(?: (\d{4}))?:? "
)
_3164_ISO = re.compile(r"<(\d{1,3})>(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\S*) ")
# HOST (not ending in ':'), then TAG[PID]: ; each optional, see the module doc.
# "CEF:" and "LEEF:" are never a host or a tag: they start the MSG ("... host CEF:0|...").
_HOST_TAG = re.compile(
    r"(?:(?!CEF:|LEEF:)([^\s\[\]]+)(?<!:) )?(?:(?!CEF:|LEEF:)([^\s\[\]:]{1,64})(?:\[([^\]\s]{0,32})\])?: ?)?"
)
_PRI_ONLY = re.compile(r"<(\d{1,3})>")
_SD_ELEMENT = re.compile(r'\[([^\s=\]"]+)((?:\s+[^\s=\]"]+="[^"\\]*(?:\\.[^"\\]*)*")*)\s*\]')
_SD_PARAM = re.compile(r'([^\s=\]"]+)="([^"\\]*(?:\\.[^"\\]*)*)"')
_SD_ESCAPE = re.compile(r'\\([\\"\]])')


class Header(NamedTuple):
    timestamp: int | None  # epoch ms, None when the line has none (or "-")
    host: str | None
    facility: str | None
    fields: dict[str, Any]
    msg: str


def _pri(text: str, fields: dict[str, Any]) -> str | None:
    """Facility name of a PRI; severity into fields. None when PRI is out of range."""
    pri = int(text)
    if pri > 191:
        return None
    sev = pri & 7
    fields["severity"] = SEVERITIES[sev]
    fields["severity_code"] = sev
    return FACILITIES[pri >> 3]


def looks_like(line: str) -> bool:
    """Cheap shape test for format detection: ``<digit`` or a 3164 month prefix."""
    if line[:1] == "<":
        return line[1:2].isdigit()
    return len(line) > 15 and line[3] == " " and line[:3] in MONTHS


def parse(line: str, received_ms: int) -> Header | None:
    m = _5424.match(line)
    if m is not None:
        return _rfc5424(line, m)
    m = _3164_BSD.match(line)
    if m is not None:
        month = MONTHS.get(m.group(2))
        if month is None:
            return None
        fields: dict[str, Any] = {}
        facility = _pri(m.group(1), fields) if m.group(1) else None
        if m.group(1) and facility is None:
            return None
        year = m.group(4) or m.group(9)
        ts = civil_ms(
            month,
            int(m.group(3)),
            int(m.group(5)),
            int(m.group(6)),
            int(m.group(7)),
            m.group(8),
            int(year) if year else None,
            received_ms,
        )
        return _host_tag(line, m.end(), ts, facility, fields)
    m = _3164_ISO.match(line)
    if m is not None:
        fields = {}
        facility = _pri(m.group(1), fields)
        if facility is None:
            return None
        return _host_tag(line, m.end(), from_iso(m.group(2)), facility, fields)
    m = _PRI_ONLY.match(line)
    if m is not None:
        fields = {}
        facility = _pri(m.group(1), fields)
        if facility is None:
            return None
        return Header(None, None, facility, fields, line[m.end() :])
    return None


def _host_tag(line: str, pos: int, ts: int | None, facility: str | None, fields: dict[str, Any]) -> Header:
    m = _HOST_TAG.match(line, pos)  # always matches (everything optional)
    host, tag, pid = m.groups()  # type: ignore[union-attr]
    if tag:
        fields["program"] = tag
    if pid:
        fields["pid"] = pid
    return Header(ts, host, facility, fields, line[m.end() :])  # type: ignore[union-attr]


def _rfc5424(line: str, m: re.Match[str]) -> Header | None:
    fields: dict[str, Any] = {}
    facility = _pri(m.group(1), fields)
    if facility is None:
        return None
    stamp, host, app, procid, msgid = m.group(3, 4, 5, 6, 7)
    ts = None if stamp == "-" else from_iso(stamp)
    if app != "-":
        fields["program"] = app
    if procid != "-":
        fields["pid"] = procid
    if msgid != "-":
        fields["msgid"] = msgid
    pos = m.end()
    if line.startswith("-", pos):
        pos += 1
    elif line.startswith("[", pos):
        sd: dict[str, dict[str, str]] = {}
        while True:
            em = _SD_ELEMENT.match(line, pos)
            if em is None:
                break
            params = sd.setdefault(em.group(1), {})
            for name, value in _SD_PARAM.findall(em.group(2)):
                params[name] = _SD_ESCAPE.sub(r"\1", value) if "\\" in value else value
            pos = em.end()
        if sd:
            fields["sd"] = sd
    msg = line[pos + 1 :] if line.startswith(" ", pos) else line[pos:]
    if msg.startswith("\ufeff"):  # RFC 5424 6.4: MSG may start with a UTF-8 BOM
        msg = msg[1:]
    return Header(ts, None if host == "-" else host, facility, fields, msg)
