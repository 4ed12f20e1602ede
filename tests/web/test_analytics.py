"""Piped queries on the search page (seclake/web/analytics.js) in headless Chromium:
tests/web/analytics.mjs against a real server holding a few known records.

Needs what tests/web/test_browser.py needs (chromium, node, ``npm ci`` in
tests/web); skipped saying so without them, a failure under ``CI=true``.
Screenshots go to test-artifacts/web/analytics/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ADMIN_PASSWORD, running_server

HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE.parents[1] / "test-artifacts" / "web" / "analytics"
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


def test_piped_queries_on_the_search_page(tmp_path: Path) -> None:
    missing = _missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run in CI: {missing}")
        pytest.skip(missing)
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
        if ARTIFACTS.exists():
            shutil.rmtree(ARTIFACTS)
        run = subprocess.run(
            ["node", str(HERE / "analytics.mjs"), server.url, ADMIN_PASSWORD, str(ARTIFACTS)],
            cwd=HERE, capture_output=True, text=True, timeout=300,
            env={**os.environ, "CHROMIUM_PATH": CHROMIUM},
        )
    report = run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")
    print(report)
    assert run.returncode == 0, f"browser tests failed (screenshots in {ARTIFACTS}):\n{report}"
    assert " 0 failed" in run.stdout.splitlines()[-1]
