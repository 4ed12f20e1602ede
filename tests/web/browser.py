"""Running a browser scenario of tests/web (harness.mjs) against a server, for the tests that need one.

Needs Chromium (Debian `chromium`), node, and tests/web's node modules (`npm ci`, which `make test`
runs): without them a test is skipped saying what is missing, and fails under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ADMIN_PASSWORD

HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE.parents[1] / "test-artifacts" / "web"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    if shutil.which("node") is None:
        return "node is missing (apt-get install nodejs npm)"
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        return "tests/web/node_modules is missing (run `npm ci` in tests/web, or `make test`)"
    return None


def need_browser() -> None:
    """Skip the test without Chromium, node or the node modules (fail under CI=true)."""
    why = missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run in CI: {why}")
        pytest.skip(why)


def run_scenario(script: str, url: str, artifacts: Path, timeout: float = 300, env: dict[str, str] | None = None) -> str:
    """Run tests/web/``script`` against ``url`` (``env``: more of its environment); every step must pass. Its report (printed too)."""
    if artifacts.exists():
        shutil.rmtree(artifacts)
    artifacts.mkdir(parents=True)
    run = subprocess.run(
        ["node", str(HERE / script), url, ADMIN_PASSWORD, str(artifacts)],
        cwd=HERE, capture_output=True, text=True, timeout=timeout, env={**os.environ, "CHROMIUM_PATH": CHROMIUM, **(env or {})},
    )
    report = run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")
    print(report)
    assert run.returncode == 0, f"browser tests failed (screenshots in {artifacts}):\n{report}"
    assert " 0 failed" in run.stdout.splitlines()[-1]
    return report
