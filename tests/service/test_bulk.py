"""Reading an Elasticsearch bulk body into records (service/bulk.py): per-item outcomes, body-wide errors.
The HTTP side, with the official client, is tests/api/test_elastic.py."""

from __future__ import annotations

import gzip

import pytest

from seclake.errors import ValidationFailed
from seclake.service.bulk import read_bulk, target_of

RECEIVED_MS = 1_763_683_200_000


def _read(lines: list[bytes], default_index: str | None = None, compressed: bool = False):
    body = b"\n".join(lines) + b"\n"
    body = gzip.compress(body) if compressed else body
    return list(read_bulk(body, default_index, compressed=compressed, max_bytes=1 << 20, received_ms=RECEIVED_MS))


def test_each_action_gets_its_record_or_its_own_error():
    entries = _read([
        b'{"index":{"_index":"nginx","_id":"a"}}', b'{"message":"GET /","status":200}',
        b'{"delete":{"_index":"nginx","_id":"a"}}',
        b'{"create":{}}', b'{"message":"no index anywhere"}',
        b'{"index":{"_index":"flows-zeek"}}', b'{"sip":"10.0.0.1","dp":443}',
        b'{"index":{"_index":"nginx"}}', b'{"@tags":5}',
    ])
    assert [(e.action, e.index, e.doc_id, e.number) for e in entries] == [
        ("index", "nginx", "a", 2), ("delete", "nginx", "a", 3), ("create", None, None, 5),
        ("index", "flows-zeek", None, 7), ("index", "nginx", None, 9)]
    ok, delete, no_index, flow, bad = entries
    # ECS ``message`` becomes ``@message``; the index names the vendor.
    assert ok.error is None and ok.dataset == "event" and ok.record["@message"] == "GET /"
    assert ok.record["@source"] == "nginx" and ok.record["@timestamp"] == RECEIVED_MS
    assert delete.error["type"] == "illegal_argument_exception" and "immutable" in delete.error["reason"]
    assert no_index.error["type"] == "action_request_validation_exception" and "line 5" in no_index.error["reason"]
    assert flow.error is None and flow.dataset == "flow"
    assert bad.error["type"] == "document_parsing_exception" and bad.error["reason"].startswith("line 9: @tags")


def test_the_default_index_gzip_and_errors_of_the_body_as_a_whole():
    [entry] = _read([b'{"index":{}}', b'{"message":"zipped"}'], default_index="shipper", compressed=True)
    assert entry.index == "shipper" and entry.record["@message"] == "zipped"
    for lines, where in (([b"not json"], "line 1: expected an action"),
                         ([b'{"index":{},"create":{}}'], "line 1: an action line is one object"),
                         ([b'{"index":{}}'], "line 1: the 'index' action has no document line")):
        with pytest.raises(ValidationFailed, match=where):
            _read(lines, default_index="x")


def test_index_names_map_to_vendor_and_dataset():
    assert target_of("flows-zeek") == ("zeek", "flow") and target_of("flow-netflow") == ("netflow", "flow")
    assert target_of("logs-nginx-default") == ("logs-nginx-default", "event")
    # A prefix alone names no vendor: refused, not stored as events of vendor "flows-" (issue 39.7).
    for index in ("flows-", "flow-"):
        with pytest.raises(ValidationFailed, match=f"index: '{index}': no vendor after the prefix"):
            target_of(index)
    with pytest.raises(ValidationFailed, match="index: 'bad name!': 'bad name!' is not a vendor name"):
        target_of("bad name!")
