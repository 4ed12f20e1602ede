"""``seclake up`` / ``serve`` as a newcomer meets them: the port first, options that say their variables."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.cli.command import run


def test_a_taken_port_fails_at_once_before_anything_is_created(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "SECLAKE_ADMIN_PASSWORD"}
    try:
        done = subprocess.run([sys.executable, "-m", "seclake", "up", "--port", str(port), "--data-dir", str(data)],
                              env=env, capture_output=True, text=True, timeout=120)
    finally:
        taken.close()
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert "--port or SECLAKE_PORT" in done.stderr
    # No admin was made (no password shown that the next start would not show again), no demo loaded.
    assert "password" not in done.stderr + done.stdout
    assert not data.exists()


def test_every_option_of_up_and_serve_names_its_environment_variable():
    for command in ("up", "serve"):
        text = " ".join(run(command, "--help", env={"COLUMNS": "400"}).output.split())
        for option, variable in [("--host", "SECLAKE_HOST"), ("--port", "SECLAKE_PORT"),
                                 ("--data-dir", "SECLAKE_DATA_DIR"), ("--config", "SECLAKE_CONFIG"),
                                 ("--ray-address", "SECLAKE_RAY_ADDRESS"), ("--ingest", "SECLAKE_INGEST"),
                                 ("--standby", "SECLAKE_STANDBY"), ("--listen", "SECLAKE_LISTENERS")]:
            assert option in text and variable in text, (command, option)
        assert "SECLAKE_<NAME>" in text
