"""The decision, on SQLite and PostgreSQL: behaviors folded by the summary
store write outbox rows in the same transaction (none if it rolls back),
throttled per rule and key with the folds counted; a summary reaching a
level, a status change, and PagerDuty's resolve after a triage."""

from __future__ import annotations

import pytest

from seclake.detect.summaries import Triage
from seclake.notify import outbox
from seclake.notify.alertrule import AlertRule
from tests.detect.test_summary import T0, behavior


def _rows(services) -> list[outbox.Delivery]:
    with services.db.session() as s:
        rows = s.query(outbox.Delivery).order_by(outbox.Delivery.id).all()
        s.expunge_all()
        return rows


def _fold(services, behaviors, now_ms: int) -> None:
    with services.db.session(write=True) as s:
        services.summaries.apply(s, behaviors, now_ms)


@pytest.fixture
def alerting(services):
    a = services.alerting
    a.put_destination({"name": "hook", "kind": "webhook", "url": "http://127.0.0.1:9/x"})
    a.put_destination({"name": "pager", "kind": "pagerduty", "routingKey": "k"})
    return a


def test_behaviors_are_throttled_per_key_and_the_folds_counted(services, alerting) -> None:
    alerting.put_rule(AlertRule(name="b", rules=["brute"], destinations=["hook"], throttleSeconds=60))
    _fold(services, [behavior(key="alice")] * 5 + [behavior(key="bob"), behavior(rule="other")], T0)
    rows = _rows(services)
    assert [(r.event["behavior"]["key"], r.folded) for r in rows] == [("alice", 4), ("bob", 0)]
    _fold(services, [behavior(key="alice")] * 3, T0 + 30_000)  # same window, its delivery still pending
    assert _rows(services)[0].folded == 7 and len(_rows(services)) == 2
    _fold(services, [behavior(key="alice", ts=T0 + 61_000)], T0 + 61_000)  # a new window
    assert len(_rows(services)) == 3


def test_a_rolled_back_save_writes_no_notification(services, alerting) -> None:
    alerting.put_rule(AlertRule(name="b", destinations=["hook"], throttleSeconds=0))
    with pytest.raises(RuntimeError):
        with services.db.session(write=True) as s:
            services.summaries.apply(s, [behavior()], T0)
            raise RuntimeError("the save failed")
    assert _rows(services) == []


def test_a_level_reached_then_resolved_triggers_and_resolves_pagerduty(services, alerting) -> None:
    alerting.put_rule(AlertRule(name="crit", on="summary_level", level="critical", destinations=["pager"],
                                throttleSeconds=0))
    alerting.put_rule(AlertRule(name="done", on="summary_status", statuses=["resolved"], destinations=["hook"],
                                throttleSeconds=0))
    _fold(services, [behavior(score=3000)], T0)
    assert _rows(services) == []  # medium: below critical
    _fold(services, [behavior(rule="exfil", score=9000)], T0 + 1)
    [trigger] = _rows(services)
    assert trigger.subject == "summary" and trigger.destination == "pager" and trigger.event["summary"]["scoreLevel"] == "critical"
    sid = trigger.ref
    services.summaries.update_incident(Triage(id=sid, status="resolved"), username="admin", now_ms=T0 + 2)
    kinds = [(r.subject, r.destination) for r in _rows(services)]
    assert kinds == [("summary", "pager"), ("status", "hook"), ("resolve", "pager")]


def test_two_transactions_opening_one_window_send_once(services) -> None:
    """A triage on one node and the detector's save on another both reach a window first: one sends."""
    import threading

    from seclake.notify.throttle import Throttle

    results: dict[str, bool] = {}
    admitted = threading.Event()

    def first() -> None:
        with services.db.session(write=True) as s:
            results["first"] = Throttle(s).admit("r", "summary-1", 60, T0)[0]
            admitted.set()
            threading.Event().wait(0.3)  # still open while the second tries

    def second() -> None:
        admitted.wait(10)
        with services.db.session(write=True) as s:
            results["second"] = Throttle(s).admit("r", "summary-1", 60, T0 + 1)[0]

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == {"first": True, "second": False}
