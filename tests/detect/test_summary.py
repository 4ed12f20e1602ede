"""Folding behaviors into a daily summary: arithmetic, shapes, caps, reopening."""

from __future__ import annotations

import copy

import pytest

from seclake.detect.scorelevel import DEFAULT_BANDS, check_bands
from seclake.detect.summary import day_of, fold, rescore, summary_id

T0 = 1_763_683_200_000  # 2025-11-21T00:00:00Z
NOW = T0 + 10**7


def behavior(rule="brute", score=1000, ts=T0 + 1000, key="alice", attrs=(("user", "alice"),), **extra):
    b = {
        "sequence": 1, "timestamp": ts, "key": key, "originalKey": key, "keyType": "username",
        "originalKeyType": "username", "description": "d", "behaviorRule": rule, "behavior": f"{rule} behavior",
        "riskScore": score, "attributes": [{"key": k, "aliase": k.title(), "value": v} for k, v in attrs],
        "risks": [f"{rule}-risk"], "ruleRisks": [f"{rule}-risk"],
        "ruleHits": [{"name": rule, "scope": "global", "risks": [f"{rule}-risk"]}],
        "scoreLevel": "low", "customer": "acme", "history": {}, "keyContext": {"infoList": None},
    }
    b.update(extra)
    return b


def fold_all(behaviors, summary=None, bands=DEFAULT_BANDS, **kw):
    for b in behaviors:
        summary = fold(summary, b, bands=bands, now_ms=NOW, **kw)
    return summary


def test_first_behavior_makes_the_whole_2_8_shape():
    s = fold(None, behavior(), bands=DEFAULT_BANDS, now_ms=NOW)
    assert set(s) == {
        "id", "from", "to", "count", "key", "keyType", "dayIndex", "behaviorRules", "behaviors", "riskScore",
        "summaryList", "scoreLevel", "keyContext", "comments", "incident", "scoreAdjust", "updatedOn", "risks",
        "status", "customer", "tactics", "tacticBonus", "riskModel",
    }
    assert s["id"] == summary_id("alice", "username", "2025-11-21", "acme")
    assert (s["from"], s["to"], s["count"], s["dayIndex"]) == (T0 + 1000, T0 + 1000, 1, "2025-11-21")
    assert s["keyContext"] == {"infoList": None} and s["comments"] is None
    assert (s["incident"], s["scoreAdjust"], s["status"], s["updatedOn"]) == (False, 0, "new", NOW)
    element = s["summaryList"][0]
    assert set(element) == {"hits", "risks", "count", "from", "to", "riskScore", "behavior", "attributeSummaries",
                            "behaviorRule", "ruleScore"}
    assert element["hits"] == [{"name": "brute", "scope": "global", "risks": ["brute-risk"], "values": ["alice"],
                                "fields": ["user"]}]
    assert element["attributeSummaries"] == [
        {"key": "user", "aliase": "User", "count": 1, "values": [{"value": "alice", "count": 1}], "otherCount": 0}
    ]


def test_scores_add_up_per_rule_and_in_total():
    s = fold_all([behavior("a", 1000, ts=T0 + 50), behavior("b", 2500, ts=T0 + 10), behavior("a", 1000, ts=T0 + 90)])
    # Each rule once, highest first, weighted 1/i^1.5: 2500 + 1000/2^1.5; the repeat of a adds nothing.
    assert s["riskScore"] == 2500 + 354 and s["scoreLevel"] == "medium" and s["count"] == 3
    assert (s["from"], s["to"]) == (T0 + 10, T0 + 90)
    assert s["behaviorRules"] == ["a", "b"] and s["behaviors"] == ["a behavior", "b behavior"]
    assert s["risks"] == ["a-risk", "b-risk"]
    by_rule = {e["behaviorRule"]: e for e in s["summaryList"]}
    assert (by_rule["a"]["ruleScore"], by_rule["a"]["riskScore"], by_rule["a"]["count"], by_rule["a"]["from"],
            by_rule["a"]["to"]) == (1000, 354, 2, T0 + 50, T0 + 90)
    assert (by_rule["b"]["ruleScore"], by_rule["b"]["riskScore"]) == (2500, 2500)
    assert sum(e["riskScore"] for e in s["summaryList"]) + s["tacticBonus"] == s["riskScore"]


def test_eight_repeats_of_one_rule_score_as_one():
    s = fold_all([behavior("beacon", 3000, risks=["T1071.004"], ts=T0 + i) for i in range(8)])
    assert (s["riskScore"], s["scoreLevel"], s["tactics"], s["tacticBonus"]) == (3000, "medium",
                                                                                 ["command-and-control"], 0)


def test_distinct_tactics_add_a_bonus_each_after_the_first():
    s = fold_all([
        behavior("brute", 4000, risks=["T1110", "T1110.001"]),
        behavior("login", 2000, risks=["T1078", "T1110"]),  # its first known technique: initial-access
        behavior("spray", 4000, risks=["T1110.003"]),  # credential-access again: no bonus
        behavior("scan", 2500, risks=["T1046.999"]),  # an unlisted sub-technique counts as its parent's
    ])
    assert s["tactics"] == ["credential-access", "initial-access", "discovery"] and s["tacticBonus"] == 2000
    # 4000/1 + 4000/2^1.5 + 2500/3^1.5 + 2000/4^1.5, each rounded, + 2 x 1000
    assert s["riskScore"] == 4000 + 1414 + 481 + 250 + 2000 and s["scoreLevel"] == "critical"


