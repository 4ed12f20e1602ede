"""One raw line in, one record out: format detection and the glue between parsers.

``parse_line`` returns ``(record, understood)``. ``understood`` is False when
no parser made sense of the line: it is still kept, as a raw event
(``@message`` the line, ``@fields`` empty, ``@timestamp`` the receive time),
and the caller counts it as raw. A line is never dropped silently: it is a
record, a raw record, or a ``LineRejected`` with a reason. Blank lines are not
records (``parse_line`` returns None; ``iter_lines`` never yields them).

Lines longer than ``MAX_LINE_CHARS`` are cut to it and parsed as far as they
go, with ``@fields._ingest.truncated: true``: a cut JSON line is kept as raw,
a cut syslog or key=value line keeps the fields before the cut.

``fmt="auto"`` detects by shape, cheapest test first:
``{`` → JSON lines; ``<digit`` or a 3164 month prefix → syslog; ``CEF:`` at
the start or after a prefix → CEF; anything else → key=value. When the
detected parser does not understand the line, CEF (if ``CEF:`` occurs) and
then key=value get a try before the line is kept raw. An explicit ``fmt``
uses that parser only (syslog still parses its MSG as CEF, key=value or JSON).

Inside syslog, the MSG part is parsed as CEF (``CEF:``), JSON (``{``) or
key=value when it looks like one; its fields join the header's, and on a
name clash the header's field wins (``severity`` from PRI is the syslog
severity, whatever the message says). The time, though, comes from the
message when it carries a valid one (see ``_syslog``); the host from the
header.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from seclake.errors import ValidationFailed
from seclake.ingest import (
    asa,
    auditd,
    authlog,
    cef,
    cloudtrail,
    ecs,
    entra,
    eventxml,
    fortigate,
    jsonl,
    kv,
    leef,
    message,
    okta,
    panos,
    suricata,
    syslog,
    sysmon,
    winsecurity,
    zeek,
)
from seclake.ingest.reader import IngestCounts, Line
from seclake.ingest.record import (
    DATASETS,
    MAX_LINE_CHARS,
    LineRejected,
    mark_truncated,
    new_record,
    sender_from_fields,
    sent_from,
    time_from_fields,
)
from seclake.ingest.timestamp import parse_time

FORMATS = frozenset({"auto", "jsonl", "syslog", "cef", "leef", "kv"})
BLANK = " \t\r\n\v\f"
# JSON sources with their own mapping to the common names, told apart by their keys (first match wins:
# Sysmon is a Windows event of one channel, so it comes before the other Windows events).
JSON_SOURCES = (sysmon, winsecurity, zeek, suricata, cloudtrail, okta, entra)


def parse_line(
    line: str,
    *,
    vendor: str,
    dataset: str,
    fmt: str = "auto",
    received_ms: int,
    customer: str | None = None,
    truncated: bool = False,
) -> tuple[dict[str, Any], bool] | None:
    """Parse one line into a record; None for a blank line; raises LineRejected.

    ``vendor`` must already be valid (``validate_vendor``); ``truncated`` says
    the reader already cut the line.
    """
    if dataset not in DATASETS:
        raise ValidationFailed("dataset", f"must be 'event' or 'flow', not {dataset!r}")
    if fmt not in FORMATS:
        raise ValidationFailed("format", f"must be one of {', '.join(sorted(FORMATS))}, not {fmt!r}")
    if line[-1:] in ("\n", "\r"):
        line = line.rstrip("\r\n")
    # Blank means ASCII whitespace only, as for the reader (bytes.isspace):
    # a line of U+00A0 or U+001C is odd, but it is data and is kept.
    if not line.strip(BLANK):
        return None
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS]
        truncated = True

    record = _parse(line, vendor, dataset, fmt, received_ms, customer)
    understood = record is not None
    if record is None:
        record = new_record(line, {}, vendor=vendor, dataset=dataset, timestamp=received_ms, customer=customer)
    if truncated:
        mark_truncated(record["@fields"])
    return record, understood


def _parse(
    line: str, vendor: str, dataset: str, fmt: str, received_ms: int, customer: str | None
) -> dict[str, Any] | None:
    # Detection looks past leading blanks; the record keeps the line as sent.
    text = line.lstrip(BLANK) if line[0] in BLANK else line
    if fmt == "auto":
        first = text[0]
        if first == "{":
            record = _json(text, line, vendor, dataset, received_ms, customer)
        elif syslog.looks_like(text):
            record = _syslog(text, line, vendor, dataset, received_ms, customer)
        else:
            record = None
        if record is None and "CEF:" in text:
            record = _cef(text, line, vendor, dataset, received_ms, customer)
        if record is None and "LEEF:" in text:
            record = _cef(text, line, vendor, dataset, received_ms, customer, marker="LEEF:")
        if record is None:
            record = _kv(text, line, vendor, dataset, received_ms, customer)
        return record
    if fmt == "jsonl":
        return _json(text, line, vendor, dataset, received_ms, customer)
    if fmt == "syslog":
        return _syslog(text, line, vendor, dataset, received_ms, customer)
    if fmt == "cef":
        return _cef(text, line, vendor, dataset, received_ms, customer)
    if fmt == "leef":
        return _cef(text, line, vendor, dataset, received_ms, customer, marker="LEEF:")
    return _kv(text, line, vendor, dataset, received_ms, customer)


def _json(
    text: str, line: str, vendor: str, dataset: str, received_ms: int, customer: str | None
) -> dict[str, Any] | None:
    obj = jsonl.decode(text)
    if not isinstance(obj, dict):  # not JSON, or JSON that is not an object
        return None
    record = jsonl.to_record(obj, line, vendor=vendor, dataset=dataset, received_ms=received_ms, customer=customer)
    fields = record.get("@fields") if record is not None else None
    if isinstance(fields, dict):
        for source in JSON_SOURCES:
            if source.matches(fields):
                # Common names beside the source's own; the source's event time
                # wins over a guess from generic keys, not over a @timestamp sent.
                when = source.enrich(fields, dataset)
                ms = parse_time(when, received_ms) if when is not None and "@timestamp" not in obj else None
                if ms is not None:
                    record["@timestamp"] = ms
                break
        if dataset == "event" and "@message" not in obj:
            message.add(fields)  # the line a person reads, beside the raw one (ingest/message.py)
    return record


def _message_fields(msg: str) -> tuple[dict[str, Any] | None, str]:
    """Fields of a syslog MSG part and which parser gave them ("" when none)."""
    start = msg.find("CEF:")
    if start != -1:
        fields = cef.parse(msg[start:])
        if fields is not None:
            return fields, "cef"
    start = msg.find("LEEF:")
    if start != -1:
        fields = leef.parse(msg[start:])
        if fields is not None:
            return fields, "leef"
    if msg[:1].isdigit() and panos.looks_like(msg):
        fields = panos.parse(msg)
        if fields is not None:
            return fields, "panos"
    if msg[:1] == "<" and eventxml.looks_like(msg):
        fields = eventxml.parse(msg)
        if fields is not None:
            return fields, "eventxml"
    if msg[:1] == "{":
        obj = jsonl.decode(msg)
        if isinstance(obj, dict):
            return obj, "json"
    if "=" in msg:
        return kv.parse(msg), "kv"
    return None, ""


def _syslog(
    text: str, line: str, vendor: str, dataset: str, received_ms: int, customer: str | None
) -> dict[str, Any] | None:
    header = syslog.parse(text, received_ms)
    if header is None:
        return None
    fields = header.fields
    ts = None
    sender = header.host
    more, kind = _message_fields(header.msg) if header.msg else (None, "")
    if more:
        for key, value in more.items():
            fields.setdefault(key, value)
        # The message's own time wins over the header's: a 3164 header has no
        # year, no zone and whole seconds, while CEF rt= or FortiGate eventtime=
        # are exact; and the header stamps when the line was sent, not the event.
        ts = _header_time(more, kind, received_ms)
        if sender is None:
            sender = _header_sender(more, kind)
    if ts is None:
        ts = header.timestamp
    if header.msg:
        # sshd, sudo, su, Cisco ASA: the common names (user.name, source.ip, event.outcome...) beside the line's own.
        program = fields.get("program")
        common = authlog.fields_of(program, header.msg) or asa.fields_of(program, header.msg)
        if common:
            if program[0] != "%":  # an ASA tag is not a process
                pid = fields.get("pid")
                if isinstance(pid, str) and pid.isdigit() and len(pid) < 10:
                    common.setdefault("process", {})["pid"] = int(pid)
                common.setdefault("process", {})["name"] = program
                if header.host:  # the host sshd, sudo or su ran on (an ASA's name is the observer's)
                    common["host"] = {"name": header.host}
            ecs.merge(fields, common)
        elif more:
            when = _add_common(fields, kind, header.msg)
            ts = when if when is not None else ts
            if kind == "json" and dataset == "event":
                message.add(fields)  # JSON in syslog (NXLog's to_json() over syslog) reads no better raw
    return new_record(
        line,
        fields,
        vendor=vendor,
        dataset=dataset,
        timestamp=received_ms if ts is None else ts,
        sender=sender,
        facility=header.facility,
        customer=customer,
    )


def _header_time(fields: dict[str, Any], kind: str, received_ms: int) -> int | None:
    """The event time of a message's own fields: CEF and LEEF name theirs, others are guessed."""
    keys = cef.TIME_KEYS if kind == "cef" else leef.TIME_KEYS if kind == "leef" else None
    if keys is None:
        return time_from_fields(fields, received_ms)
    for key in keys:
        value = fields.get(key)
        if value is not None:
            ms = parse_time(value, received_ms)
            if ms is not None:
                return ms
    return None


