from __future__ import annotations

from seclake.ingest.record import coerce_flow_numbers, new_record, sender_from_fields, time_from_fields

RECEIVED = 1714564801000


def test_defaults() -> None:
    rec = new_record("m", {}, vendor="v", dataset="event", timestamp=1)
    assert rec == {
        "@message": "m",
        "@timestamp": 1,
        "@sender": "v",
        "@source": "v",
        "@facility": "user",
        "@tags": ["v"],
        "@fields": {},
        "@type": "event",
    }


def test_time_from_fields_preference() -> None:
    # eventtime (ns) beats the date/time pair.
    f = {"date": "2024-05-01", "time": "11:00:00", "eventtime": "1714564740123456789"}
    assert time_from_fields(f, RECEIVED) == 1714564740123
    # date + time + tz joined.
    assert time_from_fields({"date": "2024-05-01", "time": "13:59:00", "tz": "+0200"}, RECEIVED) == 1714564740000
    # a bare day is not a time; a full date field is.
    assert time_from_fields({"date": "2024-05-01"}, RECEIVED) is None
    assert time_from_fields({"date": "2024-05-01T11:59:00Z"}, RECEIVED) == 1714564740000
    # unparseable candidates are skipped.
    assert time_from_fields({"time": "fast", "ts": "1714564740"}, RECEIVED) == 1714564740000
    assert time_from_fields({"user": "x"}, RECEIVED) is None


def test_sender_from_fields() -> None:
    assert sender_from_fields({"host": {"name": "x"}, "hostname": "h"}) == "h"
    assert sender_from_fields({"host": ""}) is None


def test_flow_numbers() -> None:
    f = {"sp": "80", "dur": "1.5", "prot": "TCP", "rxB": "n/a", "txB": 5, "dp": "inf", "sip": "10.0.0.1"}
    coerce_flow_numbers(f)
    assert f == {"sp": 80, "dur": 1.5, "prot": "TCP", "rxB": "n/a", "txB": 5, "dp": "inf", "sip": "10.0.0.1"}


def test_a_customer_is_one_tenant_whatever_its_case() -> None:
    # Issue 17.13: data policies match @customer case-insensitively, so an
    # "ACME" beside "acme" was a second tenant that acme's analysts saw.
    from seclake.ingest.parser import iter_records  # noqa: PLC0415
    from seclake.ingest.reader import IngestCounts, iter_lines  # noqa: PLC0415

    assert new_record("m", {}, vendor="v", dataset="event", timestamp=1, customer="ACME")["@customer"] == "acme"
    body = b'{"@customer": "Acme", "@message": "one"}\n{"@message": "two"}\n'
    for customer, expected in ((None, ["acme", None]), ("GLOBEX", ["globex", "globex"])):
        records = iter_records(
            iter_lines(body, max_bytes=1 << 20), vendor="v", dataset="event", fmt="jsonl",
            received_ms=RECEIVED, customer=customer, counts=IngestCounts(),
        )
        assert [r.get("@customer") for r in records] == expected
