"""The seclake command: user, token and config groups in-process, serve as a
real subprocess."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import httpx
import orjson

from tests.cli.command import run


def test_user_commands(tmp_path) -> None:
    d = ["--data-dir", str(tmp_path)]
    first = run("user", "add", "bob", "--role", "analyst", "--email", "bob@example.com", *d,
                input="bob-password-1\nbob-password-1\n", env={"SECLAKE_ADMIN_PASSWORD": None})
    assert first.exit_code == 0, first.output
    # The first command on an empty data dir also created the admin, once.
    assert "created user 'admin' with password" in first.output
    # ... and kept its password where only the data dir's owner reads it, until it is changed.
    password = re.search(r"created user 'admin' with password: (\S+)", first.output).group(1)
    kept = tmp_path / "admin-password"
    assert f"also in {kept}" in first.output
    assert kept.read_text() == password + "\n" and kept.stat().st_mode & 0o777 == 0o600
    listed = run("user", "list", *d)
    assert "created user 'admin'" not in listed.output
    assert re.search(r"^admin\tadmin\tenabled", listed.output, re.M)
    assert re.search(r"^bob\tanalyst\tenabled\tbob@example.com\tlast login never", listed.output, re.M)

    assert run("user", "passwd", "bob", *d, input="new-password-1\nnew-password-1\n").exit_code == 0
    assert kept.exists()  # another user's new password does not touch it
    assert run("user", "passwd", "admin", *d, input="admin-password-9\nadmin-password-9\n").exit_code == 0
    assert not kept.exists()
    assert run("user", "disable", "bob", *d).exit_code == 0
    assert "bob\tanalyst\tdisabled" in run("user", "list", *d).output

    refused = run("user", "disable", "admin", *d)
    assert refused.exit_code == 1 and "no enabled user with the admin role" in refused.output
    short = run("user", "add", "carol", *d, input="short\nshort\n")
    assert short.exit_code == 1 and "at least 10 characters" in short.output


def test_token_commands(tmp_path) -> None:
    d = ["--data-dir", str(tmp_path)]
    created = run("token", "create", "admin", "--name", "ci", "--expires-in-days", "30", *d)
    assert created.exit_code == 0, created.output
    token = re.search(r"^(slk_\S+)$", created.stdout, re.M).group(1)
    listed = run("token", "list", *d)
    assert "\tadmin\t" in listed.output and "\tactive\tci\t" in listed.output
    assert token not in listed.output
    token_id = listed.output.split("\t", 1)[0]
    assert run("token", "revoke", token_id, *d).exit_code == 0
    assert token_id not in [line.split("\t", 1)[0] for line in run("token", "list", *d).output.splitlines()]
    assert "\trevoked\t" in run("token", "list", "--revoked", *d).output
    missing = run("token", "create", "nobody0", *d)
    assert missing.exit_code == 1 and "no user named" in missing.output


def test_config_prints_effective_settings_with_secrets_masked(tmp_path) -> None:
    toml = tmp_path / "seclake.toml"
    toml.write_text('port = 9999\ndatabase_url = "postgresql+psycopg://seclake:hunter2@db/seclake"\n')
    result = run("config", "--data-dir", str(tmp_path), "--config", str(toml),
                 env={"SECLAKE_ADMIN_PASSWORD": "top-secret-pw", "SECLAKE_SESSION_IDLE_MINUTES": "5"})
    assert result.exit_code == 0, result.output
    shown = orjson.loads(result.stdout)
    assert shown["port"] == 9999 and shown["session_idle_minutes"] == 5
    assert shown["data_dir"] == str(tmp_path)
    assert shown["admin_password"] == "********"
    assert "hunter2" not in result.stdout and "top-secret-pw" not in result.stdout


def test_a_bad_setting_found_at_start_is_one_line_and_a_failed_exit(tmp_path) -> None:
    # A real process: `seclake` is main(), which turns what a command did not
    # catch into its message and leaves without the interpreter's teardown.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECLAKE_")}
    env["SECLAKE_ADMIN_PASSWORD"] = "short"
    for args in (["user", "list"], ["serve", "--port", str(free_port())]):
        done = subprocess.run([sys.executable, "-m", "seclake", *args, "--data-dir", str(tmp_path)],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1, done.stderr
        assert ("error: setting admin_password (SECLAKE_ADMIN_PASSWORD): must be at least 10 characters long"
                in done.stderr.splitlines())
        assert "Traceback" not in done.stderr and "short" not in done.stderr
    env["SECLAKE_ADMIN_PASSWORD"] = "a-good-admin-password"
    listed = subprocess.run([sys.executable, "-m", "seclake", "user", "list", "--data-dir", str(tmp_path)],
                            env=env, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and listed.stdout.startswith("admin\tadmin\tenabled"), listed.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_runs_the_server_and_shows_a_generated_password_once(tmp_path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECLAKE_")}
    env["SECLAKE_DATA_DIR"] = str(tmp_path / "data")  # the environment names the data dir
    proc = subprocess.Popen(
        [sys.executable, "-c", "from seclake.cli import main; main()", "serve", "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.post(f"http://127.0.0.1:{port}/api/auth/userList", json={"kargs": {}})
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        assert int(r.headers["X-Seclake-Status"]) == 401
        assert (tmp_path / "data" / "seclake.db").exists()
        # No trusted_proxies: a loopback peer's X-Forwarded-For is not its address.
        httpx.post(f"http://127.0.0.1:{port}/api/auth/login", json={"kargs": {"username": "x", "password": "y"}},
                   headers={"X-Forwarded-For": "203.0.113.9"})
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    password = re.search(r"created user 'admin' with password: (\S+)", output).group(1)
    # The password works, and a later start does not print one again.
    listed = run("user", "list", "--data-dir", str(tmp_path / "data"))
    assert "created user" not in listed.output and listed.output.startswith("admin\t")
    from seclake.services import Services
    from seclake.settings import load_settings

    services = Services(load_settings(data_dir=tmp_path / "data"))
    assert services.login.login("admin", password).user.username == "admin"
    assert [e["client"] for e in services.audit.recent() if e["kind"] == "login" and e["username"] == "x"] == ["127.0.0.1"]
    services.stop()
