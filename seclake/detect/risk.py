"""The risk model: a summary's score from its distinct rules and ATT&CK tactics.

A key's day is scored by what it did, not by how often (docs/rules.md, "The
risk model"), as Elastic's entity risk scoring and Splunk's risk-based
alerting weigh breadth over volume. Eight beacons to the same bad domain
are one finding; brute force, then a privileged login, is two.

    rule score   each rule once: the highest riskScore of its behaviors
    rules        sorted highest first, the i-th weighted 1 / i^1.5
                 (1, 0.354, 0.192, 0.125, ...: however many rules, at most
                 2.612x the highest)
    tactics      each rule's tactic: that of its first technique known to
                 ``tactics.json``; every distinct tactic after the first adds
                 TACTIC_BONUS
    riskScore    the rules' weighted scores (each rounded) + the tactics'
                 bonus + the analyst's scoreAdjust

Scores stay on the rules' scale (not normalised to 0-100 as Elastic does) so
a rule's riskScore, a behavior's level and ``scoreAdjust`` keep their
meaning: a summary of one rule scores what that rule scores.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

WEIGHT_EXPONENT = 1.5
TACTIC_BONUS = 1000
# The model's version in stored summaries: older ones are scored again at start (summaries.py).
MODEL = 2


@cache
def _tactics() -> dict[str, list[str]]:
    return json.loads((Path(__file__).parent / "tactics.json").read_text())["techniques"]


def tactic_of(technique: str) -> str | None:
    """The tactic a technique id counts for (a sub-technique not listed: its parent's); None if unknown."""
    table = _tactics()
    tid = technique.strip().upper()
    found = table.get(tid) or table.get(tid.split(".", 1)[0])
    return found[0] if found else None


def rule_tactic(risks: list[str]) -> str | None:
    """A rule's tactic: that of its first technique with a known one."""
    for r in risks:
        tactic = tactic_of(r)
        if tactic is not None:
            return tactic
    return None


def rule_score(element: dict[str, Any]) -> int:
    """The rule's own score in a summary; for one stored before this model, its sum over its count."""
    if "ruleScore" in element:
        return element["ruleScore"]
    return element.get("riskScore", 0) // max(element.get("count", 1), 1)


def score(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary with each rule's weighted ``riskScore``, its ``tactics`` and ``riskScore`` (before the
    levels, which the caller's bands give): the summary is changed in place and returned."""
    elements = summary.get("summaryList") or []
    for e in elements:
        e["ruleScore"] = rule_score(e)
    ranked = sorted(elements, key=lambda e: -e["ruleScore"])
    for i, e in enumerate(ranked, 1):
        e["riskScore"] = round(e["ruleScore"] / i ** WEIGHT_EXPONENT)
    tactics: list[str] = []
    for e in elements:
        tactic = rule_tactic(e.get("risks") or [])
        if tactic is not None and tactic not in tactics:
            tactics.append(tactic)
    summary["tactics"] = tactics
    summary["tacticBonus"] = TACTIC_BONUS * max(0, len(tactics) - 1)
    summary["riskModel"] = MODEL
    summary["riskScore"] = (sum(e["riskScore"] for e in elements) + summary["tacticBonus"]
                            + summary.get("scoreAdjust", 0))
    return summary
