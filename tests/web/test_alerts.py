"""The alerts page (seclake/web/page-alerts.js) in headless Chromium:
tests/web/alerts.mjs against a real server with two webhook destinations
(one receiver up, one down), a rule and a failed delivery.

Needs what tests/web/test_browser.py needs (chromium, node, ``npm ci`` in
tests/web); skipped saying so without them, a failure under ``CI=true``.
Screenshots go to test-artifacts/web/alerts/.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import running_server
from tests.notify.helpers import ingest, setup
from tests.notify.receiver import Receiver
from tests.web import browser

ARTIFACTS = browser.ARTIFACTS / "alerts"

pytestmark = pytest.mark.slow


def test_the_alerts_page(tmp_path: Path) -> None:
    browser.need_browser()
    up, down = Receiver(), Receiver()
    down.stop()
    up.status = 403  # the first delivery is refused: failed, to be resent from the page
    with running_server(tmp_path / "data", commit_interval_seconds=0.2) as server:
        token = server.login()
        setup(server, token, {"name": "hook", "kind": "webhook", "url": up.url, "secret": "whsec-page-secret-0123"},
              name="logons", techniques=["T1110"])
        server.call("notify/destination_dao", {"action": "add", "destination": {
            "name": "dead", "kind": "webhook", "url": down.url}}, token)
        ingest(server, token, ["10.8.0.1"])
        deadline = time.monotonic() + 30
        while not server.call("notify/delivery_list", {"status": "failed"}, token)["deliveries"]:
            assert time.monotonic() < deadline, "no failed delivery"
            time.sleep(0.1)
        up.status = 200
        browser.run_scenario("alerts.mjs", server.url, ARTIFACTS)
    up.stop()
