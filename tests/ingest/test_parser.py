from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.errors import ValidationFailed
from seclake.ingest.parser import iter_records, parse_line
from seclake.ingest.reader import IngestCounts, Line
from seclake.ingest.record import MAX_LINE_CHARS, LineRejected

RECEIVED = 1714564801000


def _parse(line: str, **kw):
    kw.setdefault("vendor", "v")
    kw.setdefault("dataset", "event")
    return parse_line(line, received_ms=RECEIVED, **kw)


@pytest.mark.parametrize(
    "line, marker",
    [
        ('{"a": 1}', ("a", 1)),
        ("<13>May  1 11:59:58 h app: x", ("program", "app")),
        ("May  1 11:59:58 h app: x", ("program", "app")),
        ("CEF:0|v|p|1|sig|n|5|src=1.2.3.4", ("signature_id", "sig")),
        ("fw1 CEF:0|v|p|1|sig|n|5|src=1.2.3.4", ("src", "1.2.3.4")),
        ("a=1 b=2", ("b", "2")),
        ('  {"a": 1}', ("a", 1)),
    ],
)
def test_auto_detection(line: str, marker: tuple[str, object]) -> None:
    out = _parse(line)
    assert out is not None
    record, understood = out
    assert understood
    assert record["@fields"][marker[0]] == marker[1]
    assert record["@message"] == line


def test_blank_lines_are_not_records() -> None:
    assert _parse("") is None
    assert _parse("  \t ") is None
    assert _parse("\r\n") is None
    # Only ASCII whitespace is blank: anything else is data, kept raw.
    assert _parse("\x1c")[1] is False  # type: ignore[index]
    assert _parse("\u00a0")[1] is False  # type: ignore[index]


def test_raw_event() -> None:
    out = _parse("nothing to see here")
    assert out == (
        {
            "@message": "nothing to see here",
            "@timestamp": RECEIVED,
            "@sender": "v",
            "@source": "v",
            "@facility": "user",
            "@tags": ["v"],
            "@fields": {},
            "@type": "event",
        },
        False,
    )


def test_explicit_format_uses_only_that_parser() -> None:
    assert _parse("a=1 b=2", fmt="jsonl")[1] is False  # type: ignore[index]
    assert _parse('{"a": 1}', fmt="kv")[1] is False  # type: ignore[index]
    rec, ok = _parse("<13>May  1 11:59:58 h app: a=1 b=2", fmt="syslog")  # type: ignore[misc]
    assert ok and rec["@fields"]["a"] == "1"
    rec, ok = _parse("x=1 CEF:0|v|p|1|s|n|5|dst=2.2.2.2", fmt="cef")  # type: ignore[misc]
    assert ok and rec["@fields"]["dst"] == "2.2.2.2"


def test_syslog_message_parsed_as_json() -> None:
    rec, ok = _parse('<13>May  1 11:59:58 h app: {"user": "bob", "severity": "high", "ts": 1714564700}')  # type: ignore[misc]
    assert ok
    assert rec["@fields"]["user"] == "bob"
    assert rec["@fields"]["severity"] == "notice"  # the header's field wins a clash
    assert rec["@timestamp"] == 1714564700000  # the message's time wins


def test_syslog_header_time_when_message_has_none() -> None:
    rec, _ = _parse("<13>May  1 11:59:58 h app: a=1 b=2")  # type: ignore[misc]
    assert rec["@timestamp"] == 1714564798000


def test_sender_from_cef_when_syslog_has_no_host() -> None:
    rec, _ = _parse("<13>May  1 11:59:58 CEF:0|v|p|1|s|n|5|dvchost=edr7")  # type: ignore[misc]
    assert rec["@sender"] == "edr7"


def test_customer_and_flow_dataset() -> None:
    rec, _ = _parse("sip=1.1.1.1 dp=443 rxB=12", dataset="flow", customer="acme")  # type: ignore[misc]
    assert rec["@type"] == "flow"
    assert rec["@customer"] == "acme"
    assert rec["@fields"] == {"sip": "1.1.1.1", "dp": 443, "rxB": 12}


def test_long_lines_are_cut_and_flagged() -> None:
    line = "a=1 b=" + "x" * (MAX_LINE_CHARS + 10)
    rec, ok = _parse(line)  # type: ignore[misc]
    assert ok
    assert len(rec["@message"]) == MAX_LINE_CHARS
    assert rec["@fields"]["_ingest"] == {"truncated": True}
    # A cut JSON line no longer parses: kept raw, flagged.
    rec, ok = _parse('{"a": "' + "x" * MAX_LINE_CHARS + '"}')  # type: ignore[misc]
    assert not ok and rec["@fields"] == {"_ingest": {"truncated": True}}


def test_reader_truncation_flag_is_kept() -> None:
    rec, _ = _parse("a=1 b=2", truncated=True)  # type: ignore[misc]
    assert rec["@fields"]["_ingest"] == {"truncated": True}


def test_bad_arguments() -> None:
    with pytest.raises(ValidationFailed) as info:
        _parse("a=1", dataset="behavior")
    assert info.value.field == "dataset"
    with pytest.raises(ValidationFailed) as info:
        _parse("a=1", fmt="csv")
    assert info.value.field == "format"


def test_iter_records_counts_every_outcome() -> None:
    lines = [
        Line(1, "a=1 b=2", False),
        Line(2, "free text", False),
        Line(3, '{"@fields": 1}', False),
        Line(5, "x=" + "y" * 10, True),
    ]
    counts = IngestCounts()
    records = list(iter_records(lines, vendor="v", dataset="event", received_ms=RECEIVED, counts=counts))
    assert [r["@message"][:4] for r in records] == ["a=1 ", "free", "x=yy"]
    assert counts.as_dict() == {
        "accepted": 2,
        "raw": 1,
        "rejected": 1,
        "truncated": 1,
        "reasons": ["line 3: @fields: expected an object, got number"],
    }


# Any text at all: a record (understood or raw), None for blank, or a LineRejected;
# never another exception, and the record always has the 2.6 shape.
_PIECES = st.sampled_from(
    ["<13>", "<165>1 ", "May  1 12:00:00 ", "CEF:0|", "|", "=", '"', "'", "\\", "{", "}", "[", "]", ":", " ",
     "a", "1", "-", "\ufeff", "\x00", "é", "null", "@timestamp", "@fields", "1e999", "9" * 20]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(_PIECES, max_size=40).map("".join)))
def test_any_text_gives_a_well_formed_record(text: str) -> None:
    try:
        out = parse_line(text, vendor="v", dataset="event", received_ms=RECEIVED)
    except LineRejected as exc:
        assert exc.field and exc.message
        return
    if out is None:
        assert not text.strip(" \t\r\n\v\f")
        return
    record, _ = out
    assert isinstance(record["@message"], str)
    assert isinstance(record["@timestamp"], int) and not isinstance(record["@timestamp"], bool)
    assert 0 <= record["@timestamp"] < 4102444800000
    for key in ("@sender", "@source", "@facility"):
        assert isinstance(record[key], str) and record[key]
    assert isinstance(record["@fields"], dict)
    assert all(isinstance(t, str) for t in record["@tags"]) and "v" in record["@tags"]
    assert record["@type"] == "event"
