"""The summary store on SQLite and PostgreSQL: folding in the caller's
transaction, triage with hostile arguments, and exact searches."""

from __future__ import annotations

import pytest

from seclake.detect.scorelevel import DEFAULT_BANDS
from seclake.detect.summaries import SummaryRow, SummaryStore, Triage
from seclake.detect.summary import summary_id
from seclake.errors import LimitExceeded, NotFound, ValidationFailed
from seclake.model import validated
from seclake.query import ast
from seclake.query.parser import parse
from seclake.search.plan import FacetSpec, SearchPlan
from tests.detect.test_summary import NOW, T0, behavior

DAY = 86_400_000


@pytest.fixture
def store(db):
    return SummaryStore(db, DEFAULT_BANDS)


def triage(store, sid, *, username, now_ms, **fields):
    """One triage step as the call makes it: the fields read into Triage as if sent."""
    return store.update_incident(validated(Triage, {"id": sid, **fields}, "kargs"), username=username, now_ms=now_ms)


def apply(store, behaviors, now_ms=NOW):
    with store.db.session(write=True) as s:
        return store.apply(s, behaviors, now_ms)


def test_apply_folds_per_key_and_day(store):
    ids = apply(store, [behavior(score=1000), behavior(key="bob", score=10), behavior(score=500, ts=T0 + DAY + 5),
                        behavior(score=3000, ts=T0 + 7)])
    alice = summary_id("alice", "username", "2025-11-21", "acme")
    assert ids == [alice, summary_id("bob", "username", "2025-11-21", "acme"),
                   summary_id("alice", "username", "2025-11-22", "acme")]
    doc = store.get(alice)
    assert (doc["count"], doc["riskScore"], doc["scoreLevel"], doc["to"]) == (2, 3000, "medium", T0 + 1000)
    apply(store, [behavior(score=5000)], now_ms=NOW + 9)  # a later transaction adds to the same row
    doc = store.get(alice)
    assert (doc["count"], doc["riskScore"], doc["scoreLevel"], doc["updatedOn"]) == (3, 5000, "serious", NOW + 9)
    with store.db.session() as s:
        row = s.get(SummaryRow, alice)
        assert (row.risk_score, row.from_ms, row.to_ms, row.status, row.day) == (5000, T0 + 7, T0 + 1000, "new",
                                                                                   "2025-11-21")


def test_apply_is_part_of_the_callers_transaction(store):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with store.db.session(write=True) as s:
            store.apply(s, [behavior()], NOW)
            raise Boom  # the caller's progress failed to save: nothing of it may stay
    with pytest.raises(NotFound):
        store.get(summary_id("alice", "username", "2025-11-21", "acme"))


def test_get_unknown_and_bad_ids(store):
    with pytest.raises(NotFound, match="no behavior summary with id 'nope'"):
        store.get("nope")
    for bad, says in [(None, "string"), (5, "string"), ("", "must not be empty"), ("x" * 65, "at most 64")]:
        with pytest.raises(ValidationFailed, match=says) as e:
            triage(store, bad, status="new", username="ann", now_ms=NOW)
        assert e.value.field == "kargs.id"


