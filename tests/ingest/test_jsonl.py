from __future__ import annotations

import json

import pytest

from seclake.ingest.jsonl import MAX_DEPTH, NOT_JSON, decode, to_record
from seclake.ingest.record import LineRejected

RECEIVED = 1714564801000


def _record(obj: dict, *, dataset: str = "event", customer: str | None = None) -> dict:
    return to_record(obj, json.dumps(obj), vendor="v", dataset=dataset, received_ms=RECEIVED, customer=customer)


def test_decode_not_json() -> None:
    for text in ('{"a": 1', "{x}", '{"a": NaN}', '{"a": Infinity}', "{'a': 1}"):
        assert decode(text) is NOT_JSON, text


def test_decode_big_numbers_keep_their_text() -> None:
    obj = decode('{"a": 123456789012345678901234567890, "b": 1e999, "c": -1e999, "d": 9223372036854775807, "e": 1.5e300}')
    assert obj == {"a": "123456789012345678901234567890", "b": "1e999", "c": "-1e999", "d": 2**63 - 1, "e": 1.5e300}
    # 20000 digits: no int-conversion blow-up (Python caps str->int at 4300 digits).
    assert decode('{"a": ' + "9" * 20000 + "}") == {"a": "9" * 20000}


def test_decode_depth_limit() -> None:
    ok = '{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
    assert isinstance(decode(ok), dict)
    bad = '{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    with pytest.raises(LineRejected, match="deeper than 32 levels at character 38"):
        decode(bad)
    # Way past the JSON library's own recursion limits: still a clean rejection.
    with pytest.raises(LineRejected):
        decode("[" * 100_000 + "]" * 100_000)
    # Brackets inside strings are not nesting.
    assert decode(json.dumps({"s": "[" * 100})) == {"s": "[" * 100}


def test_flat_object_goes_into_fields() -> None:
    line = '{"user": "bob", "n": {"deep": [1, {"x": null}]}, "host": "h1", "time": "2024-05-01T11:59:00Z"}'
    rec = to_record(json.loads(line), line, vendor="v", dataset="event", received_ms=RECEIVED, customer="c1")
    assert rec == {
        "@message": line,
        "@timestamp": 1714564740000,
        "@sender": "h1",
        "@source": "v",
        "@facility": "user",
        "@tags": ["v"],
        "@fields": {"user": "bob", "n": {"deep": [1, {"x": None}]}, "host": "h1", "time": "2024-05-01T11:59:00Z"},
        "@type": "event",
        "@customer": "c1",
    }


def test_shaped_record_taken_as_is() -> None:
    obj = {
        "@message": "m",
        "@timestamp": 1714564740000,
        "@sender": "s",
        "@source": "src",
        "@facility": "auth",
        "@customer": "acme",
        "@tags": ["a"],
        "@fields": {"k": 1},
        "@type": "event",
    }
    rec = _record(dict(obj))
    assert rec == {**obj, "@tags": ["a", "v"]}


def test_callers_customer_wins() -> None:
    assert _record({"@message": "m", "@customer": "other"}, customer="mine")["@customer"] == "mine"
    assert "@customer" not in _record({"@message": "m"})


def test_corrections() -> None:
    rec = _record({"@message": 5, "@sender": 1.5, "@tags": "t", "@timestamp": "2024-05-01T11:59:00Z", "@facility": ""})
    assert rec["@message"] == "5"
    assert rec["@sender"] == "1.5"
    assert rec["@tags"] == ["t", "v"]
    assert rec["@timestamp"] == 1714564740000
    assert rec["@facility"] == "user"


@pytest.mark.parametrize("bad", [True, "garbage", [1], {"$date": 1}, -1, 10**25])
def test_bad_timestamp_becomes_receive_time_with_a_note(bad: object) -> None:
    rec = _record({"@message": "m", "@timestamp": bad})
    assert rec["@timestamp"] == RECEIVED
    (note,) = rec["@fields"]["_ingest"]["notes"]
    assert note.startswith("@timestamp ") and note.endswith("is not a time; used the receive time")


@pytest.mark.parametrize(
    "obj, reason",
    [
        ({"@fields": []}, "@fields: expected an object, got array"),
        ({"@fields": "x"}, "@fields: expected an object, got string"),
        ({"@message": ["x"]}, "@message: expected a string, got array"),
        ({"@message": True}, "@message: expected a string, got boolean"),
        ({"@sender": {"a": 1}}, "@sender: expected a string, got object"),
        ({"@source": False}, "@source: expected a string, got boolean"),
        ({"@customer": []}, "@customer: expected a string, got array"),
        ({"@tags": [1]}, "@tags[0]: expected a string, got number"),
        ({"@tags": {"a": 1}}, "@tags: expected an array of strings, got object"),
        ({"@type": "flow"}, "@type: is 'flow' but the import is into 'event'"),
        ({"@type": 3}, "@type: is 'number' but the import is into 'event'"),
        ({"@metaflow": 1}, "@metaflow: expected an object, got number"),
    ],
)
def test_rejections_name_the_field(obj: dict, reason: str) -> None:
    with pytest.raises(LineRejected) as info:
        _record(obj)
    assert str(info.value) == reason


def test_unknown_top_level_keys_move_into_fields() -> None:
    rec = _record({"@timestamp": 1714564740000, "@version": "1", "message": "m", "@fields": {"message": "kept"}})
    assert rec["@fields"] == {"message": "kept", "@version": "1"}


def test_metaflow_layout() -> None:
    obj = {"@metaflow": {"flow": {"sip": "1.1.1.1", "dp": 443, "rxB": "10", "time_ms": 1714564740500}, "x": 1}}
    rec = _record(obj, dataset="flow")
    assert rec["@type"] == "flow"
    assert rec["@timestamp"] == 1714564740500
    assert rec["@fields"] == {"sip": "1.1.1.1", "dp": 443, "rxB": 10, "time_ms": 1714564740500, "metaflow": {"x": 1}}
    assert "@metaflow" not in rec


def test_own_fields_win_over_metaflow() -> None:
    rec = _record({"@fields": {"dp": 22}, "@metaflow": {"flow": {"dp": 443}}}, dataset="flow")
    assert rec["@fields"]["dp"] == 22
