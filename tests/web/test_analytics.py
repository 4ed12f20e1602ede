"""Piped queries on the search page (seclake/web/analytics.js) in headless Chromium:
tests/web/analytics.mjs against a real server holding a few known records.

Needs what tests/web/test_browser.py needs (chromium, node, ``npm ci`` in
tests/web); skipped saying so without them, a failure under ``CI=true``.
Screenshots go to test-artifacts/web/analytics/.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import running_server
from tests.web import browser

ARTIFACTS = browser.ARTIFACTS / "analytics"

pytestmark = pytest.mark.slow


def test_piped_queries_on_the_search_page(tmp_path: Path) -> None:
    browser.need_browser()
    # Within the page's default range (the last 24 hours), in three hours.
    hour = 3_600_000
    start = (int(time.time() * 1000) // hour - 4) * hour
    users = ["root", "root", "alice", "root", "alice", "bob"]
    with running_server(tmp_path / "data") as server:
        server.services.lake.append([
            ("event", {"@timestamp": start + (i % 3) * hour + i, "@message": f"line {i}", "@fields": {"user": {"name": u}}})
            for i, u in enumerate(users)
        ])
        server.services.lake.flush()
        browser.run_scenario("analytics.mjs", server.url, ARTIFACTS)
