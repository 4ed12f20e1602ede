"""ds/get_index_zoom_histogram_lv3 over HTTP: the whole request and response of spec 2.4-2.6, 2.10."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import error_of, running_server

T0 = 1_763_683_200_000  # 2025-11-21T00:00:00Z
HOUR = 3_600_000
CALL = "ds/get_index_zoom_histogram_lv3"


def _records():
    out = []
    for i in range(60):
        out.append({
            "@timestamp": T0 + (i % 24) * HOUR + i,
            "@message": f"connection {'denied' if i % 3 == 0 else 'allowed'} from host{i % 5} mimikatz.exe" if i == 7
            else f"connection {'denied' if i % 3 == 0 else 'allowed'} from host{i % 5}",
            "@sender": ["fw-01", "FW-01", "dns-01"][i % 3],
            "@customer": "acme" if i % 2 else "globex",
            "@fields": {
                "action": ["Deny", "accept", "deny"][i % 3],
                "dport": [443, "443", 22, 3389][i % 4],
                "sip": f"10.0.{i % 4}.{i}",
                "user": ["admin", "Administrator", "bob"][i % 3],
            },
        })
    return out


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("events")) as server:
        token = server.login()
        body = "\n".join(json.dumps(r) for r in _records()).encode()
        r = server.http.post("/api/import/fw", content=body, headers={"Servicetoken": token})
        assert r.json()["response"]["accepted"] == 60
        flows = '{"@timestamp": %d, "@type": "flow", "@fields": {"sip": "10.0.0.1", "dp": 22}}' % (T0 + 5)
        server.http.post("/api/import/nf", content=flows.encode(), params={"type": "flow"}, headers={"Servicetoken": token})
        assert server.services.lake.wait_indexed(61, timeout=10)
        server.token = token
        yield server


def search(srv, token=None, *, kargs_extra=None, **options):
    opts = {"dateFacetField": "@timestamp", "range_from": T0, "range_to": T0 + 24 * HOUR, "fetchLimit": 10}
    opts.update(options)
    kargs = {"partition": "default", "dataType": "event", "options": opts}
    kargs.update(kargs_extra or {})
    return srv.call(CALL, kargs, token or srv.token)


def fail(srv, status=400, **options):
    opts = {"dateFacetField": "@timestamp"}
    opts.update(options)
    return srv.fail(CALL, {"partition": "default", "dataType": "event", "options": opts}, srv.token, status=status)


def test_response_shape(srv):
    res = search(srv, searchStr="denied", sortField="@timestamp", sortOrder="desc",
                 facets={"facets": [{"title": "Sender", "field": "@sender", "size": 10, "order": "count"}],
                         "mustFilters": [], "mustNotFilters": [],
                         "dateFacets": [{"name": "dateHistogram", "key": "@timestamp", "interval": "hour"}]})
    assert set(res) == {"took", "hits", "aggregations", "query", "terms", "highlight"}
    assert isinstance(res["took"], int)
    assert res["hits"]["total"] == 20 and res["hits"]["sortFieldType"] == "long"
    hit = res["hits"]["hits"][0]
    assert set(hit) == {"_index", "_type", "_id", "docId", "_source", "_sort", "token"}
    assert hit["_type"] == "event" and hit["token"] is False and isinstance(hit["docId"], int)
    assert hit["_sort"] == hit["_source"]["@timestamp"]
    assert hit["_index"].startswith("event-")
    src = hit["_source"]
    assert {"@message", "@sender", "@source", "@timestamp", "@customer", "@tags", "@fields", "@type"} <= set(src)
    sender = res["aggregations"]["@sender"]
    assert sender["TokenEntity"] == ""
    # fw-01 and FW-01 are one bucket (every record with i % 3 == 0 is fw-01).
    assert sender["buckets"] == [{"doc_count": 20, "key": "fw-01"}]
    hist = res["aggregations"]["dateHistogram"]["buckets"]
    assert len(hist) == 25 and hist[0]["key"] == T0 and all(isinstance(b["key"], int) for b in hist)
    assert sum(b["doc_count"] for b in hist) == 20
    assert res["terms"] == ["denied"]
    assert res["highlight"] == [{"field": "*", "value": "denied", "text": True}]
    assert res["query"]


def test_sorting_and_paging_are_stable(srv):
    asc = search(srv, sortOrder="asc", fetchLimit=60)["hits"]["hits"]
    desc = search(srv, sortOrder="desc", fetchLimit=60)["hits"]["hits"]
    assert [h["_id"] for h in asc] == [h["_id"] for h in reversed(desc)]
    stamps = [h["_sort"] for h in asc]
    assert stamps == sorted(stamps)
    pages = [h["_id"] for off in range(0, 60, 7) for h in search(srv, fetchOffset=off, fetchLimit=7)["hits"]["hits"]]
    assert pages == [h["_id"] for h in desc]


def test_filters_accept_strings_numbers_and_booleans_and_counts_match_facets(srv):
    res = search(srv, facets={"facets": [{"field": "dport", "size": 5}]})
    buckets = {b["key"]: b["doc_count"] for b in res["aggregations"]["dport"]["buckets"]}
    assert buckets == {"443": 30, "22": 15, "3389": 15}
    for key, count in buckets.items():
        for term in (key, int(key)):
            r = search(srv, facets={"mustFilters": [{"field": "dport", "terms": [term]}]})
            assert r["hits"]["total"] == count
    r = search(srv, facets={"mustNotFilters": [{"field": "@fields.action", "terms": ["DENY"]}]})
    assert r["hits"]["total"] == 20
    r = search(srv, facets={"mustFilters": [{"field": "flag", "terms": [True]}]})
    assert r["hits"]["total"] == 0


@pytest.mark.parametrize("facets", [None, {}, {"facets": None, "mustFilters": None, "mustNotFilters": None}])
def test_missing_or_null_facet_parts_are_accepted(srv, facets):
    opts = {} if facets is None else {"facets": facets}
    res = search(srv, **opts)
    assert res["hits"]["total"] == 60


def test_empty_facet_comes_back_present(srv):
    res = search(srv, searchStr="nothing-matches-this", facets={"facets": [{"field": "@sender", "size": 3}]})
    assert res["aggregations"]["@sender"] == {"TokenEntity": "", "buckets": [], "sum_other_doc_count": 0, "doc_count_error_upper_bound": 0}


def test_queries_over_http(srv):
    assert search(srv, searchStr="action:deny AND NOT dport:443")["hits"]["total"] == 20
    assert search(srv, searchStr='sip:"10.0.1.0/24"')["hits"]["total"] == 15
    assert search(srv, searchStr="mimikatz.exe")["hits"]["total"] == 1
    assert search(srv, searchStr="user:adm*")["hits"]["total"] == 40
    assert search(srv, searchStr="dport:[400 TO 3389}")["hits"]["total"] == 30
    # fw-01 and FW-01 are one keyword (i % 3 in {0, 1}); admin is i % 3 == 0.
    assert search(srv, searchStr="@sender:fw-01 && !user:admin")["hits"]["total"] == 20


def test_flow_search_uses_the_flow_dataset(srv):
    res = search(srv, kargs_extra={"dataType": "flow"}, dataType="flow")
    assert res["hits"]["total"] == 1 and res["hits"]["hits"][0]["_type"] == "flow"
    # The clients of the original read flow fields under @metaflow.flow; queries alias the path.
    source = res["hits"]["hits"][0]["_source"]
    assert source["@metaflow"] == {"flow": {"sip": "10.0.0.1", "dp": 22}} and source["@fields"]["dp"] == 22
    assert search(srv, kargs_extra={"dataType": "flow"}, dataType="flow",
                  searchStr='@metaflow.flow.sip:"10.0.0.0/8" AND @metaflow.flow.dp:22')["hits"]["total"] == 1


def test_range_is_inclusive(srv):
    assert search(srv, range_from=T0, range_to=T0)["hits"]["total"] == 1
    # Hour 0 holds i = 0, 24, 48 at T0 + i; i = 1 is at T0 + HOUR + 1, just outside.
    assert search(srv, range_from=T0 + 1, range_to=T0 + HOUR)["hits"]["total"] == 2
    assert search(srv, range_from=T0 + 1, range_to=T0 + HOUR + 1)["hits"]["total"] == 3


@pytest.mark.parametrize(
    ("options", "kargs", "needle"),
    [
        ({}, {"partition": "other"}, "partition"),
        ({"dataType": "flow"}, {"dataType": "event"}, "dataType"),
        ({"dataType": "alerts"}, {}, "dataType"),
        ({"dateFacetField": None}, {}, "dateFacetField"),
        ({"dateFacetField": "@fields.x"}, {}, "dateFacetField"),
        ({"fetchLimit": 1001}, {}, "fetchLimit is 1001, above the limit of 1000"),
        ({"fetchOffset": 9500, "fetchLimit": 1000}, {}, "10500, above the limit of 10000"),
        ({"fetchLimit": "ten"}, {}, "fetchLimit"),
        ({"fetchOffset": -1}, {}, "fetchOffset"),
        ({"fetchLimit": True}, {}, "fetchLimit"),
        ({"sortOrder": "sideways"}, {}, "sortOrder"),
        ({"facets": {"facets": [{"field": "a", "size": 1}] * 21}}, {}, "number of facets is 21"),
        ({"facets": {"facets": [{"field": "a", "size": 5000}]}}, {}, "size is 5000, above the limit of 1000"),
        ({"facets": {"facets": [{"size": 5}]}}, {}, "field"),
        ({"facets": {"facets": "all"}}, {}, "facets.facets"),
        ({"facets": {"mustFilters": [{"field": "a"}]}}, {}, "mustFilters[0]"),
        ({"facets": {"dateFacets": [{"name": "h", "interval": "fortnight"}]}}, {}, "interval"),
        ({"facets": {"dateFacets": [{"name": "h", "interval": "1s"}]}, "range_from": 0, "range_to": 10**12}, {}, "bucket count"),
        ({"searchStr": "a AND"}, {}, "position"),
        ({"searchStr": "(a OR b"}, {}, "position"),
        ({"searchStr": "x" * 9000}, {}, "searchStr length is 9000"),
        ({"range_from": 10, "range_to": 5}, {}, "range_from"),
        ({"range_field": "@fields.user"}, {}, "range_field"),
        ({"options_is_list": True}, {}, None),
    ],
)
def test_bad_requests_say_what_and_where(srv, options, kargs, needle):
    if options.get("options_is_list"):
        msg = srv.fail(CALL, {"partition": "default", "options": []}, srv.token)
        assert "options" in msg
        return
    opts = {"dateFacetField": "@timestamp"}
    opts.update(options)
    body = {"partition": "default", "dataType": "event", "options": {k: v for k, v in opts.items() if v is not None}}
    body.update(kargs)
    msg = srv.fail(CALL, body, srv.token)
    assert needle in msg, msg


def test_exact_integers_survive(srv):
    r = srv.post(CALL, {"partition": "default", "options": {"dateFacetField": "@timestamp", "fetchLimit": 1, "sortOrder": "asc",
                                                           "range_from": T0, "range_to": T0 + 24 * HOUR}}, srv.token)
    text = r.text
    # No float formatting of epoch milliseconds anywhere on the way.
    assert f'"_sort":{T0},' in text and f'"@timestamp":{T0},' in text


def test_search_needs_a_token(srv):
    r = srv.post(CALL, {"partition": "default", "options": {"dateFacetField": "@timestamp"}})
    error_of(r, 401)


def test_a_pattern_too_complex_for_the_engine_is_a_clear_error(srv):
    msg = search_error(srv, "user:/.{1,2}{2}{2}{1,2}a..a/")
    assert "too complex" in msg and "@fields.user" in msg


def search_error(srv, query):
    opts = {"dateFacetField": "@timestamp", "searchStr": query}
    return srv.fail(CALL, {"partition": "default", "dataType": "event", "options": opts}, srv.token)


def test_two_names_for_one_field_each_get_their_member(srv):
    res = search(srv, facets={"facets": [{"field": "sip", "size": 3}, {"field": "@fields.sip", "size": 3}]})
    assert set(res["aggregations"]) == {"sip", "@fields.sip"}
    assert res["aggregations"]["sip"] == res["aggregations"]["@fields.sip"]