def _header_sender(fields: dict[str, Any], kind: str) -> str | None:
    keys = cef.SENDER_KEYS if kind == "cef" else leef.SENDER_KEYS if kind == "leef" else None
    if keys is None:
        return sender_from_fields(fields)
    for key in keys:
        value = fields.get(key)
        if value:
            return value
    return None


# Formats whose fields have a mapping to the common names.
_COMMON = {"cef": cef.common_of, "leef": leef.common_of, "panos": panos.common_of}


def _add_common(fields: dict[str, Any], kind: str, raw: str = "") -> int | None:
    """Add the common (ECS) names of a flat record, by its format (and for key=value, its source).

    Returns the event time a source names in a way no field does (auditd's
    ``msg=audit(<epoch>:<serial>)``), as epoch ms, else None.
    """
    if kind == "eventxml":  # Sysmon for Linux: the common names of Sysmon, its UtcTime
        when = sysmon.enrich(fields) if sysmon.matches(fields) else None
        return parse_time(when, 0) if when is not None else None
    common_of = _COMMON.get(kind)
    if common_of is None and kind == "kv":
        if fortigate.matches(fields):
            common_of = fortigate.common_of
        elif auditd.matches(fields, raw):
            common, when = auditd.common_of(fields, raw)
            ecs.merge(fields, common)
            return parse_time(when, 0) if when is not None else None
    if common_of is not None:
        ecs.merge(fields, common_of(fields))
    return None


