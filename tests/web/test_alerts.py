"""The alerts page (seclake/web/page-alerts.js) in headless Chromium:
tests/web/alerts.mjs against a real server with two webhook destinations
(one receiver up, one down), a rule and a failed delivery.

Needs what tests/web/test_browser.py needs (chromium, node, ``npm ci`` in
tests/web); skipped saying so without them, a failure under ``CI=true``.
Screenshots go to test-artifacts/web/alerts/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ADMIN_PASSWORD, running_server
from tests.notify.helpers import ingest, setup
from tests.notify.receiver import Receiver

HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE.parents[1] / "test-artifacts" / "web" / "alerts"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

pytestmark = pytest.mark.slow


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    if shutil.which("node") is None:
        return "node is missing (apt-get install nodejs npm)"
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        return "tests/web/node_modules is missing (run `npm ci` in tests/web, or `make test`)"
    return None


def test_the_alerts_page(tmp_path: Path) -> None:
    missing = _missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run in CI: {missing}")
        pytest.skip(missing)
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
        if ARTIFACTS.exists():
            shutil.rmtree(ARTIFACTS)
        run = subprocess.run(
            ["node", str(HERE / "alerts.mjs"), server.url, ADMIN_PASSWORD, str(ARTIFACTS)],
            cwd=HERE, capture_output=True, text=True, timeout=300, env={**os.environ, "CHROMIUM_PATH": CHROMIUM},
        )
    up.stop()
    report = run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")
    print(report)
    assert run.returncode == 0, f"browser tests failed (screenshots in {ARTIFACTS}):\n{report}"
    assert " 0 failed" in run.stdout.splitlines()[-1]
