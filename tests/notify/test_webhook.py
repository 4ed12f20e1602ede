"""Webhook destinations against a real HTTP receiver: the detection path
writes the outbox, the sender POSTs JSON signed with the destination's
secret (the receiver checks the HMAC over timestamp and body), each once."""

from __future__ import annotations

import time

from seclake.notify.webhook import signature
from tests.notify.helpers import SECRET, ingest, setup
from tests.notify.receiver import Receiver


def test_the_signature_is_stripes_scheme_over_timestamp_and_body() -> None:
    # Computed by hand: HMAC-SHA256("k" * 16, "1700000000.{}")
    import hashlib
    import hmac

    expected = hmac.new(b"k" * 16, b"1700000000.{}", hashlib.sha256).hexdigest()
    assert signature("k" * 16, 1_700_000_000, b"{}") == f"t=1700000000,v1={expected}"


def test_each_behavior_reaches_the_webhook_once_signed(start_server) -> None:
    receiver = Receiver(secret=SECRET)
    srv = start_server(commit_interval_seconds=0.2, public_url="https://seclake.example.org/")
    token = srv.login()
    setup(srv, token, {"name": "hook", "kind": "webhook", "url": receiver.url, "secret": SECRET,
                       "headers": {"X-Team": "soc"}})
    ingest(srv, token, ["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    bodies = receiver.wait_for(3)
    assert sorted(b["behavior"]["key"] for b in bodies) == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert all(r["signed"] for r in receiver.requests), "every request carries a valid signature"
    assert {r["headers"]["X-Team"] for r in receiver.requests} == {"soc"}
    assert len({r["headers"]["Seclake-Delivery"] for r in receiver.requests}) == 3
    body = bodies[0]
    assert body["type"] == "behavior" and body["rule"] == "notify-on-logon"
    assert body["link"].startswith("https://seclake.example.org/summaries?") and body["summaryId"] in body["link"]
    assert "Failed logon" in body["title"] and "T1110" in body["text"]
    # The receiver has the third request a moment before the sender records its answer.
    deadline = time.monotonic() + 20
    while (counts := srv.call("notify/delivery_list", {}, token)["counts"])["sent"] < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert counts == {"pending": 0, "sent": 3, "failed": 0}
    metrics = srv.http.get("/metrics").text
    assert 'seclake_notifications_sent_total{kind="webhook"} 3.0' in metrics
    assert 'seclake_notifications{status="sent"} 3.0' in metrics
    # The secret is never answered: only that it is set.
    shown = srv.call("notify/destination_dao", {"action": "get", "name": "hook"}, token)["destination"]
    assert SECRET not in str(shown) and "soc" not in str(shown)
    assert shown["secretsSet"] == ["headers", "secret"] and shown["url"] == receiver.url
    receiver.stop()
