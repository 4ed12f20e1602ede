"""The web interface end to end: a real seclake server with demo data, driven
in headless Chromium by tests/web/e2e.mjs (playwright-core).

Needs the Debian ``chromium`` package, node and ``npm ci`` in tests/web
(``.ci/run`` and ``make test`` see to the last). Without them the test is
skipped with the reason; under ``CI=true`` it fails instead. Screenshots of
every page go to test-artifacts/web/.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from seclake.service.demo import load_demo
from tests.conftest import running_server
from tests.web import browser

pytestmark = pytest.mark.slow


# Errors reach the page as 200 + verdict ERROR (the default, what the
# interface's other clients read) or with real statuses (http_error_status):
# the interface must work the same in both.
@pytest.mark.parametrize("http_error_status", [False, True], ids=["errors-200", "errors-real-status"])
def test_web_interface_in_chromium(tmp_path: Path, http_error_status: bool) -> None:
    browser.need_browser()
    artifacts = browser.ARTIFACTS / ("real-status" if http_error_status else "default")
    # A syslog listener that has heard from one sender, for the Sources page.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        udp = s.getsockname()[1]
    with running_server(tmp_path / "data", commit_interval_seconds=0.2, http_error_status=http_error_status,
                        listeners=[f"syslog+udp://127.0.0.1:{udp}?vendor=edgefw"]) as server:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for i in range(3):
                s.sendto(f"<134>Nov 20 10:00:0{i} fw1 edge: action=deny n={i}".encode(), ("127.0.0.1", udp))
        deadline = time.monotonic() + 10
        while not server.services.listeners.sources()["sources"] and time.monotonic() < deadline:
            time.sleep(0.05)
        # Two days of demo data, ending now, through the real ingestion path
        # (rules, behaviors and summaries included).
        load_demo(server.services.ingestion, days=2, end_ms=int(time.time() * 1000))
        server.services.lake.flush()
        # axe-core in the default mode only: the markup does not depend on the statuses errors come with.
        report = browser.run_scenario("e2e.mjs", server.url, artifacts, timeout=600,
                                      env={"E2E_AXE": "0" if http_error_status else "1"})
    assert ("axe-core checked" in report) != http_error_status
    assert sorted(p.name for p in artifacts.glob("*.png")), "no screenshots taken"
