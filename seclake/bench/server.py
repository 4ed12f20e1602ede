"""A real ``seclake serve`` subprocess on 127.0.0.1, and what the benchmark reads of it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

PASSWORD = "bench-admin-password"
SEARCH = "ds/get_index_zoom_histogram_lv3"


def bench_env(data_dir: Path) -> dict[str, str]:
    """The environment of every seclake process the benchmark starts.

    Retention is off: the data has a fixed end date, which would otherwise
    age out of the default 90 days as the calendar moves on.
    """
    # Only the merge's quiet time passes on (the tests' tiny runs shorten it: wait_quiet
    # reads the same setting).
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECLAKE_") or k == "SECLAKE_MERGE_QUIET_SECONDS"}
    env.update({
        "SECLAKE_DATA_DIR": str(data_dir),
        "SECLAKE_ADMIN_PASSWORD": PASSWORD,
        "SECLAKE_RETENTION_DAYS": "0",
        "SECLAKE_LOG_LEVEL": "warning",
        "SECLAKE_SESSION_IDLE_MINUTES": "600",
        "SECLAKE_SESSION_MAX_HOURS": "24",
    })
    return env


def record_ids_of(data_dir: Path):
    """The record ids a server on ``data_dir`` shows (its deployment's key)."""
    from seclake.db.database import Database
    from seclake.services import record_ids_in
    from seclake.settings import load_settings

    settings = load_settings(data_dir=data_dir)
    db = Database(settings.effective_database_url)
    try:
        return record_ids_in(db, settings)
    finally:
        db.dispose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid: int, key: str) -> int | None:
    """A ``/proc/<pid>/status`` figure in kB (VmHWM: peak resident, VmRSS: resident now)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class Server:
    def __init__(self, data_dir: Path, log_path: Path, args: tuple[str, ...] = (), env: dict[str, str] | None = None,
                 cores: int | None = None):
        # args/env: extra `seclake serve` options and settings (the cluster stage's API node).
        self.args, self.env = args, env or {}
        # Run on the first ``cores`` CPUs only (taskset; the worker processes it starts too).
        self.cores = cores
        self.data_dir = data_dir
        self.log_path = log_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.token: str | None = None
        self.started_seconds = 0.0

    def start(self, timeout: float = 120.0) -> None:
        started = time.perf_counter()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        pin = ["taskset", "-c", ",".join(str(c) for c in range(self.cores))] if self.cores else []
        self.proc = subprocess.Popen(
            [*pin, sys.executable, "-m", "seclake", "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--data-dir", str(self.data_dir), *self.args],
            env={**bench_env(self.data_dir), **self.env}, stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        with httpx.Client(base_url=self.url, timeout=5) as http:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"seclake serve exited with {self.proc.returncode}; see {self.log_path}")
                try:
                    r = http.post("/api/auth/login", json={"kargs": {"username": "admin", "password": PASSWORD}})
                    if r.status_code == 200:
                        self.token = r.json()["response"]["sessionToken"]
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"seclake serve did not answer within {timeout}s; see {self.log_path}")
                time.sleep(0.1)
        self.started_seconds = time.perf_counter() - started

    def stop(self, timeout: float = 60.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def headers(self) -> dict[str, str]:
        return {"Servicetoken": self.token or ""}

    def client(self, timeout: float = 300.0) -> httpx.Client:
        """A keep-alive client of this server."""
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=timeout)

    def peak_rss_kb(self) -> int | None:
        return status_kb(self.proc.pid, "VmHWM") if self.proc else None

    def status_kb(self, key: str) -> int | None:
        return status_kb(self.proc.pid, key) if self.proc else None

    def rss_kb(self) -> int | None:
        return status_kb(self.proc.pid, "VmRSS") if self.proc else None


def call(http: httpx.Client, name: str, kargs: dict) -> dict:
    r = http.post(f"/api/{name}", json={"kargs": kargs})
    body = r.json()
    if r.status_code != 200 or body.get("verdict") != "OK":
        raise RuntimeError(f"{name} answered {r.status_code}: {str(body)[:500]}")
    return body["response"]


def count(http: httpx.Client, dataset: str) -> int:
    """Every record of a dataset the server can search now."""
    opts = {"dateFacetField": "@timestamp", "dataType": dataset, "fetchLimit": 0}
    return call(http, SEARCH, {"partition": "default", "dataType": dataset, "options": opts})["hits"]["total"]
