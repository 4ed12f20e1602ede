"""Which notification rules a behavior or a summary's change meets."""

from __future__ import annotations

import pytest

from seclake.detect.scorelevel import DEFAULT_BANDS
from seclake.errors import ValidationFailed
from seclake.model import validated
from seclake.notify.alertrule import AlertRule, matches_behavior, matches_summary

B = {"behaviorRule": "brute", "keyType": "ip", "customer": "acme", "riskScore": 5000, "risks": ["T1110", "TA0006"]}


def rule(**kw) -> AlertRule:
    return AlertRule(name="r", destinations=["d"], **kw)


@pytest.mark.parametrize(("kw", "met"), [
    ({}, True), ({"rules": ["brute"]}, True), ({"rules": ["other"]}, False),
    ({"techniques": ["T1110"]}, True), ({"techniques": ["T1059"]}, False),
    ({"minScore": 5000}, True), ({"minScore": 5001}, False),
    ({"keyTypes": ["ip", "host"]}, True), ({"keyTypes": ["username"]}, False),
    ({"customers": ["acme"]}, True), ({"customers": ["globex"]}, False),
    ({"enabled": False}, False), ({"on": "summary_level", "level": "critical"}, False),
])
def test_behavior_filters(kw, met) -> None:
    assert matches_behavior(rule(**kw), B) is met


def test_a_summary_reaching_a_level_notifies_once_when_it_crosses() -> None:
    r = rule(on="summary_level", level="critical")  # critical: 6000 and up
    low, high, higher = {**B, "riskScore": 5000}, {**B, "riskScore": 6500}, {**B, "riskScore": 9000}
    assert matches_summary(r, None, high, DEFAULT_BANDS)
    assert matches_summary(r, low, high, DEFAULT_BANDS)
    assert not matches_summary(r, high, higher, DEFAULT_BANDS)  # already there
    assert not matches_summary(r, None, low, DEFAULT_BANDS)
    assert not matches_summary(rule(on="summary_level", level="no-such-level"), None, high, DEFAULT_BANDS)


def test_a_status_change() -> None:
    r = rule(on="summary_status", statuses=["resolved"])
    assert matches_summary(r, {**B, "status": "new"}, {**B, "status": "resolved"}, DEFAULT_BANDS)
    assert not matches_summary(r, {**B, "status": "new"}, {**B, "status": "acknowledged"}, DEFAULT_BANDS)
    assert not matches_summary(r, {**B, "status": "resolved"}, {**B, "status": "resolved"}, DEFAULT_BANDS)
    assert matches_summary(rule(on="summary_status"), {**B, "status": "resolved"}, {**B, "status": "new"}, DEFAULT_BANDS)


@pytest.mark.parametrize(("doc", "problem"), [
    ({"name": "r", "destinations": []}, "destinations"),
    ({"name": "bad/name", "destinations": ["d"]}, "name"),
    ({"name": "r", "destinations": ["d"], "throttleSeconds": -1}, "throttleSeconds"),
    ({"name": "r", "destinations": ["d"], "on": "sometimes"}, "on"),
    ({"name": "r", "destinations": ["d"], "minScore": True}, "minScore"),
    ({"name": "r", "destinations": ["d"], "extra": 1}, "extra"),
])
def test_a_bad_rule_says_what_and_where(doc, problem) -> None:
    with pytest.raises(ValidationFailed, match=f"rule.{problem}"):
        validated(AlertRule, doc, "rule")
