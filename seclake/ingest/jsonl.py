"""JSON lines: one JSON object per line.

Two shapes are told apart by their keys:

- a record already in the 2.6 shape (any of ``@fields``, ``@message``,
  ``@timestamp``, ``@metaflow``, ``@sender``, ``@source``, ``@facility``,
  ``@customer``, ``@tags``, ``@type`` at the top) is taken as is, after its
  top-level fields are checked (see ``_shaped``);
- any other object is a flat record: the object becomes ``@fields`` (nested
  objects stay nested) and the raw line becomes ``@message``.

Hostile input is bounded: the line is at most ``MAX_LINE_CHARS`` (the parser
cuts it), nesting deeper than ``MAX_DEPTH`` rejects the line, and integers
that do not fit in 64 bits, or floats that overflow, are kept as their text
(a string) instead of turning into a lossy float or failing the line.

A line that is not valid JSON, or JSON that is not an object, is not
understood: the caller keeps it as a raw event. Syntax errors are common in
real logs (a cut line, a log line that happens to start with ``{``) and the
text itself is harmless, so it is kept rather than rejected.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from seclake.ingest.record import (
    LineRejected,
    new_record,
    note,
    sender_from_fields,
    time_from_fields,
)
from seclake.ingest.timestamp import parse_time

# Same default as settings.max_json_depth: deeper than any real log record.
MAX_DEPTH = 32

SHAPE_KEYS = frozenset(
    {"@fields", "@message", "@timestamp", "@metaflow", "@sender", "@source", "@facility", "@customer", "@tags", "@type"}
)

# 19+ digits in a row may be an integer beyond 64 bits, which orjson turns
# into a lossy float or an int no 64-bit index takes: such lines go to the
# careful decoder. (A float that overflows makes orjson fail, and a failed
# line gets a second try with the careful decoder too.) [0-9], not \d: it is
# about twice as fast to scan.
_CAREFUL = re.compile(r"[0-9]{19}")
# A JSON string, or a bracket outside one.
_DEPTH_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


class _NotJson(Exception):
    pass


def _int_or_text(text: str) -> int | str:
    if len(text) > 20:
        return text
    n = int(text)
    return n if _I64_MIN <= n <= _I64_MAX else text


def _float_or_text(text: str) -> float | str:
    f = float(text)
    return f if f - f == 0.0 else text  # inf - inf is nan, so this is "finite"


def _no_constant(name: str) -> Any:
    raise _NotJson(name)  # NaN / Infinity are not JSON


def _too_deep_at(text: str) -> int | None:
    """Character offset where nesting first exceeds MAX_DEPTH, else None."""
    depth = 0
    for m in _DEPTH_TOKEN.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return m.start()
        elif token in "]}":
            depth -= 1
    return None


def decode(text: str) -> Any:
    """The JSON value of a line; NOT_JSON when it does not parse; LineRejected when too deep."""
    # A line cannot nest deeper than it has openers: the full scan runs only
    # for lines with many brackets, not for every flat record.
    if text.count("{") + text.count("[") > MAX_DEPTH:
        at = _too_deep_at(text)
        if at is not None:
            raise LineRejected("JSON", f"nested deeper than {MAX_DEPTH} levels at character {at + 1}")
    if _CAREFUL.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text, parse_int=_int_or_text, parse_float=_float_or_text, parse_constant=_no_constant)
    except (ValueError, _NotJson, RecursionError):
        return NOT_JSON


NOT_JSON = object()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _text(obj: dict[str, Any], key: str) -> str | None:
    """A top-level text field: strings as is, numbers as their text, null/"" as absent."""
    value = obj.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise LineRejected(key, f"expected a string, got {_kind(value)}")


def to_record(
    obj: dict[str, Any],
    line: str,
    *,
    vendor: str,
    dataset: str,
    received_ms: int,
    customer: str | None,
) -> dict[str, Any]:
    for key in obj:
        if key in SHAPE_KEYS:
            return _shaped(obj, line, vendor=vendor, dataset=dataset, received_ms=received_ms, customer=customer)
    fields = obj
    ts = time_from_fields(fields, received_ms)
    return new_record(
        line,
        fields,
        vendor=vendor,
        dataset=dataset,
        timestamp=received_ms if ts is None else ts,
        sender=sender_from_fields(fields),
        customer=customer,
    )


def _shaped(
    obj: dict[str, Any],
    line: str,
    *,
    vendor: str,
    dataset: str,
    received_ms: int,
    customer: str | None,
) -> dict[str, Any]:
    """A record in the 2.6 shape, its top-level fields checked.

    Corrected: a number where text belongs becomes its text; ``@message``
    missing becomes the raw line; a ``@timestamp`` in any accepted spelling
    becomes epoch ms, and one that is not a time (wrong type, unparseable,
    out of range) becomes the receive time with a note in ``@fields._ingest``.
    Rejected: ``@fields`` not an object, text fields holding booleans,
    arrays or objects, ``@tags`` not a string or array of strings, ``@type``
    naming another dataset.
    Kept: ``@source`` and ``@customer`` the record names (the caller's
    customer still wins), with the vendor added to ``@tags``.
    Moved: the flow fields of ``@metaflow.flow`` are copied into ``@fields``
    (the record's own ``@fields`` win); any other top-level key goes into
    ``@fields`` under its own name.
    """
    fields = obj.get("@fields")
    if fields is None:
        fields = {}
    elif not isinstance(fields, dict):
        raise LineRejected("@fields", f"expected an object, got {_kind(fields)}")

    rtype = obj.get("@type")
    if rtype is not None and rtype != dataset:
        shown = rtype if isinstance(rtype, str) else _kind(rtype)
        raise LineRejected("@type", f"is {shown!r} but the import is into {dataset!r}")

    message = obj.get("@message")
    if message is None:
        message = line
    elif not isinstance(message, str):
        if isinstance(message, (int, float)) and not isinstance(message, bool):
            message = str(message)
        else:
            raise LineRejected("@message", f"expected a string, got {_kind(message)}")

    # Plain strings are the rule: only anything else pays for a call.
    sender = obj.get("@sender")
    if sender.__class__ is not str or not sender:
        sender = _text(obj, "@sender")
    source = obj.get("@source")
    if source.__class__ is not str or not source:
        source = _text(obj, "@source")
    facility = obj.get("@facility")
    if facility.__class__ is not str or not facility:
        facility = _text(obj, "@facility")
    rcustomer = obj.get("@customer")
    if rcustomer.__class__ is not str or not rcustomer:
        rcustomer = _text(obj, "@customer")

    tags = obj.get("@tags")
    if tags is None:
        tags = []
    elif isinstance(tags, str):
        tags = [tags]
    elif isinstance(tags, list):
        for i, tag in enumerate(tags):
            if not isinstance(tag, str):
                raise LineRejected(f"@tags[{i}]", f"expected a string, got {_kind(tag)}")
        tags = list(tags)
    else:
        raise LineRejected("@tags", f"expected an array of strings, got {_kind(tags)}")

    metaflow = obj.get("@metaflow")
    if metaflow is not None:
        if not isinstance(metaflow, dict):
            raise LineRejected("@metaflow", f"expected an object, got {_kind(metaflow)}")
        flow = metaflow.get("flow")
        if flow is not None and not isinstance(flow, dict):
            raise LineRejected("@metaflow.flow", f"expected an object, got {_kind(flow)}")
        for key, value in (flow or {}).items():
            fields.setdefault(key, value)
        rest = {k: v for k, v in metaflow.items() if k != "flow"}
        if rest:
            fields.setdefault("metaflow", rest)

    for key, value in obj.items():
        if key not in SHAPE_KEYS:
            fields.setdefault(key, value)

    raw_ts = obj.get("@timestamp")
    if raw_ts is None:
        ts = time_from_fields(fields, received_ms)
    else:
        ts = None if isinstance(raw_ts, bool) else parse_time(raw_ts, received_ms)
        if ts is None:
            shown = json.dumps(raw_ts)[:40] if isinstance(raw_ts, (str, int, float)) else _kind(raw_ts)
            note(fields, f"@timestamp {shown} is not a time; used the receive time")

    record = new_record(
        message,
        fields,
        vendor=source or vendor,
        dataset=dataset,
        timestamp=received_ms if ts is None else ts,
        sender=sender,
        facility=facility,
        customer=customer or rcustomer,
    )
    if vendor not in tags:
        tags.append(vendor)
    record["@tags"] = tags
    if source:
        # new_record defaulted the sender to the source; the default is the vendor.
        record["@sender"] = sender or vendor
    return record
