"""ds/behavior_summary_search and ds/behavior_incident_update over HTTP
(spec 2.8-2.10, client-compat), on a real server with SQLite and PostgreSQL.

Summaries are put in through the store the detector uses (``apply`` in a
write transaction), then read and triaged only through calls.
"""

from __future__ import annotations

import pytest

from seclake.detect.summary import summary_id
from tests.detect.test_summary import T0, behavior

DAY = 86_400_000
SEARCH = "ds/behavior_summary_search"
UPDATE = "ds/behavior_incident_update"
WRAPPER = {"took", "_scroll_id", "hits", "suggest", "aggregations", "timed_out", "terminated_early", "_shards"}
HIT = {"_score", "_index", "_type", "_id", "_uid", "_timestamp", "_ttl", "_routing", "_parent", "_version", "sort",
       "highlight", "_source", "fields", "_explanation", "matched_queries", "inner_hits"}


def seed(srv) -> None:
    """Nine summaries: three users over three days, scores 0 to 9000, two rules."""
    behaviors = []
    for day in range(3):
        for k, score in enumerate((0, 2500, 3000 * (day + 1))):
            rule = "exfil" if k == 2 else "brute"
            behaviors.append(behavior(rule=rule, key=f"user{k}", score=score, ts=T0 + day * DAY + 60_000 * (k + 1)))
    behaviors.append(behavior(rule="exfil", key="user1", score=500, ts=T0 + 3_600_000))  # user1 day 0: 2 rules
    with srv.services.db.session(write=True) as s:
        srv.services.summaries.apply(s, behaviors, T0 + 3 * DAY)


def sid(key: str, day: int) -> str:
    return summary_id(key, "username", f"2025-11-{21 + day}", "acme")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from tests.conftest import running_server

    with running_server(tmp_path_factory.mktemp("summaries")) as server:
        seed(server)
        server.token = server.login()
        server.analyst = server.add_user(server.token, "analyst1", ["analyst"])
        server.ingester = server.add_user(server.token, "ingest1", ["ingest"])
        yield server


def search(srv, token=None, **options):
    return srv.call(SEARCH, {"options": options}, token or srv.token)


def test_wrapper_and_hit_shape(srv):
    res = search(srv, fetchLimit=2, range_field="from", range_from=T0, range_to=T0 + 3 * DAY)
    assert set(res) == WRAPPER and res["suggest"] is None and res["timed_out"] is False
    assert res["_shards"] == {"total": 1, "successful": 1, "failed": 0}
    assert res["hits"]["total"] == 9 and res["hits"]["max_score"] is None
    hit = res["hits"]["hits"][0]
    assert set(hit) == HIT and hit["_index"] == hit["_type"] == "behavior_summary"
    src = hit["_source"]
    assert hit["_id"] == src["id"] and hit["_uid"] == f"behavior_summary#{src['id']}"
    assert hit["sort"] == [src["riskScore"]]
    assert {"id", "from", "to", "count", "key", "keyType", "dayIndex", "behaviorRules", "behaviors", "riskScore",
            "summaryList", "scoreLevel", "keyContext", "comments", "incident", "scoreAdjust", "updatedOn",
            "risks"} <= set(src)


def test_attribute_values_are_strings_as_the_clients_decode_them(srv):
    """The clients' models decode attributeSummaries[].values as []string;
    objects there made the Go CLI drop every summary."""
    res = search(srv, fetchLimit=20, range_field="from", range_from=T0, range_to=T0 + 3 * DAY)
    elements = [e for h in res["hits"]["hits"] for e in h["_source"]["summaryList"]]
    attrs = [a for e in elements for a in e["attributeSummaries"]]
    assert attrs and all(a["values"] and all(isinstance(v, str) for v in a["values"]) for a in attrs)
    assert all(a["values"] == [c["value"] for c in a["valueCounts"]] for a in attrs)
    assert all(sum(c["count"] for c in a["valueCounts"]) + a["otherCount"] == a["count"] for a in attrs)
    # Triage answers with the same shape.
    updated = srv.call(UPDATE, {"id": res["hits"]["hits"][0]["_id"], "comment": "shape"}, srv.token)
    assert all(isinstance(v, str) for e in updated["summaryList"] for a in e["attributeSummaries"] for v in a["values"])


