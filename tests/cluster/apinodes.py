"""``seclake serve`` processes for the cluster tests, and a small HTTP client for them.

Each server runs in its own session (process group), so a test can SIGKILL
one API node with everything it started and nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.cluster.raycluster import BIN, env, free_port
from tests.conftest import status_of

PASSWORD = "admin-password-1"


class ApiNode:
    def __init__(self, name: str, log_dir: Path, settings: dict[str, str], *args: str):
        self.name = name
        self.port = free_port()
        self.log = log_dir / f"{name}.log"
        e = env()
        e.update(settings)
        e.setdefault("SECLAKE_ADMIN_PASSWORD", PASSWORD)
        self.proc = subprocess.Popen(
            [str(BIN / "seclake"), "serve", "--host", "127.0.0.1", "--port", str(self.port), *args],
            env=e, stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=120)
        self.token: str | None = None

    def wait(self, timeout: float = 180) -> "ApiNode":
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name}: seclake serve exited {self.proc.returncode}:\n{self.tail()}")
            try:
                self.http.get("/", timeout=2)
                return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: seclake serve did not answer:\n{self.tail()}")
            time.sleep(0.3)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def login(self) -> str:
        status, body = self.call("auth/login", {"username": "admin", "password": PASSWORD})
        assert status == 200, body
        self.token = body["response"]["sessionToken"]
        return self.token

    def call(self, name: str, kargs: dict[str, Any], token: str | None = None) -> tuple[int, dict]:
        token = token or self.token
        r = self.http.post(f"/api/{name}", json={"kargs": kargs}, headers={"Servicetoken": token} if token else {})
        return status_of(r), r.json()

    def ok(self, name: str, kargs: dict[str, Any], token: str | None = None) -> Any:
        status, body = self.call(name, kargs, token)
        assert status == 200, (self.name, name, body)
        return body["response"]

    def import_lines(
        self, lines: list[str], token: str | None = None, key: str | None = None, **params: str
    ) -> httpx.Response:
        """POST the lines to import/fw; ``key``: its Idempotency-Key header."""
        headers = {"Servicetoken": token or self.token or ""}
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.http.post("/api/import/fw", content="\n".join(lines).encode(), params=params, headers=headers)

    def events(self, search: str, *, since: int, facets: list[dict] | None = None, limit: int = 1) -> dict:
        options = {
            "dateFacetField": "@timestamp", "range_from": since, "range_to": int(time.time() * 1000) + 60_000,
            "fetchLimit": limit, "searchStr": search, "facets": {"facets": facets or []},
        }
        return self.ok("ds/get_index_zoom_histogram_lv3", {"partition": "default", "dataType": "event", "options": options})

    def behaviors(self, search: str, *, since: int, facets: list[dict] | None = None) -> dict:
        options = {
            "range_from": since, "range_to": int(time.time() * 1000) + 60_000, "range_field": "timestamp",
            "fetchLimit": 1, "searchStr": search, "facets": {"facets": facets or []},
        }
        return self.ok("ds/fsm_behavior_search", {"options": options})

    def kill(self) -> None:
        """SIGKILL the server and every process it started: a crash, no shutdown."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.http.close()


def wait_for(what: str, check, timeout: float = 30.0, every: float = 0.2):
    """``check()`` until it is truthy; its value. Fails naming ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s (last: {value!r})")
        time.sleep(every)
