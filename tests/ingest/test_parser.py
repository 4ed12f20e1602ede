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


@pytest.mark.parametrize(
    "line",
    [
        'date=2024-05-01 time=11:59:00 devname="FGT60E-HQ" devid="FGT1" logid="0000000013" type="traffic" '
        'subtype="forward" srcip=10.0.0.5 srcport=51234 dstip=8.8.8.8 dstport=53 proto=17 action="deny" policyid=0',
        "<14>May  1 11:58:14 pa-fw 1,2024/05/01 11:58:14,012801096514,TRAFFIC,deny,2305,2024/05/01 11:58:14,"
        "203.0.113.50,10.1.1.10,0.0.0.0,0.0.0.0,deny-inbound,,,not-applicable,vsys1,untrust,dmz,ethernet1/1,,Forward,"
        "2024/05/01 11:58:14,0,1,4454,22,0,0,0x0,tcp,deny,74,74,0,1,2024/05/01 11:58:14,0,any,0,123456790,0x0,Germany,"
        "10.0.0.0-10.255.255.255,0,1,0,policy-deny",
        '<164>May  1 11:58:16 fw-asa %ASA-4-106023: Deny tcp src outside:198.51.100.77/4454 dst inside:10.1.1.10/22 '
        'by access-group "outside_access_in" [0x0, 0x0]',
        "<166>May  1 11:58:17 fw-asa %ASA-6-106100: access-list outside_in denied tcp outside/198.51.100.7(4455) -> "
        "inside/10.1.1.10(22) hit-cnt 1 first hit [0x0, 0x0]",
    ],
)
def test_a_blocked_connection_is_not_a_failure(line: str) -> None:
    # ECS ("Using the categorization fields", its firewall example): the deny is event.type denied and
    # the firewall's action succeeded, so event.outcome:failure finds failed logins, not blocked traffic.
    record, understood = _parse(line)
    event = record["@fields"]["event"]
    assert understood and event["category"] == "network" and event["type"] == "denied"
    assert event["outcome"] == "success"


def test_a_denied_login_stays_a_failure() -> None:
    line = ('<166>May  1 11:58:18 fw-asa %ASA-6-605004: Login denied from 203.0.113.9/51515 to '
            'outside:198.51.100.1/ssh for user "admin"')
    event = _parse(line)[0]["@fields"]["event"]
    assert (event["category"], event["outcome"]) == ("authentication", "failure")
