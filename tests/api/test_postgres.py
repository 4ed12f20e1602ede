"""The whole server on PostgreSQL: login, calls, audit, restart."""

from __future__ import annotations

import pytest


@pytest.mark.postgres
def test_server_on_postgresql(start_server, pg_database_url, tmp_path) -> None:
    srv = start_server(tmp_path / "a", database_url=pg_database_url)
    token = srv.login()
    srv.call("auth/userAdd", {"user": {"username": "pg-user", "password": "long-enough-1"}}, token)
    api = srv.call("auth/api_token", {"action": "add"}, token)["token"]
    assert {u["username"] for u in srv.call("auth/userList", {}, api)["users"]} == {"admin", "pg-user"}
    srv.stop()
    # Another server (its own data dir) sharing the same database sees it all.
    again = start_server(tmp_path / "b", database_url=pg_database_url, admin_password="other-password")
    again.call("auth/userList", {}, api)
    again.login("pg-user", "long-enough-1")
    assert any(e["call"] == "auth/userAdd" for e in again.services.audit.recent())
