"""Delivery you can trust, against a real receiver: a destination down and
back gets every notification once; a kill -9 of seclake with notifications
pending sends them after the restart, none twice; a refusal is kept as
failed, listed, counted and resendable."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import httpx

from seclake.notify.destination import Target
from seclake.notify.sender import redacted, backoff
from tests.conftest import ADMIN_PASSWORD
from tests.notify.helpers import SECRET, ingest, lines, setup
from tests.notify.receiver import Receiver

IPS = [f"10.1.0.{i}" for i in range(1, 6)]


def _wait(predicate, timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    rng = random.Random(7)
    waits = [backoff(n, 300, rng) for n in range(1, 12)]
    assert 1.0 <= waits[0] <= 2.0 and 2.0 <= waits[1] <= 4.0 and 4.0 <= waits[2] <= 8.0
    assert all(150 <= w <= 300 for w in waits[8:])
    assert len({round(backoff(3, 300, rng), 6) for _ in range(20)}) > 1  # jittered, not in lockstep


def test_an_error_shown_never_quotes_a_secret() -> None:
    target = Target("s", "slack", {}, {"url": "https://hooks.example/T0/B0/secretpart", "headers": {"X-Key": "k3y-value"}})
    error = "ConnectError for https://hooks.example/T0/B0/secretpart with k3y-value"
    assert redacted(error, target) == "ConnectError for *** with ***"


def test_a_destination_down_then_back_gets_every_notification_once(start_server) -> None:
    receiver = Receiver(secret=SECRET)
    receiver.stop()  # down before the first notification
    srv = start_server(commit_interval_seconds=0.2, notify_backoff_max_seconds=0.5)
    token = srv.login()
    setup(srv, token, {"name": "hook", "kind": "webhook", "url": receiver.url, "secret": SECRET})
    ingest(srv, token, IPS)

    def tried() -> bool:
        listed = srv.call("notify/delivery_list", {"status": "pending"}, token)["deliveries"]
        # The oldest is tried; the others wait with it (one timeout per backoff, not one per notification).
        return len(listed) == 5 and max(d["attempts"] for d in listed) >= 2

    _wait(tried, what="5 pending deliveries, the destination tried twice")
    metrics = srv.http.get("/metrics").text
    assert 'seclake_notifications{status="pending"} 5.0' in metrics
    assert 'seclake_notifications_retried_total{kind="webhook"}' in metrics
    receiver.start()  # back, on the same port
    receiver.wait_for(5)
    time.sleep(1.5)  # nothing more comes
    ids = Counter(r["headers"]["Seclake-Delivery"] for r in receiver.requests)
    assert len(ids) == 5 and set(ids.values()) == {1}, ids
    assert sorted(b["behavior"]["key"] for b in receiver.bodies()) == IPS
    assert receiver.bad_signatures == 0
    assert srv.call("notify/delivery_list", {}, token)["counts"] == {"pending": 0, "sent": 5, "failed": 0}
    receiver.stop()


def test_a_refusal_is_kept_as_failed_and_resent_on_demand(start_server) -> None:
    receiver = Receiver()
    receiver.status = 403  # a 4xx other than 408/425/429: a retry cannot help
    srv = start_server(commit_interval_seconds=0.2)
    token = srv.login()
    setup(srv, token, {"name": "hook", "kind": "webhook", "url": receiver.url})
    ingest(srv, token, IPS[:1])
    _wait(lambda: srv.call("notify/delivery_list", {"status": "failed"}, token)["deliveries"], what="a failed one")
    failed = srv.call("notify/delivery_list", {"status": "failed"}, token)["deliveries"][0]
    assert failed["attempts"] == 1 and "HTTP 403" in failed["lastError"]
    assert 'seclake_notifications_failed_total{kind="webhook"} 1.0' in srv.http.get("/metrics").text
    receiver.status = 200
    srv.call("notify/resend", {"id": failed["id"]}, token)
    _wait(lambda: srv.call("notify/delivery_list", {}, token)["counts"]["sent"] == 1, what="the resend")
    assert len(receiver.requests) == 2
    receiver.stop()


def test_a_retry_stops_at_the_deadline(start_server) -> None:
    receiver = Receiver()
    receiver.stop()
    srv = start_server(commit_interval_seconds=0.2, notify_retry_seconds=2, notify_backoff_max_seconds=0.3)
    token = srv.login()
    setup(srv, token, {"name": "hook", "kind": "webhook", "url": receiver.url})
    ingest(srv, token, IPS[:1])
    _wait(lambda: srv.call("notify/delivery_list", {}, token)["counts"]["failed"] == 1, what="given up")
    failed = srv.call("notify/delivery_list", {"status": "failed"}, token)["deliveries"][0]
    assert failed["attempts"] >= 3 and "Connect" in failed["lastError"]


def _serve(data_dir, port) -> subprocess.Popen:
    env = dict(os.environ, SECLAKE_ADMIN_PASSWORD=ADMIN_PASSWORD, SECLAKE_COMMIT_INTERVAL_SECONDS="0.2",
               SECLAKE_NOTIFY_BACKOFF_MAX_SECONDS="0.5")
    return subprocess.Popen([sys.executable, "-m", "seclake", "serve", "--port", str(port), "--data-dir",
                             str(data_dir)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _login(url: str) -> str:
    deadline = time.monotonic() + 120
    while True:
        try:
            r = httpx.post(f"{url}/api/auth/login", json={"kargs": {"username": "admin", "password": ADMIN_PASSWORD}},
                           timeout=5)
            return r.json()["response"]["sessionToken"]
        except (httpx.HTTPError, KeyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class _Client:
    """What tests/notify/helpers.setup needs of a server, over HTTP to a process."""

    def __init__(self, url: str):
        self.http = httpx.Client(base_url=url, timeout=30)

    def call(self, name, kargs, token):
        body = self.http.post(f"/api/{name}", json={"kargs": kargs}, headers={"Servicetoken": token}).json()
        assert body["verdict"] == "OK", body
        return body["response"]


def test_kill_9_with_notifications_pending_sends_them_after_restart_none_twice(tmp_path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    receiver = Receiver(secret=SECRET)
    receiver.stop()
    proc = _serve(tmp_path / "data", port)
    try:
        token = _login(url)
        client = _Client(url)
        setup(client, token, {"name": "hook", "kind": "webhook", "url": receiver.url, "secret": SECRET})
        r = client.http.post("/api/import/json", content=lines(IPS[:3]), headers={"Servicetoken": token})
        assert r.json()["verdict"] == "OK"
        _wait(lambda: (lambda ds: len(ds) == 3 and max(d["attempts"] for d in ds) >= 1)(
            client.call("notify/delivery_list", {"status": "pending"}, token)["deliveries"]), what="3 pending, tried")
        # Two more, and the kill at once: their behaviors may be in the log only (not yet saved).
        r = client.http.post("/api/import/json", content=lines(IPS[3:]), headers={"Servicetoken": token})
        assert r.json()["verdict"] == "OK"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        receiver.start()
        proc = _serve(tmp_path / "data", port)
        token = _login(url)
        receiver.wait_for(5, timeout=60)
        time.sleep(2)  # nothing more comes
        ids = Counter(r["headers"]["Seclake-Delivery"] for r in receiver.requests)
        assert len(ids) == 5 and set(ids.values()) == {1}, ids
        assert sorted(b["behavior"]["key"] for b in receiver.bodies()) == IPS
        assert receiver.bad_signatures == 0
    finally:
        proc.kill()
        proc.wait(30)
        receiver.stop()