def test_default_sort_is_risk_score_descending(srv):
    res = search(srv, fetchLimit=20)
    scores = [h["_source"]["riskScore"] for h in res["hits"]["hits"]]
    assert scores == sorted(scores, reverse=True) and scores[0] == 9000 and scores[-1] == 0
    # Ties (the 2500s) come in a stable order that paging respects.
    page = [h["_id"] for h in search(srv, fetchOffset=3, fetchLimit=3)["hits"]["hits"]]
    assert page == [h["_id"] for h in res["hits"]["hits"][3:6]]


def test_sort_field_to_and_range_on_from(srv):
    res = search(srv, sortField="to", sortOrder="desc", range_field="from", range_from=T0 + DAY,
                 range_to=T0 + 2 * DAY - 1, fetchLimit=10)
    assert [h["_source"]["key"] for h in res["hits"]["hits"]] == ["user2", "user1", "user0"]
    assert all(h["_source"]["dayIndex"] == "2025-11-22" for h in res["hits"]["hits"])
    assert [h["sort"][0] for h in res["hits"]["hits"]] == [h["_source"]["to"] for h in res["hits"]["hits"]]
    asc = search(srv, sortField="to", sortOrder="asc", fetchLimit=1)
    assert asc["hits"]["hits"][0]["_source"]["to"] == T0 + 60_000


def test_facets_in_the_2_10_shape(srv):
    fields = ["status", "comments.username", "scoreLevel", "key", "keyType", "behaviorRules", "behavior",
              "behaviors"]
    res = search(srv, fetchLimit=0, facets={"facets": [{"title": f, "field": f, "size": 2, "order": "count"}
                                                       for f in fields], "mustFilters": None})
    aggs = res["aggregations"]
    assert set(aggs) == set(fields)
    for agg in aggs.values():
        assert set(agg) == {"doc_count_error_upper_bound", "sum_other_doc_count", "buckets"}
        assert agg["doc_count_error_upper_bound"] == 0
    assert aggs["keyType"] == {"doc_count_error_upper_bound": 0, "sum_other_doc_count": 0,
                               "buckets": [{"key": "username", "doc_count": 9}]}
    # Scores: 0 x3; 2500 x2 and 3000 x2 (medium); 6000 and 9000 (critical).
    assert aggs["scoreLevel"]["buckets"] == [{"key": "medium", "doc_count": 4}, {"key": "0", "doc_count": 3}]
    assert aggs["scoreLevel"]["sum_other_doc_count"] == 2
    assert aggs["behavior"] == aggs["behaviors"]
    assert aggs["behavior"]["buckets"] == [{"key": "brute behavior", "doc_count": 6},
                                           {"key": "exfil behavior", "doc_count": 4}]
    assert aggs["behaviorRules"]["buckets"] == [{"key": "brute", "doc_count": 6}, {"key": "exfil", "doc_count": 4}]


def test_must_not_filter_on_score_level_zero(srv):
    res = search(srv, facets={"mustNotFilters": [{"field": "scoreLevel", "terms": ["0"]}]}, fetchLimit=20)
    assert res["hits"]["total"] == 6
    assert all(h["_source"]["riskScore"] > 0 for h in res["hits"]["hits"])


def test_bad_options_name_the_field(srv):
    assert "options.sortOrder" in srv.fail(SEARCH, {"options": {"sortOrder": "up"}}, srv.token)
    assert "options.range_field" in srv.fail(SEARCH, {"options": {"range_field": "key"}}, srv.token)
    assert "position" in srv.fail(SEARCH, {"options": {"searchStr": "riskScore:[1 TO"}}, srv.token)


