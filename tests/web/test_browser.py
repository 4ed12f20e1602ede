"""The web interface end to end: a real seclake server with demo data, driven
in headless Chromium by tests/web/e2e.mjs (playwright-core).

Needs the Debian ``chromium`` package, node and ``npm ci`` in tests/web
(``.ci/run`` and ``make test`` see to the last). Without them the test is
skipped with the reason; under ``CI=true`` it fails instead. Screenshots of
every page go to test-artifacts/web/.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from seclake.service.demo import load_demo
from tests.conftest import ADMIN_PASSWORD, running_server

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "web"
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


# Errors reach the page as 200 + verdict ERROR (the default, what the
# interface's other clients read) or with real statuses (http_error_status):
# the interface must work the same in both.
@pytest.mark.parametrize("http_error_status", [False, True], ids=["errors-200", "errors-real-status"])
def test_web_interface_in_chromium(tmp_path: Path, http_error_status: bool) -> None:
    missing = _missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run in CI: {missing}")
        pytest.skip(missing)
    artifacts = ARTIFACTS / ("real-status" if http_error_status else "default")
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
        if artifacts.exists():
            shutil.rmtree(artifacts)
        artifacts.mkdir(parents=True)
        run = subprocess.run(
            ["node", str(HERE / "e2e.mjs"), server.url, ADMIN_PASSWORD, str(artifacts)],
            cwd=HERE, capture_output=True, text=True, timeout=600,
            env={**os.environ, "CHROMIUM_PATH": CHROMIUM},
        )
    report = run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")
    print(report)
    assert run.returncode == 0, f"browser tests failed (screenshots in {artifacts}):\n{report}"
    assert " 0 failed" in run.stdout.splitlines()[-1]
    assert sorted(p.name for p in artifacts.glob("*.png")), "no screenshots taken"
