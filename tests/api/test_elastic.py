"""The Elasticsearch bulk API, driven by the official ``elasticsearch`` Python
client (PyPI) unmodified: ``helpers.bulk`` against a real seclake server."""

from __future__ import annotations

import gzip
import time
import zlib

import pytest
from elasticsearch import Elasticsearch, helpers

from tests.api.test_access import customer_policy

SEARCH = "ds/get_index_zoom_histogram_lv3"


def _search(server, token, query, data_type="event", limit=50):
    kargs = {"partition": "default", "dataType": data_type,
             "options": {"dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": limit,
                         "range_from": 0, "range_to": 4_102_444_800_000}}
    return server.call(SEARCH, kargs, token)


def _wait(server, token, query, n, data_type="event"):
    deadline = time.monotonic() + 10
    while True:
        res = _search(server, token, query, data_type)
        if res["hits"]["total"] >= n or time.monotonic() > deadline:
            return res
        time.sleep(0.1)


@pytest.fixture(scope="module", params=["request thread", "parse workers"])
def srv(request, tmp_path_factory):
    """Every test here runs twice: bulk bodies read in the request thread, and in
    a parse worker (``parse_workers``; every body, however small)."""
    from tests.conftest import running_server

    workers = 1 if request.param == "parse workers" else 0
    with running_server(tmp_path_factory.mktemp("elastic"), parse_workers=workers) as server:
        if workers:
            server.services.parsers.min_bytes = 0
        server.token = server.login()
        server.ingest_key = server.call("auth/api_token", {"action": "add", "name": "shipper"}, server.token)["token"]
        yield server


def test_helpers_bulk_stores_events_and_flows_searchable_with_their_fields(srv):
    es = Elasticsearch(srv.url, api_key=srv.ingest_key, request_timeout=30)
    assert es.info()["version"]["number"].startswith("8.")
    docs = [
        {"_index": "nginx-access", "_source": {"@timestamp": "2026-11-20T10:00:00Z", "message": f"GET /page/{i} 200",
                                               "host": {"name": "web1"}, "http": {"status": 200}, "n": i}}
        for i in range(25)
    ] + [
        {"_index": "flows-zeek", "_op_type": "create", "_source": {"@timestamp": 1_763_632_800_000 + i, "sip": "10.0.0.1",
                                                                   "dip": "10.0.0.2", "dp": 443, "totalB": 100 + i}}
        for i in range(5)
    ]
    ok, errors = helpers.bulk(es, docs)
    assert (ok, errors) == (30, [])
    res = _wait(srv, srv.token, "@source:nginx-access AND n:[10 TO 14]", 5)
    assert res["hits"]["total"] == 5
    hit = res["hits"]["hits"][0]["_source"]
    assert hit["@message"].startswith("GET /page/1") and hit["@fields"]["host"]["name"] == "web1"
    assert hit["@timestamp"] == 1_795_168_800_000  # 2026-11-20T10:00:00Z
    flows = _wait(srv, srv.token, "dp:443", 5, data_type="flow")
    assert flows["hits"]["total"] == 5
    # Counted where operators look.
    scraped = srv.http.get("/metrics").text
    assert 'seclake_records_total{dataset="flow",outcome="accepted",path="bulk"} 5.0' in scraped


def test_bad_documents_fail_alone_and_say_why(srv):
    es = Elasticsearch(srv.url, api_key=srv.ingest_key, request_timeout=30)
    body = [
        {"index": {"_index": "mixed", "_id": "a"}}, {"@timestamp": "2026-11-20T10:00:00Z", "message": "good one", "tag": "mixed1"},
        {"index": {"_index": "mixed", "_id": "b"}}, {"@fields": "not an object", "tag": "mixed1"},
        {"delete": {"_index": "mixed", "_id": "a"}},
        {"index": {"_index": "bad index name!"}}, {"message": "x"},
        {"index": {"_index": "mixed"}}, {"message": "second good one", "tag": "mixed1"},
    ]
    reply = es.bulk(operations=body).body
    assert reply["errors"] is True
    statuses = [next(iter(item.values()))["status"] for item in reply["items"]]
    assert statuses == [201, 400, 400, 400, 201]
    items = [next(iter(item.values())) for item in reply["items"]]
    assert items[0]["_id"] == "a" and items[0]["result"] == "created"
    assert "@fields" in items[1]["error"]["reason"] and "line 4" in items[1]["error"]["reason"]
    assert "immutable" in items[2]["error"]["reason"]
    assert "vendor name" in items[3]["error"]["reason"]
    assert len(items[4]["_id"]) == 16  # made by seclake: the record's _id, as searches show it
    res = _wait(srv, srv.token, "tag:mixed1", 2)
    assert res["hits"]["total"] == 2
    assert items[4]["_id"] in {h["_id"] for h in res["hits"]["hits"]}


