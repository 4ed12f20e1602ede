"""A storm of 10,000 matching behaviors sends at most the throttle's worth,
each notification carrying the count of those folded into it, and every
behavior is told once (window shrunk to 2 s for the test)."""

from __future__ import annotations

import time

from tests.notify.helpers import ingest, setup
from tests.notify.receiver import Receiver

STORM = 10_000
KEYS = [f"10.5.0.{i}" for i in range(1, 11)]


def test_a_storm_of_10000_behaviors_sends_the_throttles_worth_with_counts(start_server) -> None:
    receiver = Receiver()
    srv = start_server(commit_interval_seconds=0.2)
    token = srv.login()
    setup(srv, token, {"name": "hook", "kind": "webhook", "url": receiver.url}, throttleSeconds=2)
    started = time.monotonic()
    for part in range(4):  # four imports of 2,500 lines, 10 keys
        ingest(srv, token, [KEYS[i % len(KEYS)] for i in range(STORM // 4)])
    storm_s = time.monotonic() - started
    time.sleep(2.5)  # every window ends
    ingest(srv, token, KEYS)  # one more per key: carries what was folded after its window's notification left
    windows = int(storm_s // 2) + 2
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        told = sum(1 + b["folded"] for b in receiver.bodies())
        if told == STORM + len(KEYS):
            break
        time.sleep(0.2)
    bodies = receiver.bodies()
    per_key: dict[str, int] = {}
    for b in bodies:
        per_key[b["behavior"]["key"]] = per_key.get(b["behavior"]["key"], 0) + 1
    assert sum(1 + b["folded"] for b in bodies) == STORM + len(KEYS), "every behavior told once, sent or folded"
    assert all(n <= windows + 1 for n in per_key.values()), (per_key, storm_s)
    assert len(bodies) <= len(KEYS) * (windows + 1)
    assert any(b["folded"] >= 100 for b in bodies)
    assert any("more like it" in b["text"] for b in bodies)
    metrics = srv.http.get("/metrics").text
    throttled = float(metrics.split('seclake_notifications_throttled_total{rule="notify-on-logon"} ')[1].split()[0])
    assert throttled == STORM + len(KEYS) - len(bodies)
    print(f"storm: {STORM} behaviors in {storm_s:.1f} s, {len(bodies)} notifications")
    receiver.stop()