def test_triage_workflow_over_http(srv):
    target = sid("user1", 1)  # 2500, medium
    # An analyst may triage; the ingest role may not.
    msg = srv.fail(UPDATE, {"id": target, "status": "acknowledged"}, srv.ingester, status=403)
    assert "triage" in msg
    srv.fail(SEARCH, {"options": {}}, srv.ingester, status=403)
    doc = srv.call(UPDATE, {"id": target, "status": "acknowledged"}, srv.analyst)
    assert doc["status"] == "acknowledged" and doc["comments"][-1]["username"] == "analyst1"
    assert doc["comments"][-1]["actions"] == ["status: new -> acknowledged"]
    doc = srv.call(UPDATE, {"id": target, "comment": "checking with the owner"}, srv.analyst)
    assert doc["comments"][-1]["content"] == "checking with the owner" and doc["comments"][-1]["actions"] == []
    assert isinstance(doc["comments"][-1]["createdOn"], int)
    doc = srv.call(UPDATE, {"id": target, "incident": True, "scoreAdjust": 1500}, srv.analyst)
    assert (doc["incident"], doc["scoreAdjust"], doc["riskScore"], doc["scoreLevel"]) == (True, 1500, 4000, "high")
    doc = srv.call(UPDATE, {"id": target, "status": "resolved", "comment": "owner confirmed"}, srv.token)
    assert doc["status"] == "resolved" and doc["comments"][-1]["username"] == "admin"
    # Search sees the triage: the client query, and the comment author facet.
    res = search(srv, searchStr="riskScore:[3000 TO *] AND NOT (status:new)",
                 facets={"facets": [{"field": "comments.username", "size": 10}]})
    assert [h["_id"] for h in res["hits"]["hits"]] == [target]
    assert res["aggregations"]["comments.username"]["buckets"] == [{"key": "admin", "doc_count": 1},
                                                                   {"key": "analyst1", "doc_count": 1}]
    # The call is in the audit log with who made it and what it changed.
    entry = next(e for e in srv.services.audit.recent(20) if e["call"] == UPDATE and e["outcome"] == "OK")
    assert entry["username"] == "admin"
    assert entry["detail"] == f"summary {target}: status: acknowledged -> resolved"
    earlier = [e for e in srv.services.audit.recent(20) if e["call"] == UPDATE and e["username"] == "analyst1"]
    assert any("incident: false -> true" in (e["detail"] or "") for e in earlier), earlier


def test_triage_errors(srv):
    target = sid("user0", 2)
    msg = srv.fail(UPDATE, {"id": "0" * 32, "status": "resolved"}, srv.token, status=404)
    assert f"no behavior summary with id {'0' * 32!r}" in msg
    assert "kargs.status" in srv.fail(UPDATE, {"id": target, "status": "closed"}, srv.token)
    assert "'new', 'acknowledged' or 'resolved'" in srv.fail(UPDATE, {"id": target, "status": "closed"}, srv.token)
    assert "kargs.scoreAdjust" in srv.fail(UPDATE, {"id": target, "scoreAdjust": "lots"}, srv.token)
    assert "kargs.scoreAdjust" in srv.fail(UPDATE, {"id": target, "scoreAdjust": 10**7}, srv.token)
    assert "kargs.incident" in srv.fail(UPDATE, {"id": target, "incident": "yes"}, srv.token)
    assert "kargs.comment" in srv.fail(UPDATE, {"id": target, "comment": ["x"]}, srv.token)
    assert "kargs.id" in srv.fail(UPDATE, {"status": "resolved"}, srv.token)
    assert "kargs.id" in srv.fail(UPDATE, {"id": {"$ne": 1}, "status": "resolved"}, srv.token)
    assert "kargs.Status" in srv.fail(UPDATE, {"id": target, "Status": "resolved"}, srv.token)
    assert "nothing to change" in srv.fail(UPDATE, {"id": target}, srv.token)
    assert srv.call(SEARCH, {"options": {"searchStr": f"id:{target}"}}, srv.token)["hits"]["hits"][0]["_source"][
        "comments"] is None  # no failed request left a trace


def test_triage_on_each_database(database_url, start_server, tmp_path):
    # database_url first: its schema must outlive the server (torn down in reverse).
    srv = start_server(tmp_path / "db", database_url=database_url)
    seed(srv)
    token = srv.login()
    target = sid("user2", 0)
    doc = srv.call(UPDATE, {"id": target, "status": "resolved", "scoreAdjust": -3000}, token)
    assert (doc["riskScore"], doc["scoreLevel"]) == (0, "0")
    res = srv.call(SEARCH, {"options": {"searchStr": "status:resolved", "facets": {
        "facets": [{"field": "scoreLevel", "size": 5}]}}}, token)
    assert [h["_id"] for h in res["hits"]["hits"]] == [target]
    assert res["aggregations"]["scoreLevel"]["buckets"] == [{"key": "0", "doc_count": 1}]


def test_date_histogram_over_from(srv):
    res = search(srv, range_from=T0, range_to=T0 + 3 * DAY - 1, fetchLimit=0,
                 facets={"dateFacets": [{"name": "dateHistogram", "key": "from", "interval": "day"}]})
    assert res["aggregations"]["dateHistogram"]["buckets"] == [
        {"key": T0 + d * DAY, "doc_count": 3} for d in range(3)
    ]
    # With no range, the buckets span the summaries there are.
    res = search(srv, fetchLimit=0, facets={"dateFacets": [{"name": "h", "key": "from", "interval": "day"}]})
    assert sum(b["doc_count"] for b in res["aggregations"]["h"]["buckets"]) == res["hits"]["total"] == 9