def test_basic_auth_gzip_and_the_index_in_the_url(srv):
    es = Elasticsearch(srv.url, basic_auth=("admin", "admin-test-password"), http_compress=True, request_timeout=30)
    ok, _ = helpers.bulk(es, ({"_source": {"message": f"zipped {i}", "tag": "gz"}} for i in range(40)), index="gzipped")
    assert ok == 40
    assert _wait(srv, srv.token, "tag:gz AND @source:gzipped", 40)["hits"]["total"] == 40
    # Raw gzip on /{index}/_bulk, as shippers send it.
    body = gzip.compress(b'{"index":{}}\n{"message":"raw gz","tag":"gz2"}\n')
    r = srv.http.post("/rawidx/_bulk", content=body, headers={
        "Authorization": f"ApiKey {srv.ingest_key}", "Content-Encoding": "gzip", "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200 and r.headers["X-Elastic-Product"] == "Elasticsearch", r.text
    assert r.json()["errors"] is False
    # A wrong password is refused like Elasticsearch refuses it.
    bad = Elasticsearch(srv.url, basic_auth=("admin", "wrong-password-here"), request_timeout=30)
    with pytest.raises(Exception) as refused:
        helpers.bulk(bad, [{"_index": "x", "_source": {"message": "no"}}])
    assert "401" in str(refused.value) or "security_exception" in str(refused.value)
    # Credentials are read like auth/login's: a password past its limit is
    # refused naming it, before any password hashing is spent on it.
    huge = Elasticsearch(srv.url, basic_auth=("admin", "p" * 5000), request_timeout=30)
    with pytest.raises(Exception) as refused:
        helpers.bulk(huge, [{"_index": "x", "_source": {"message": "no"}}])
    assert "400" in str(refused.value) and "Authorization.password: must be at most 1024" in str(refused.value)


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-15)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize("wrap", [zlib.compress, _raw_deflate], ids=["zlib-wrapped", "raw"])
def test_a_deflate_body_is_read_both_ways_it_is_sent(srv, wrap):
    # Issue 39.7: answered "line 1: expected an action"; HTTP's deflate is
    # zlib-wrapped (RFC 9110), but raw deflate is seen in the wild too.
    tag = f"deflate{wrap.__name__.strip('_')}"
    body = b"".join(b'{"index":{}}\n{"message":"deflated %d","tag":"%s"}\n' % (i, tag.encode()) for i in range(3))
    r = srv.http.post("/deflated/_bulk", content=wrap(body), headers={
        "Authorization": f"ApiKey {srv.ingest_key}", "Content-Encoding": "deflate", "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200 and r.json()["errors"] is False, r.text
    assert _wait(srv, srv.token, f"tag:{tag}", 3)["hits"]["total"] == 3


def test_an_encoding_seclake_cannot_read_is_named_and_a_deflate_bomb_is_capped(srv):
    headers = {"Authorization": f"ApiKey {srv.ingest_key}", "Content-Type": "application/x-ndjson"}
    r = srv.http.post("/_bulk", content=b"(br bytes)", headers={**headers, "Content-Encoding": "br"})
    assert r.status_code == 400, r.text
    reason = r.json()["error"]["reason"]
    assert "Content-Encoding" in reason and "'br'" in reason and "gzip" in reason and "deflate" in reason
    r = srv.http.post("/_bulk", content=b"not deflate at all", headers={**headers, "Content-Encoding": "deflate"})
    assert r.status_code == 400 and "deflate" in r.json()["error"]["reason"], r.text
    # 64 MB of newlines in ~64 KB: refused past max_import_bytes, nothing stored.
    bomb = zlib.compress(b"\n" * (srv.settings.max_import_bytes + 1), 9)
    r = srv.http.post("/_bulk", content=bomb, headers={**headers, "Content-Encoding": "deflate"})
    assert r.status_code == 413, r.text


@pytest.mark.parametrize("index", ["flows-", "flow-", "flows-bad vendor"])
def test_a_malformed_index_name_is_refused_naming_it(srv, index):
    # Issue 39.7: "flows-" (no vendor) was stored with 201, as events of vendor "flows-".
    reply = Elasticsearch(srv.url, api_key=srv.ingest_key, request_timeout=30).bulk(operations=[
        {"index": {"_index": index}}, {"message": "nowhere", "tag": "badindex"},
        {"index": {"_index": "flows-fine"}}, {"@timestamp": 1_763_632_800_000, "sip": "10.9.9.9", "tag": "goodindex"},
    ]).body
    refused, kept = (next(iter(item.values())) for item in reply["items"])
    assert refused["status"] == 400 and refused["error"]["type"] == "invalid_index_name_exception"
    assert repr(index) in refused["error"]["reason"] and "line 2" in refused["error"]["reason"]
    assert kept["status"] == 201
    assert _search(srv, srv.token, "tag:badindex")["hits"]["total"] == 0


def test_a_sender_limited_by_data_policies_writes_only_its_customers_records(srv):
    srv.call("auth/dataPolicyAdd", {"policy": customer_policy("acme")}, srv.token)
    srv.call("auth/userAdd", {"user": {"username": "shipper-acme", "password": "acme-shipper-pass-9", "roles": ["ingest"],
                                       "dataPolicies": ["only-acme"]}}, srv.token)
    es = Elasticsearch(srv.url, basic_auth=("shipper-acme", "acme-shipper-pass-9"), request_timeout=30)
    reply = es.bulk(operations=[
        {"index": {"_index": "pol"}}, {"@customer": "acme", "message": "mine", "tag": "pol"},
        {"index": {"_index": "pol"}}, {"@customer": "globex", "message": "theirs", "tag": "pol"},
    ]).body
    assert [next(iter(i.values()))["status"] for i in reply["items"]] == [201, 403]
    assert _wait(srv, srv.token, "tag:pol", 1)["hits"]["total"] == 1
    # An analyst (no ingest permission) may not send at all.
    srv.call("auth/userAdd", {"user": {"username": "reader1", "password": "reader-pass-words-1", "roles": ["analyst"]}}, srv.token)
    r = srv.http.post("/_bulk", content=b'{"index":{"_index":"x"}}\n{"message":"no"}\n',
                      auth=("reader1", "reader-pass-words-1"), headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 403 and "ingest permission" in r.json()["error"]["reason"]


def test_rules_run_on_the_documents_kept_and_only_on_them(srv):
    """A refused document before a kept one: the behaviors name the kept one (the
    worker's matches follow the records the data policies let through)."""
    from seclake.detect.rule import rule_from_dict

    srv.services.rules.add(rule_from_dict({
        "name": "bulk-failed-logon", "behavior": "Failed logon", "query": "EventID:4625", "keyField": "IpAddress",
        "keyType": "ip", "risks": ["T1110"], "riskScore": 50}))
    srv.call("auth/dataPolicyAdd", {"policy": customer_policy("initech")}, srv.token)
    srv.call("auth/userAdd", {"user": {"username": "shipper-initech", "password": "initech-shipper-pass-9",
                                       "roles": ["ingest"], "dataPolicies": ["only-initech"]}}, srv.token)
    es = Elasticsearch(srv.url, basic_auth=("shipper-initech", "initech-shipper-pass-9"), request_timeout=30)
    now = int(time.time() * 1000)
    reply = es.bulk(operations=[
        {"index": {"_index": "winlog"}}, {"@timestamp": now, "@customer": "globex", "EventID": 4625,
                                          "IpAddress": "198.51.100.66", "tag": "bulkrule"},
        {"index": {"_index": "winlog"}}, {"@timestamp": now, "@customer": "initech", "EventID": 4624,
                                          "IpAddress": "198.51.100.67", "tag": "bulkrule"},
        {"index": {"_index": "winlog"}}, {"@timestamp": now, "@customer": "initech", "EventID": 4625,
                                          "IpAddress": "198.51.100.68", "tag": "bulkrule"},
    ]).body
    assert [next(iter(i.values()))["status"] for i in reply["items"]] == [403, 201, 201]
    kept = next(iter(reply["items"][2].values()))["_id"]
    deadline = time.monotonic() + 10
    while True:
        found = srv.call("ds/fsm_behavior_search", {"options": {
            "searchStr": "behaviorRule:bulk-failed-logon", "range_field": "timestamp", "range_from": now - 60_000,
            "range_to": now + 60_000, "fetchLimit": 10}}, srv.token)["hits"]
        if found["total"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [(h["_source"]["key"], h["_source"]["eventId"]) for h in found["hits"]] == [("198.51.100.68", kept)]


def test_shippers_handshake_and_browsers_still_get_the_web_interface(srv):
    r = srv.http.get("/", headers={"Accept": "application/json"})
    assert r.status_code == 200 and r.json()["tagline"] == "You Know, for Search"
    assert r.headers["X-Elastic-Product"] == "Elasticsearch"
    assert srv.http.get("/", headers={"User-Agent": "Filebeat/8.11.0"}).json()["version"]["number"].startswith("8.")
    page = srv.http.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert srv.http.get("/_license").json()["license"]["status"] == "active"
    assert srv.http.head("/_index_template/filebeat-8.11.0").status_code == 404
    assert srv.http.put("/_index_template/filebeat-8.11.0", json={"index_patterns": ["x"]}).json() == {"acknowledged": True}
    assert srv.http.put("/_ilm/policy/filebeat", json={}).json() == {"acknowledged": True}
