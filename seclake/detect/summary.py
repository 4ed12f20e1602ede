"""A behavior summary (spec 2.8): one key's behaviors of one UTC day, folded.

Pure functions over plain dicts; ``seclake.detect.summaries`` stores them.
``fold`` adds one behavior (spec 2.7) to a summary, or starts one. The score
of a summary is the risk model's (``detect/risk.py``: distinct rules and
ATT&CK tactics, not repeats) plus the analyst's ``scoreAdjust``; its level
follows the configured bands. ``summaryList[i].ruleScore`` is the rule's own
score (its behaviors' highest), ``summaryList[i].riskScore`` what it adds to
the summary's; ``tactics`` and ``tacticBonus`` say what the tactics add.

Shapes chosen where the interface document is silent:

``summaryList[i].attributeSummaries``: one entry per attribute key of the
rule, in the order first met::

    {"key": "user", "aliase": "User", "count": 3,
     "values": [{"value": "alice", "count": 2}, {"value": "bob", "count": 1}],
     "otherCount": 0}

(On the wire, ``api/calls/summaries.wire_summary`` sends ``values`` as the
strings the clients read, the counted entries as ``valueCounts``.)
``count`` is how many behaviors carried the attribute; ``values`` holds at
most ``max_attribute_values`` distinct values (the first ones met, so a
value's count never jumps when others arrive); occurrences of further values
are counted in ``otherCount`` so the counts still add up to ``count``.

``summaryList[i].hits``: one entry per rule hit (name, scope) with the union
of its ``risks``, the attribute keys as ``fields`` and the distinct attribute
values as ``values`` (capped like above).

Comments: ``{"content", "actions", "username", "createdOn"}``; ``actions``
lists what the same change did, as ``"<field>: <old> -> <new>"`` strings.
"""

from __future__ import annotations

import hashlib
from typing import Any

from seclake.detect.risk import rule_score, score
from seclake.detect.scorelevel import Bands, score_level
from seclake.record.moment import iso, utc
from seclake.record.value import as_number, scalar_text

STATUSES = ("new", "acknowledged", "resolved")
SYSTEM = "system"
def day_of(timestamp_ms: int) -> str:
    """``YYYY-MM-DD`` of an epoch-ms instant, in UTC (years 1970..9999: a
    summary must never stop the ingestion path that folds behaviors into it)."""
    return utc(timestamp_ms).strftime("%Y-%m-%d")


def summary_id(key: str, key_type: str, day: str, customer: str = "") -> str:
    """A stable id, safe in URLs: the SHA-1 of what makes a summary one summary.

    Customers are part of it when set, so two tenants sharing a key (an IP
    behind NAT) never see each other's summaries.
    """
    parts = [key_type, key, day] + ([customer] if customer else [])
    return hashlib.sha1("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def fold(
    summary: dict[str, Any] | None,
    behavior: dict[str, Any],
    *,
    bands: Bands,
    now_ms: int,
    max_attribute_values: int = 20,
) -> dict[str, Any]:
    """The summary with ``behavior`` added (a new dict; the argument is not changed)."""
    ts = _int(behavior.get("timestamp"))
    behavior_score = _int(behavior.get("riskScore"))
    rule = _text(behavior.get("behaviorRule"))
    name = _text(behavior.get("behavior"))
    risks = _texts(behavior.get("risks"))
    if summary is None:
        summary = new_summary(behavior)
    else:
        summary = _copy(summary)
    comments = summary.get("comments")
    if summary.get("status") == "resolved":
        # New evidence on a closed case needs eyes again; say why it reopened.
        summary["status"] = "new"
        comments = list(comments or [])
        comments.append({
            "content": f"Reopened: new behavior {name!r} (rule {rule!r}) at {iso(ts)}.",
            "actions": ["status: resolved -> new"],
            "username": SYSTEM,
            "createdOn": now_ms,
        })
        summary["comments"] = comments
    summary["count"] += 1
    summary["from"] = min(summary["from"], ts)
    summary["to"] = max(summary["to"], ts)
    _add_unique(summary["behaviorRules"], rule)
    _add_unique(summary["behaviors"], name)
    for r in risks:
        _add_unique(summary["risks"], r)

    element = next((e for e in summary["summaryList"] if e["behaviorRule"] == rule), None)
    if element is None:
        element = {
            "behaviorRule": rule, "behavior": name, "hits": [], "risks": [], "count": 0,
            "from": ts, "to": ts, "riskScore": 0, "ruleScore": behavior_score, "attributeSummaries": [],
        }
        summary["summaryList"].append(element)
    # Before the count changes: a summary stored before the risk model reads its rule score from it.
    element["ruleScore"] = max(rule_score(element), behavior_score)
    element["count"] += 1
    element["from"] = min(element["from"], ts)
    element["to"] = max(element["to"], ts)
    for r in risks:
        _add_unique(element["risks"], r)
    attributes = _attributes(behavior.get("attributes"))
    _fold_hits(element["hits"], behavior.get("ruleHits"), attributes, max_attribute_values)
    _fold_attributes(element["attributeSummaries"], attributes, max_attribute_values)

    summary["updatedOn"] = now_ms
    return rescore(summary, bands)