def test_score_adjust_is_part_of_the_score_and_level():
    s = fold_all([behavior(score=3499)])
    assert s["scoreLevel"] == "medium"
    s["scoreAdjust"] = 1
    assert rescore(s, DEFAULT_BANDS)["scoreLevel"] == "high"
    s = fold(s, behavior("other", score=4000), bands=DEFAULT_BANDS, now_ms=NOW)
    assert s["riskScore"] == 4000 + round(3499 / 2 ** 1.5) + 1 and s["scoreLevel"] == "serious"
    s["scoreAdjust"] = -5237
    assert rescore(s, DEFAULT_BANDS)["riskScore"] == 0 and s["scoreLevel"] == "0"
    s["scoreAdjust"] = -9000
    assert rescore(s, DEFAULT_BANDS)["riskScore"] == -3763 and s["scoreLevel"] == "0"


@pytest.mark.parametrize(("score", "level"), [(1, "low"), (1999, "low"), (2000, "medium"), (4499, "high"),
                                              (4500, "serious"), (6000, "critical"), (0, "0")])
def test_levels_at_band_edges(score, level):
    assert fold_all([behavior(score=score)])["scoreLevel"] == level


def test_custom_bands():
    bands = check_bands([[100, "hot"]])
    assert fold_all([behavior(score=60), behavior("other", score=80)], bands=bands)["scoreLevel"] == "hot"


def test_a_summary_stored_before_the_risk_model_is_scored_by_it():
    # Stored by the sum model: rule a's 3 behaviors of 3000 summed to 9000, no ruleScore.
    old = fold_all([behavior("a", 3000, ts=T0 + i) for i in range(3)])
    for e in old["summaryList"]:
        del e["ruleScore"]
        e["riskScore"] = 9000
    for name in ("tactics", "tacticBonus", "riskModel"):
        del old[name]
    old["riskScore"], old["scoreAdjust"] = 9500, 500
    assert rescore(old, DEFAULT_BANDS)["riskScore"] == 3500 and old["scoreLevel"] == "high"
    assert fold(old, behavior("a", 3000), bands=DEFAULT_BANDS, now_ms=NOW)["riskScore"] == 3500


def test_attribute_values_are_capped_and_counts_still_add_up():
    bs = [behavior(attrs=(("user", f"u{i % 7}"), ("host", "h1"))) for i in range(30)]
    s = fold_all(bs, max_attribute_values=5)
    user, host = s["summaryList"][0]["attributeSummaries"]
    assert [v["value"] for v in user["values"]] == ["u0", "u1", "u2", "u3", "u4"]
    assert user["count"] == 30 and user["otherCount"] == 8  # u5 and u6, four times each
    assert sum(v["count"] for v in user["values"]) + user["otherCount"] == user["count"]
    assert host == {"key": "host", "aliase": "Host", "count": 30, "values": [{"value": "h1", "count": 30}],
                    "otherCount": 0}
    hit = s["summaryList"][0]["hits"][0]
    assert len(hit["values"]) == 5 and hit["fields"] == ["user", "host"]


def test_a_resolved_summary_reopens_with_a_system_comment():
    s = fold_all([behavior()])
    s["status"] = "resolved"
    s["comments"] = [{"content": "fp", "actions": ["status: new -> resolved"], "username": "ann", "createdOn": 5}]
    before = copy.deepcopy(s)
    after = fold(s, behavior(rule="exfil", ts=T0 + 3_600_000), bands=DEFAULT_BANDS, now_ms=NOW + 1)
    assert s == before  # the argument is left alone
    assert after["status"] == "new"
    assert after["comments"][0] == before["comments"][0]
    note = after["comments"][1]
    assert note["username"] == "system" and note["createdOn"] == NOW + 1
    assert note["actions"] == ["status: resolved -> new"]
    assert "exfil" in note["content"] and "2025-11-21T01:00:00.000Z" in note["content"]


def test_acknowledged_stays_acknowledged():
    s = fold_all([behavior()])
    s["status"] = "acknowledged"
    s = fold(s, behavior(), bands=DEFAULT_BANDS, now_ms=NOW)
    assert s["status"] == "acknowledged" and s["comments"] is None


def test_ids_are_stable_distinct_and_url_safe():
    a = summary_id("alice", "username", "2025-11-21")
    assert a == summary_id("alice", "username", "2025-11-21")
    assert len(a) == 32 and a.isalnum() and a == a.lower()
    others = {summary_id("alice", "ip", "2025-11-21"), summary_id("alice", "username", "2025-11-22"),
              summary_id("alice", "username", "2025-11-21", "acme"), summary_id("alice\0ip", "", "2025-11-21")}
    assert a not in others and len(others) == 4
    assert summary_id("\ud800 odd", "k", "d")  # lone surrogates do not crash


def test_day_is_utc_and_extreme_timestamps_are_clamped():
    assert day_of(T0 - 1) == "2025-11-20" and day_of(T0) == "2025-11-21"
    assert day_of(-10**15) == "1970-01-01" and day_of(10**18) == "9999-12-31"


def test_malformed_behavior_parts_are_tolerated():
    b = behavior(score="250", attrs=())
    b.update(attributes=[None, {"value": 1}, {"key": "port", "value": 443}], ruleHits="x", risks=None,
             timestamp="soon", customer=None)
    s = fold(None, b, bands=DEFAULT_BANDS, now_ms=NOW)
    assert s["riskScore"] == 250 and s["from"] == 0 and s["dayIndex"] == "1970-01-01" and s["customer"] == ""
    assert s["summaryList"][0]["attributeSummaries"][0]["values"] == [{"value": "443", "count": 1}]
    assert s["summaryList"][0]["hits"] == []
