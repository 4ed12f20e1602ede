"""The split builders' C allocator: jemalloc where installed (seclake/storage/allocator.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from seclake.bench.server import Server, count
from seclake.storage import allocator
from tests.storage.test_builder import _children

INSTALLED = allocator.library()


def _installed() -> str:
    if INSTALLED is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs jemalloc (.ci/run: libjemalloc2): the builders are measured and tested with it")
        pytest.skip("jemalloc is not installed here (Debian: libjemalloc2)")
    return INSTALLED


def test_the_command_line_names_jemalloc_for_the_processes_it_starts_once_and_beside_what_is_preloaded():
    path = _installed()
    env: dict[str, str] = {}
    assert allocator.for_children(env) == path and env["LD_PRELOAD"] == path
    allocator.for_children(env)
    assert env["LD_PRELOAD"] == path  # not twice
    other = {"LD_PRELOAD": "/opt/trace/libtrace.so"}
    allocator.for_children(other)
    assert other["LD_PRELOAD"] == f"/opt/trace/libtrace.so:{path}"


def test_an_operator_can_keep_the_system_allocator():
    env = {"SECLAKE_ALLOCATOR": " System "}
    assert allocator.for_children(env) is None and "LD_PRELOAD" not in env


def test_a_misspelt_choice_is_named_in_a_warning_at_start_and_taken_as_the_default(caplog, monkeypatch):
    from seclake.cli.serve import _say_allocator

    env = {"SECLAKE_ALLOCATOR": "sytem"}
    assert allocator.setting(env) == "sytem" and not allocator.turned_off(env)
    monkeypatch.setenv("SECLAKE_ALLOCATOR", "sytem")
    with caplog.at_level("INFO", logger="seclake"):
        _say_allocator()
    assert "SECLAKE_ALLOCATOR='sytem' is not one of jemalloc, system" in caplog.text


def test_a_servers_build_workers_run_with_jemalloc_and_the_server_keeps_the_system_allocator(tmp_path):
    _installed()
    server = Server(tmp_path / "data", tmp_path / "server.log", env={"SECLAKE_LOG_LEVEL": "info"})
    server.start()
    try:
        # Enough lines for a split built in a worker process (builder.WORKER_THRESHOLD).
        body = "\n".join(
            f"<38>Nov 21 10:{i // 60 % 60:02d}:{i % 60:02d} bastion sshd[{400 + i}]: Failed password for invalid "
            f"user u{i % 7} from 203.0.113.{i % 250} port {40000 + i} ssh2" for i in range(1200)
        )
        with server.client() as http:
            r = http.post("/api/import/sshd", params={"customer": "acme"}, content=body)
            assert r.status_code == 200 and r.json()["response"]["accepted"] == 1200, r.text
            deadline = time.monotonic() + 60
            while count(http, "event") < 1200 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert count(http, "event") == 1200
        workers = [pid for pid in _children(server.proc.pid) if "multiprocessing" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert workers, "no build worker process"
        assert all(allocator.in_use(pid) for pid in workers)
        assert not allocator.in_use(server.proc.pid)
        assert "split builders use jemalloc" in Path(tmp_path / "server.log").read_text()
    finally:
        server.stop()
