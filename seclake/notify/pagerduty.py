"""PagerDuty Events API v2: trigger on a notification, resolve when its summary is resolved.

The ``dedup_key`` is the summary's id (a behavior's summary too), so every
notification about one summary is one PagerDuty incident, a retry or a
duplicate after a crash changes nothing, and the resolve closes it.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from seclake.notify.destination import PAGERDUTY_URL, Target
from seclake.notify.webhook import DeliveryError, post

# seclake's score levels as PagerDuty's four severities.
SEVERITY = {"critical": "critical", "serious": "error", "high": "error", "medium": "warning"}


def payload(target: Target, event: dict[str, Any], message: dict[str, str], link: str) -> dict[str, Any]:
    key = target.get("routingKey")
    if not key:
        raise DeliveryError(f"pagerduty destination {target.name!r} has no routingKey", retry=False)
    dedup = str(event.get("summaryId") or (event.get("summary") or {}).get("id") or event.get("ref") or "test")
    if event.get("kind") == "resolve":
        return {"routing_key": key, "event_action": "resolve", "dedup_key": dedup}
    doc = event.get("behavior") or event.get("summary") or {}
    level = str(doc.get("scoreLevel") or "")
    body: dict[str, Any] = {
        "routing_key": key, "event_action": "trigger", "dedup_key": dedup,
        "payload": {"summary": message["title"][:1024], "source": f"seclake: {doc.get('keyType', '')} "
                    f"{doc.get('key', '')}".strip()[:255] or "seclake",
                    "severity": SEVERITY.get(level, "info"), "component": str(doc.get("keyType") or "")[:255],
                    "group": str(doc.get("customer") or "")[:255],
                    "custom_details": {"text": message["text"][:10_000], "riskScore": doc.get("riskScore"),
                                       "risks": doc.get("risks")}},
    }
    if link:
        body["links"] = [{"href": link, "text": "Open in seclake"}]
    return body


def send(client: httpx.Client, target: Target, event: dict[str, Any], message: dict[str, str], link: str) -> None:
    post(client, target.get("url") or PAGERDUTY_URL, orjson.dumps(payload(target, event, message, link)),
         {"Content-Type": "application/json"})