def test_triage_workflow(store):
    (sid,) = apply(store, [behavior(score=3000)])
    doc = triage(store, sid, status="acknowledged", username="ann", now_ms=NOW + 1)
    assert doc["status"] == "acknowledged" and doc["updatedOn"] == NOW + 1
    assert doc["comments"] == [{"content": "", "actions": ["status: new -> acknowledged"], "username": "ann",
                                "createdOn": NOW + 1}]
    doc = triage(store, sid, comment="looks like a scan", incident=True, scoreAdjust=1500,
                                username="bo", now_ms=NOW + 2)
    assert (doc["incident"], doc["scoreAdjust"], doc["riskScore"], doc["scoreLevel"]) == (True, 1500, 4500, "serious")
    assert doc["comments"][-1] == {"content": "looks like a scan",
                                   "actions": ["incident: false -> true", "scoreAdjust: 0 -> 1500"],
                                   "username": "bo", "createdOn": NOW + 2}
    doc = triage(store, sid, status="resolved", username="ann", now_ms=NOW + 3)
    assert store.get(sid) == doc and doc["status"] == "resolved"
    # The same state again changes nothing and records nothing.
    again = triage(store, sid, status="resolved", username="ann", now_ms=NOW + 4)
    assert again == doc
    # New evidence reopens it, with a system comment; the adjustment stays (a repeat of the rule adds nothing).
    apply(store, [behavior(score=100)], now_ms=NOW + 5)
    doc = store.get(sid)
    assert doc["status"] == "new" and doc["riskScore"] == 4500 and doc["comments"][-1]["username"] == "system"
    # Any transition is allowed, backwards too.
    assert triage(store, sid, status="resolved", username="x", now_ms=NOW + 6)["status"] == "resolved"
    assert triage(store, sid, status="acknowledged", username="x", now_ms=NOW + 7)["status"] == "acknowledged"
    with store.db.session() as s:
        row = s.get(SummaryRow, sid)
        assert (row.status, row.risk_score, row.updated_on) == ("acknowledged", 4500, NOW + 7)


@pytest.mark.parametrize(
    ("kwargs", "field", "says"),
    [
        ({"status": "closed"}, "status", "'new', 'acknowledged' or 'resolved'"),
        ({"status": "NEW"}, "status", "not 'NEW'"),
        ({"status": 1}, "status", "not 1"),
        ({"status": ["new"]}, "status", "not"),
        ({"comment": 5}, "comment", "string"),
        ({"comment": "  "}, "comment", "blank"),
        ({"comment": "x" * 10_001}, "comment", "at most 10000"),
        ({"incident": "true"}, "incident", "true or false"),
        ({"incident": 1}, "incident", "true or false"),
        ({"scoreAdjust": True}, "scoreAdjust", "integer"),
        ({"scoreAdjust": "five"}, "scoreAdjust", "integer"),
        ({"scoreAdjust": 1.5}, "scoreAdjust", "integer"),
        ({"scoreAdjust": 1_000_001}, "scoreAdjust", "at most 1000000"),
        ({"scoreAdjust": -1_000_001}, "scoreAdjust", "at least -1000000"),
        ({}, "", "nothing to change"),
    ],
)
def test_hostile_triage_arguments_name_their_field(store, kwargs, field, says):
    (sid,) = apply(store, [behavior()])
    with pytest.raises(ValidationFailed, match=says) as e:
        triage(store, sid, username="ann", now_ms=NOW, **kwargs)
    assert e.value.field == f"kargs.{field}".rstrip(".")
    assert store.get(sid)["comments"] is None  # nothing was half-applied


def test_triage_of_unknown_summary(store):
    with pytest.raises(NotFound, match="no behavior summary with id 'ffff'"):
        triage(store, "ffff", status="resolved", username="ann", now_ms=NOW)


def test_comments_are_capped(db):
    store = SummaryStore(db, DEFAULT_BANDS, max_comments=3)
    (sid,) = apply(store, [behavior()])
    for i in range(3):
        triage(store, sid, comment=f"c{i}", username="ann", now_ms=NOW)
    with pytest.raises(LimitExceeded, match="comments on one behavior summary"):
        triage(store, sid, comment="one more", username="ann", now_ms=NOW)


