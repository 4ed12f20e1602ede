"""The public npm client ``ingext-api`` run unmodified against a real seclake
server with demo data (tests/clients/ingext.mjs): every call it has that
seclake serves, read the way the client reads it.

Needs node and ``npm ci`` in tests/clients (``make test`` and ``.ci/run`` see
to it). Without them the test is skipped with the reason; under ``CI=true``
it fails instead.
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
from tests.conftest import running_server

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.slow


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is missing (apt-get install nodejs npm)"
    if not (HERE / "node_modules" / "ingext-api").is_dir():
        return "tests/clients/node_modules is missing (run `npm ci` in tests/clients, or `make test`)"
    return None


def test_ingext_api_npm_client(tmp_path: Path) -> None:
    missing = _missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"client tests must run in CI: {missing}")
        pytest.skip(missing)
    # One syslog listener: collectorList reads it as a collector entry.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        udp = s.getsockname()[1]
    with running_server(tmp_path / "data", commit_interval_seconds=0.2,
                        listeners=[f"syslog+udp://127.0.0.1:{udp}"]) as server:
        # A day of demo data through the real ingestion path, so summaries,
        # behaviors and rules exist.
        load_demo(server.services.ingestion, days=1, end_ms=int(time.time() * 1000))
        server.services.lake.flush()
        run = subprocess.run(
            ["node", str(HERE / "ingext.mjs"), server.url, server.login()],
            cwd=HERE, capture_output=True, text=True, timeout=300,
        )
    report = run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")
    print(report)
    assert run.returncode == 0, f"the ingext-api client failed against seclake:\n{report}"
    assert run.stdout.splitlines()[-1].endswith(" 0 failed")