def id_of(behavior: dict[str, Any]) -> str:
    """The id of the summary a behavior belongs to."""
    return summary_id(
        _text(behavior.get("key")), _text(behavior.get("keyType")), day_of(_int(behavior.get("timestamp"))),
        _text(behavior.get("customer")),
    )


def new_summary(behavior: dict[str, Any]) -> dict[str, Any]:
    ts = _int(behavior.get("timestamp"))
    key = _text(behavior.get("key"))
    key_type = _text(behavior.get("keyType"))
    customer = _text(behavior.get("customer"))
    day = day_of(ts)
    return {
        "id": id_of(behavior),
        "from": ts,
        "to": ts,
        "count": 0,
        "key": key,
        "keyType": key_type,
        "dayIndex": day,
        "behaviorRules": [],
        "behaviors": [],
        "riskScore": 0,
        "summaryList": [],
        "scoreLevel": "0",
        "keyContext": {"infoList": None},
        "comments": None,
        "incident": False,
        "scoreAdjust": 0,
        "updatedOn": 0,
        "risks": [],
        "status": "new",
        "customer": customer,
    }


def rescore(summary: dict[str, Any], bands: Bands) -> dict[str, Any]:
    """Recompute ``riskScore`` (the risk model's) and ``scoreLevel`` from the rules' scores and the adjustment."""
    score(summary)
    summary["scoreLevel"] = score_level(summary["riskScore"], bands)
    return summary


def _fold_hits(hits: list[dict[str, Any]], rule_hits: Any, attributes: list[tuple[str, str, str]], cap: int) -> None:
    for rh in rule_hits if isinstance(rule_hits, list) else []:
        if not isinstance(rh, dict):
            continue
        name, scope = _text(rh.get("name")), _text(rh.get("scope"))
        hit = next((h for h in hits if h["name"] == name and h["scope"] == scope), None)
        if hit is None:
            hit = {"name": name, "scope": scope, "risks": [], "values": [], "fields": []}
            hits.append(hit)
        for r in _texts(rh.get("risks")):
            _add_unique(hit["risks"], r)
        for key, _alias, value in attributes:
            _add_unique(hit["fields"], key)
            if len(hit["values"]) < cap:
                _add_unique(hit["values"], value)


def _fold_attributes(summaries: list[dict[str, Any]], attributes: list[tuple[str, str, str]], cap: int) -> None:
    for key, alias, value in attributes:
        entry = next((a for a in summaries if a["key"] == key), None)
        if entry is None:
            entry = {"key": key, "aliase": alias, "count": 0, "values": [], "otherCount": 0}
            summaries.append(entry)
        entry["count"] += 1
        slot = next((v for v in entry["values"] if v["value"] == value), None)
        if slot is not None:
            slot["count"] += 1
        elif len(entry["values"]) < cap:
            entry["values"].append({"value": value, "count": 1})
        else:
            entry["otherCount"] += 1


def _attributes(raw: Any) -> list[tuple[str, str, str]]:
    """(key, alias, value) of each well-formed attribute; others are skipped."""
    out = []
    for a in raw if isinstance(raw, list) else []:
        if isinstance(a, dict) and isinstance(a.get("key"), str):
            out.append((a["key"], _text(a.get("aliase")) or a["key"], _text(a.get("value"))))
    return out


def _copy(summary: dict[str, Any]) -> dict[str, Any]:
    # Deep enough for every part fold changes; the rest is shared read-only.
    out = dict(summary)
    for name in ("behaviorRules", "behaviors", "risks"):
        out[name] = list(summary.get(name) or [])
    out["summaryList"] = [
        {
            **e,
            "risks": list(e["risks"]),
            "hits": [{**h, "risks": list(h["risks"]), "values": list(h["values"]), "fields": list(h["fields"])}
                     for h in e["hits"]],
            "attributeSummaries": [{**a, "values": [dict(v) for v in a["values"]]} for a in e["attributeSummaries"]],
        }
        for e in summary.get("summaryList") or []
    ]
    return out


def _add_unique(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = as_number(value)
    return int(number) if number is not None else 0


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return scalar_text(value)
    return str(value)


def _texts(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [_text(v) for v in value if v is not None]
