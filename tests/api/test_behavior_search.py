"""ds/fsm_behavior_search over HTTP: the demo episodes on the timeline, in the 2.9 wrapper."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from seclake.demo.generator import generate
from tests.conftest import running_server

CALL = "ds/fsm_behavior_search"
WRAPPER = {"took", "_scroll_id", "hits", "suggest", "aggregations", "timed_out", "terminated_early", "_shards"}
HIT = {"_score", "_index", "_type", "_id", "_uid", "_timestamp", "_ttl", "_routing", "_parent", "_version",
       "sort", "highlight", "_source", "fields", "_explanation", "matched_queries", "inner_hits"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("timeline"), commit_interval_seconds=0.2) as server:
        token = server.login()
        now = int(time.time() * 1000)
        groups = defaultdict(list)
        for line in generate(days=1, end_ms=now, events_per_day=2000):
            groups[(line.vendor, line.dataset, line.customer)].append(line.line)
        last = 0
        for (vendor, dataset, customer), lines in groups.items():
            r = server.http.post(f"/api/import/{vendor}", content="\n".join(lines).encode(),
                                 params={"type": dataset, "customer": customer}, headers={"Servicetoken": token})
            assert r.status_code == 200, r.text
            last = max(last, r.json()["response"]["lastDocId"])
        server.services.lake.flush()
        server.token = token
        server.now = now
        yield server


def search(srv, **options):
    opts = {"range_from": srv.now - 2 * 86_400_000, "range_to": srv.now, "range_field": "timestamp", "fetchLimit": 50}
    opts.update(options)
    return srv.call(CALL, {"options": opts}, srv.token)


def test_timeline_shape_and_episodes(srv):
    res = search(srv, facets={"facets": [{"field": "behaviorRule", "size": 50}, {"field": "keyType", "size": 10}]})
    assert set(res) == WRAPPER | {"highlight"}  # the wrapper, and what the query matched (the web's marks)
    assert res["suggest"] is None and res["timed_out"] is False and res["terminated_early"] is False
    assert set(res["_shards"]) == {"total", "successful", "failed"} and res["_shards"]["failed"] == 0
    assert res["hits"]["max_score"] is None and res["hits"]["total"] > 0
    hit = res["hits"]["hits"][0]
    assert set(hit) == HIT and hit["_index"] == hit["_type"] == "behavior"
    assert hit["sort"] == [hit["_source"]["timestamp"]]
    rules = {b["key"]: b["doc_count"] for b in res["aggregations"]["behaviorRule"]["buckets"]}
    assert res["aggregations"]["behaviorRule"]["doc_count_error_upper_bound"] == 0
    assert {"brute-force-source", "credential-dumping", "known-bad-domain"} <= set(rules)
    assert sum(rules.values()) + res["aggregations"]["behaviorRule"]["sum_other_doc_count"] == res["hits"]["total"]
    stamps = [h["_source"]["timestamp"] for h in res["hits"]["hits"]]
    assert stamps == sorted(stamps, reverse=True)


def test_queries_on_the_timeline(srv):
    brute = search(srv, searchStr='behaviorRule:brute-force-source AND key:"203.0.113.7"')
    assert brute["hits"]["total"] >= 1
    src = brute["hits"]["hits"][0]["_source"]
    assert src["keyType"] == "ip" and src["history"]["KeyFirstSeen"] in (True, False)
    high = search(srv, searchStr="riskScore:[3000 TO *]")
    assert high["hits"]["total"] >= 1
    assert all(h["_source"]["riskScore"] >= 3000 for h in high["hits"]["hits"])
    words = search(srv, searchStr="mimikatz")
    assert words["hits"]["total"] >= 1
    # What each term matched, for the timeline's marks: the key's whole value; a word anywhere.
    assert brute["highlight"] == [{"field": "behaviorRule", "value": "brute-force-source", "text": False},
                                  {"field": "key", "value": "203.0.113.7", "text": False}]
    assert words["highlight"] == [{"field": "*", "value": "mimikatz", "text": True}]
    none = search(srv, facets={"mustNotFilters": [{"field": "scoreLevel", "terms": ["0"]}]})
    assert none["hits"]["total"] == search(srv)["hits"]["total"]


def test_timeline_errors_name_the_field(srv):
    assert "range_field" in srv.fail(CALL, {"options": {"range_field": "description"}}, srv.token)
    assert "fetchLimit" in srv.fail(CALL, {"options": {"fetchLimit": 5000}}, srv.token)
    assert "position" in srv.fail(CALL, {"options": {"searchStr": "riskScore:[100 TO"}}, srv.token)


def test_demo_sign_ins_of_every_source_share_the_common_names(srv):
    # sshd, Windows and Okta sign-ins arrive in their own formats; one query
    # on the common names finds the failures of all of them, and the one
    # brute-force rule fired on the sshd guessing and on the Okta spray alike.
    events = srv.call("ds/get_index_zoom_histogram_lv3", {"partition": "default", "dataType": "event", "options": {
        "dateFacetField": "@timestamp", "searchStr": "event.category:authentication", "range_from": srv.now - 2 * 86_400_000, "range_to": srv.now,
        "fetchLimit": 1, "facets": {"facets": [{"field": "@source", "size": 20}, {"field": "event.outcome"},
                                               {"field": "user.name", "size": 5}]}}}, srv.token)
    aggs = events["aggregations"]
    sources = {b["key"] for b in aggs["@source"]["buckets"]}
    assert {"sshd", "windows", "okta"} <= sources
    assert {b["key"] for b in aggs["event.outcome"]["buckets"]} == {"success", "failure"}
    assert len(aggs["user.name"]["buckets"]) == 5
    attack = srv.call("ds/get_index_zoom_histogram_lv3", {"partition": "default", "dataType": "event", "options": {
        "dateFacetField": "@timestamp", "searchStr": 'event.outcome:failure AND source.ip:"203.0.113.0/24"', "fetchLimit": 1,
        "range_from": srv.now - 2 * 86_400_000, "range_to": srv.now,
        "facets": {"facets": [{"field": "@source"}]}}}, srv.token)
    by_source = {b["key"]: b["doc_count"] for b in attack["aggregations"]["@source"]["buckets"]}
    assert by_source == {"sshd": 57, "okta": 24} and attack["hits"]["total"] == 81
    brute = search(srv, searchStr="behaviorRule:brute-force-source", facets={"facets": [{"field": "key"}]})
    assert {b["key"] for b in brute["aggregations"]["key"]["buckets"]} == {"203.0.113.7", "203.0.113.66"}