def test_search_is_exact_and_prefiltered_by_range(store):
    bs = []
    for day in range(5):
        for k in range(4):
            bs.append(behavior(key=f"user{k}", ts=T0 + day * DAY + k, score=1000 * (k + 1),
                               rule="exfil" if k % 2 else "brute"))
    apply(store, bs)
    triage(store, summary_id("user3", "username", "2025-11-23", "acme"), status="resolved",
           username="ann", now_ms=NOW)
    plan = SearchPlan(dataset="summary", query=ast.MatchAll(), range_from=T0 + DAY, range_to=T0 + 3 * DAY,
                      range_path="from", sort_path="riskScore", limit=5,
                      facets=(FacetSpec("status", 5), FacetSpec("behaviors", 5), FacetSpec("comments.username", 5)))
    res = store.search(plan)
    assert res.total == 9  # all of days 1 and 2; day 3 starts at T0 + 3 DAY exactly: its user0 is in
    assert [h.source["riskScore"] for h in res.hits] == [4000, 4000, 3000, 3000, 2000]
    assert all(h.record_id == h.source["id"] for h in res.hits)
    assert [(b.key, b.doc_count) for b in res.facets["status"].buckets] == [("new", 8), ("resolved", 1)]
    assert [(b.key, b.doc_count) for b in res.facets["comments.username"].buckets] == [("ann", 1)]
    assert {b.key: b.doc_count for b in res.facets["behaviors"].buckets} == {"brute behavior": 5,
                                                                             "exfil behavior": 4}
    # "behavior" is another name of "behaviors" in queries.
    query = parse("riskScore:[3000 TO *] AND NOT (status:new) AND behavior:\"exfil behavior\"", store.dataset,
                  now_ms=NOW)
    res = store.search(SearchPlan(dataset="summary", query=query, sort_path="to"))
    assert [h.source["key"] for h in res.hits] == ["user3"]
    # A range on "to" is prefiltered on its own column.
    res = store.search(SearchPlan(dataset="summary", query=ast.MatchAll(), range_from=T0 + 4 * DAY + 3,
                                  range_to=T0 + 9 * DAY, range_path="to"))
    assert [h.source["key"] for h in res.hits] == ["user3"]


def _as_stored_before_the_risk_model(store, sid, total, adjust=0):
    """Rewrite a row as the sum model left it: each rule's riskScore its behaviors' sum, no ruleScore."""
    with store.db.session(write=True) as s:
        row = s.get(SummaryRow, sid)
        doc = dict(row.doc)
        doc["summaryList"] = [{k: v for k, v in e.items() if k != "ruleScore"} | {"riskScore": e["ruleScore"] * e["count"]}
                              for e in doc["summaryList"]]
        for name in ("tactics", "tacticBonus", "riskModel"):
            doc.pop(name)
        doc["riskScore"], doc["scoreAdjust"], doc["scoreLevel"] = total, adjust, "critical"
        row.set_doc(doc)


def test_summaries_of_an_earlier_version_are_scored_again_once_at_start(store, caplog):
    beacons = [behavior("beacon", 3000, risks=["T1071.004"], ts=T0 + i) for i in range(8)]
    ids = apply(store, beacons + [behavior("other", 1000, key="bob")])
    _as_stored_before_the_risk_model(store, ids[0], 24_000, adjust=100)
    with caplog.at_level("INFO", logger="seclake.detect"):
        assert store.rescore_all() == 1
    assert "scored 1 behavior summaries again with risk model" in caplog.text
    doc = store.get(ids[0])
    # Eight beacons to one domain are one finding: 3000 (medium), not 24,000 (critical); the adjustment stays.
    assert (doc["riskScore"], doc["scoreLevel"], doc["tactics"]) == (3100, "medium", ["command-and-control"])
    with store.db.session() as s:
        assert s.get(SummaryRow, ids[0]).risk_score == 3100
    assert store.rescore_all() == 0, "once: later starts read the mark"



def test_a_server_started_on_summaries_of_an_earlier_version_shows_them_by_the_risk_model(services):
    store = services.summaries
    ids = apply(store, [behavior("beacon", 3000, risks=["T1071.004"], ts=T0 + i) for i in range(8)])
    _as_stored_before_the_risk_model(store, ids[0], 24_000)
    services.start()
    assert (store.get(ids[0])["riskScore"], store.get(ids[0])["scoreLevel"]) == (3000, "medium")