def _cef(
    text: str, line: str, vendor: str, dataset: str, received_ms: int, customer: str | None, marker: str = "CEF:"
) -> dict[str, Any] | None:
    """A CEF (or, with ``marker="LEEF:"``, LEEF) line, possibly after a prefix that is not syslog."""
    start = text.find(marker)
    if start == -1:
        return None
    kind = marker[:-1].lower()
    fields = (cef.parse if kind == "cef" else leef.parse)(text[start:])
    if fields is None:
        return None
    ts = _header_time(fields, kind, received_ms)
    sender = _header_sender(fields, kind)
    if start:
        # A prefix that is not syslog (we got here), e.g. "2024-05-01T12:00:00Z fw01 CEF:...":
        # its first word may be the time and its last the host.
        words = text[:start].split()
        if ts is None and words:
            ts = parse_time(words[0], received_ms)
        if sender is None and len(words) >= 2:
            sender = words[-1]
    _add_common(fields, kind)
    return new_record(
        line,
        fields,
        vendor=vendor,
        dataset=dataset,
        timestamp=received_ms if ts is None else ts,
        sender=sender,
        customer=customer,
    )


def _kv(
    text: str, line: str, vendor: str, dataset: str, received_ms: int, customer: str | None
) -> dict[str, Any] | None:
    if "=" not in text:
        return None
    fields = kv.parse(text)
    if fields is None:
        return None
    ts = time_from_fields(fields, received_ms)
    # auditd's hostname= is the remote peer, not the sender; its node= is.
    sender = auditd.sender(fields) if auditd.matches(fields, text) else sender_from_fields(fields)
    when = _add_common(fields, "kv", text)
    ts = when if ts is None else ts
    return new_record(
        line,
        fields,  # type: ignore[arg-type]
        vendor=vendor,
        dataset=dataset,
        timestamp=received_ms if ts is None else ts,
        sender=sender,
        customer=customer,
    )


def iter_records(lines: Iterable[Line], **params: Any) -> Iterator[dict[str, Any]]:
    """The records of ``iter_numbered`` (same parameters), without their line numbers."""
    for _number, record in iter_numbered(lines, **params):
        yield record


def iter_numbered(
    lines: Iterable[Line],
    *,
    vendor: str,
    dataset: str,
    fmt: str = "auto",
    received_ms: int,
    customer: str | None = None,
    counts: IngestCounts,
    address: str | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of numbered lines (from ``iter_lines``), counting each outcome in
    ``counts``; the number names the line in a refusal. Rejected lines yield nothing; their
    reason and line number go to ``counts``. ``address``: the sender a listener received the
    lines from, kept in each record (``record.sent_from``)."""
    for number, text, truncated in lines:
        try:
            result = parse_line(
                text,
                vendor=vendor,
                dataset=dataset,
                fmt=fmt,
                received_ms=received_ms,
                customer=customer,
                truncated=truncated,
            )
        except LineRejected as exc:
            counts.reject(number, exc.message)
            continue
        if result is None:
            continue
        record, understood = result
        counts.count(understood, truncated=truncated or len(text) > MAX_LINE_CHARS)
        if address is not None:
            sent_from(record, address)
        yield number, record
