"""Building an event or flow record (http-interface.md 2.6) from parsed parts.

Every parser ends here, so every record has the same top-level shape::

    {"@message": str, "@timestamp": int (epoch ms), "@sender": str,
     "@source": str, "@facility": str, "@customer": str (only when known),
     "@tags": [str, ...], "@fields": {...}, "@type": "event" | "flow"}

Defaults, each chosen so the field is always present and means one thing:

- ``@timestamp``: the time the line carries, else the receive time.
- ``@sender``: the host that sent the line (syslog HOSTNAME, or a host field
  of the record), else the vendor name.
- ``@source`` and ``@tags``: the vendor name the import was made under.
- ``@facility``: the syslog facility, else ``user``: RFC 3164 section 4.3.3
  has a relay stamp a line without PRI as user-level, and we do the same.
- ``@customer``: the caller's customer wins over one the record names, so a
  line cannot file itself under another tenant; absent when neither says.

Ingestion notes go under ``@fields._ingest`` (``truncated: true`` for a cut
line, ``notes: [...]`` for corrected values) so they are searchable and never
collide with a vendor's own field names.
"""

from __future__ import annotations

from typing import Any

from seclake.errors import ValidationFailed
from seclake.ingest.timestamp import parse_time

DATASETS = frozenset({"event", "flow"})
DEFAULT_FACILITY = "user"
INGEST_KEY = "_ingest"

# Longest line parsed, in characters; longer lines are cut to this and flagged
# (``@fields._ingest.truncated``) rather than rejected: a line is never lost,
# and 64 KiB is far above any real log line while bounding parse work.
MAX_LINE_CHARS = 65536

# Fields of a flat record (JSON or key=value) that may carry the event time,
# in order of preference: explicit names first, precise before coarse
# (FortiGate's ``eventtime`` is ns, its ``date``/``time`` pair is seconds).
# ``time`` next to a ``date`` is joined with it; a ``date`` alone counts only
# when it holds more than a day (a bare day would file the event at midnight).
TIME_KEYS = ("@timestamp", "timestamp", "eventtime", "event_time", "datetime", "ts", "time", "time_ms", "date")
# Fields of a flat record naming the host it came from.
SENDER_KEYS = ("devname", "host", "hostname", "dvchost", "sender")  # devname first: FortiGate's hostname is a web host
# Flow fields that are numbers; text from key=value or CSV-ish exporters is
# turned into numbers so byte and packet counts sum and sort as numbers.
# ``prot`` too: "6" becomes 6, a protocol name ("TCP") stays as it is.
FLOW_NUMBER_KEYS = ("sp", "dp", "prot", "rxB", "txB", "totalB", "rxP", "txP", "dur", "time_ms")


def sent_from(record: dict[str, Any], address: str) -> None:
    """Keep the address a listener received ``record`` from in ``@fields.log.source.address``
    (ECS ``log.source.address``), unless the record's own ``log``/``log.source`` is not an object."""
    where = record["@fields"].setdefault("log", {})
    if isinstance(where, dict) and isinstance(where.setdefault("source", {}), dict):
        where["source"]["address"] = address


class LineRejected(ValidationFailed):
    """A line that parsed but cannot become a record; ``field`` names what in the line.

    The import counts it as rejected and reports ``line N: <field>: <problem>``.
    """


def new_record(
    message: str,
    fields: dict[str, Any],
    *,
    vendor: str,
    dataset: str,
    timestamp: int,
    sender: str | None = None,
    facility: str | None = None,
    customer: str | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "@message": message,
        "@timestamp": timestamp,
        "@sender": sender or vendor,
        "@source": vendor,
        "@facility": facility or DEFAULT_FACILITY,
        "@tags": [vendor],
        "@fields": fields,
        "@type": dataset,
    }
    if customer:
        # Queries and data policies match @customer case-insensitively (it is
        # a keyword), so "ACME" and "acme" must be one tenant, not two that
        # see each other's records: the name is kept in lower case.
        record["@customer"] = customer.lower()
    if dataset == "flow":
        coerce_flow_numbers(fields)
    return record


def time_from_fields(fields: dict[str, Any], received_ms: int) -> int | None:
    """The event time named by a flat record's own fields, or None."""
    for key in TIME_KEYS:
        value = fields.get(key)
        if value is None:
            continue
        if key == "date" and isinstance(value, str) and len(value) <= 10:
            continue
        if key == "time" and "date" in fields:
            # A date and a time of day in separate fields (FortiGate: date=2024-05-01
            # time=12:00:01 tz="+0200"): join them into one ISO string.
            day, tod = fields.get("date"), value
            if isinstance(day, str) and isinstance(tod, str) and len(day) == 10 and ":" in tod:
                zone = fields.get("tz")
                iso = f"{day}T{tod}{zone if isinstance(zone, str) and zone[:1] in '+-' else ''}"
                ms = parse_time(iso, received_ms)
                if ms is not None:
                    return ms
        ms = parse_time(value, received_ms)
        if ms is not None:
            return ms
    return None


def sender_from_fields(fields: dict[str, Any]) -> str | None:
    for key in SENDER_KEYS:
        value = fields.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def coerce_flow_numbers(fields: dict[str, Any]) -> None:
    for key in FLOW_NUMBER_KEYS:
        value = fields.get(key)
        if isinstance(value, str) and value:
            try:
                fields[key] = int(value)
            except ValueError:
                try:
                    number = float(value)
                except ValueError:
                    continue
                if number == number and number not in (float("inf"), float("-inf")):
                    fields[key] = number


def note(fields: dict[str, Any], text: str) -> None:
    """Add an ingestion note (a corrected value) to ``@fields._ingest.notes``."""
    meta = fields.get(INGEST_KEY)
    if not isinstance(meta, dict):
        meta = fields[INGEST_KEY] = {}
    meta.setdefault("notes", []).append(text)


def mark_truncated(fields: dict[str, Any]) -> None:
    meta = fields.get(INGEST_KEY)
    if not isinstance(meta, dict):
        meta = fields[INGEST_KEY] = {}
    meta["truncated"] = True
