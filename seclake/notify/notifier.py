"""The decision: which notification rules what the detector saved meets.

Called by the summary store (``detect/summaries.SummaryStore.observers``)
inside the transaction that folds behaviors into summaries (the detector's
save) or triages one: it reads the rules, asks the throttle, and adds outbox
rows to that same transaction. No network here: the sender sends later. So
a crash before the commit loses the behaviors' save and its notifications
together (the log replays both), and after it both are stored, once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from seclake.detect.summary import id_of
from seclake.notify import outbox
from seclake.notify.alertrule import AlertRule, AlertRuleRow, matches_behavior, matches_summary
from seclake.notify.destination import DestinationRow
from seclake.notify.throttle import Throttle

log = logging.getLogger("seclake.notify")

BEHAVIOR_FIELDS = ("behaviorRule", "behavior", "description", "key", "keyType", "customer", "riskScore",
                   "scoreLevel", "risks", "timestamp", "eventId", "sequence", "dataset")
SUMMARY_FIELDS = ("id", "key", "keyType", "customer", "dayIndex", "riskScore", "scoreLevel", "status",
                  "behaviorRules", "behaviors", "risks", "from", "to", "count", "incident")
MAX_LISTED = 50


def behavior_event(b: dict[str, Any], now_ms: int, summary_id: str | None = None) -> dict[str, Any]:
    doc = {f: b.get(f) for f in BEHAVIOR_FIELDS}
    doc["risks"] = list(doc.get("risks") or [])[:MAX_LISTED]
    attributes = b.get("attributes") if isinstance(b.get("attributes"), list) else []
    doc["attributes"] = attributes[:20]
    return {"kind": "behavior", "at": now_ms, "summaryId": summary_id or id_of(b), "behavior": doc}


def summary_event(kind: str, s: dict[str, Any], now_ms: int) -> dict[str, Any]:
    doc = {f: s.get(f) for f in SUMMARY_FIELDS}
    for f in ("behaviorRules", "behaviors", "risks"):
        doc[f] = list(doc.get(f) or [])[:MAX_LISTED]
    return {"kind": kind, "at": now_ms, "summaryId": s.get("id"), "summary": doc}


class Notifier:
    def __init__(self, bands, wake: Callable[[], None] | None = None, throttled: Any = None):
        self.bands = tuple(bands)
        self.wake = wake or (lambda: None)
        # A prometheus-client Counter by rule (service/metrics via notify/sender.Metrics), or None.
        self.throttled = throttled
        self._lock = threading.Lock()

    def _rules(self, session: Session) -> list[AlertRule]:
        rules = []
        for doc in session.scalars(select(AlertRuleRow.doc)):
            try:
                rule = AlertRule.model_validate(doc)
            except Exception:  # noqa: BLE001 - a row written by a later version: skipped, said
                log.warning("notification rule %r unreadable; skipped", doc.get("name") if isinstance(doc, dict) else doc)
                continue
            if rule.enabled:
                rules.append(rule)
        return rules

    def folded(self, session: Session, groups: dict[str, list[dict[str, Any]]],
               changes: list[tuple[dict[str, Any] | None, dict[str, Any]]], now_ms: int) -> None:
        """Behaviors saved (by the id of their summary) and the summaries they changed (before, after),
        in ``session``."""
        rules = self._rules(session)
        if not rules:
            return
        throttle = Throttle(session)
        made = 0
        for rule in rules:
            # The event is made only for what the throttle lets through: a storm is mostly folded.
            if rule.on == "behavior":
                for sid, behaviors in groups.items():
                    for b in behaviors:
                        if matches_behavior(rule, b):
                            made += self._add(session, throttle, rule, sid,
                                              lambda b=b, sid=sid: behavior_event(b, now_ms, sid), now_ms)
            elif rule.on == "summary_level":
                for before, after in changes:
                    if matches_summary(rule, before, after, self.bands):
                        made += self._add(session, throttle, rule, str(after.get("id")),
                                          lambda a=after: summary_event("summary", a, now_ms), now_ms)
            else:
                for before, after in changes:
                    if before is not None and matches_summary(rule, before, after, self.bands):
                        made += self._add(session, throttle, rule, str(after.get("id")),
                                          lambda a=after: summary_event("status", a, now_ms), now_ms)
        self._done(throttle, made)

    def triaged(self, session: Session, before: dict[str, Any], after: dict[str, Any], now_ms: int) -> None:
        """A summary triaged in ``session``: its status rules, and PagerDuty's resolve."""
        rules = self._rules(session)
        throttle = Throttle(session)
        made = 0
        for rule in rules:
            if rule.on in ("summary_status", "summary_level") and matches_summary(rule, before, after, self.bands):
                kind = "status" if rule.on == "summary_status" else "summary"
                made += self._add(session, throttle, rule, str(after.get("id")),
                                  lambda k=kind: summary_event(k, after, now_ms), now_ms)
        if after.get("status") == "resolved" and before.get("status") != "resolved":
            made += self._resolve(session, after, now_ms)
        self._done(throttle, made)

    def _resolve(self, session: Session, summary: dict[str, Any], now_ms: int) -> int:
        """A resolve for each PagerDuty destination told about this summary (its dedup key)."""
        paging = select(DestinationRow.name).where(DestinationRow.kind == "pagerduty")
        told = session.execute(
            select(outbox.Delivery.destination, outbox.Delivery.rule).where(
                outbox.Delivery.ref == summary.get("id"), outbox.Delivery.subject != "resolve",
                outbox.Delivery.destination.in_(paging)).distinct()).all()
        for destination, rule in {d: r for d, r in told}.items():
            outbox.add(session, rule=rule, destination=destination, subject="resolve", ref=str(summary.get("id")),
                       event=summary_event("resolve", summary, now_ms), now_ms=now_ms)
        return len({d for d, _ in told})

    def _add(self, session: Session, throttle: Throttle, rule: AlertRule, ref: str,
             make: Callable[[], dict[str, Any]], now_ms: int) -> int:
        send, window_start, carried = throttle.admit(rule.name, ref, rule.throttleSeconds, now_ms)
        if not send:
            if self.throttled is not None:
                self.throttled.labels(rule.name).inc()
            return 0
        event = make()
        if rule.template:
            event["template"] = rule.template
        for destination in rule.destinations:
            row = outbox.add(session, rule=rule.name, destination=destination, subject=event["kind"], ref=ref,
                             event=event, now_ms=now_ms, window_start=window_start, folded=carried)
            throttle.opened(rule.name, ref, row)
        return len(rule.destinations)

    def _done(self, throttle: Throttle, made: int) -> None:
        throttle.flush()
        if made:
            self.wake()
