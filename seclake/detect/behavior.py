"""A behavior record (spec 2.7): one rule firing for one key."""

from __future__ import annotations

from typing import Any


# Keys longer than this are cut: they are stored in the history tables.
MAX_KEY = 256
# Detector state keeps at most this much of a customer name (the state tables' column).
MAX_CUSTOMER = 128



def customer_of(record: dict[str, Any]) -> str:
    """The customer a record's behaviors, windows and history belong to ("" for none)."""
    customer = record.get("@customer")
    return customer if isinstance(customer, str) else ""

def make_behavior(
    rule,
    record: dict[str, Any],
    *,
    key: str,
    event_id: str,
    sequence: int,
    history: dict[str, bool],
    score_level: str,
    aggregate: float | None = None,
) -> dict[str, Any]:
    risks = list(rule.risks)
    description = rule.description
    if aggregate is not None and rule.threshold is not None:
        t = rule.threshold
        what = t.function if t.field is None else f"{t.function} of {t.field}"
        value = int(aggregate) if float(aggregate).is_integer() else aggregate
        description = f"{description} ({what} reached {value} within {t.window_ms // 1000}s)"
    timestamp = record.get("@timestamp")
    return {
        "sequence": sequence,
        "timestamp": timestamp if isinstance(timestamp, int) and not isinstance(timestamp, bool) else 0,
        "key": key,
        "originalKey": key,
        "keyType": rule.key_type,
        "originalKeyType": rule.key_type,
        "description": description,
        "behaviorRule": rule.name,
        "behavior": rule.behavior,
        "riskScore": rule.risk_score,
        "attributes": rule.attribute_values(record),
        "risks": risks,
        "ruleRisks": list(rule.risks),
        "ruleHits": [{"name": rule.name, "scope": rule.scope, "risks": list(rule.risks)}],
        "scoreLevel": score_level,
        "customer": customer_of(record),
        "history": history,
        "keyContext": {"infoList": None},
        # Where it came from: the id of the record that made the rule fire.
        "eventId": event_id,
        "dataset": record.get("@type") if record.get("@type") in ("event", "flow") else "event",
    }
