"""Every login and every call lands in the audit table, which outlives the server."""

from __future__ import annotations


def test_logins_and_calls_are_audited_and_survive_a_restart(start_server, tmp_path) -> None:
    data = tmp_path / "data"
    srv = start_server(data)
    srv.fail("auth/login", {"username": "admin", "password": "wrong-password"}, status=401)
    token = srv.login()
    srv.call("auth/userList", {}, token)
    srv.fail("auth/getUser", {"username": "nobody0"}, token, status=404)
    srv.fail("auth/userList", {}, status=401)
    entries = srv.services.audit.recent()

    logins = [e for e in entries if e["kind"] == "login"]
    assert [(e["username"], e["outcome"]) for e in logins] == [("admin", "OK"), ("admin", "ERROR")]
    assert all(e["client"] == "127.0.0.1" for e in logins)
    calls = [(e["username"], e["call"], e["outcome"], e["status"]) for e in entries if e["kind"] == "call"]
    assert calls[:3] == [
        (None, "auth/userList", "ERROR", 401),
        ("admin", "auth/getUser", "ERROR", 404),
        ("admin", "auth/userList", "OK", 200),
    ]
    assert all(isinstance(e["durationMs"], int) and e["durationMs"] >= 0 for e in entries)

    srv.stop()
    # A second server on the same data dir finds the entries, and keeps the
    # admin it created the first time (password unchanged).
    again = start_server(data, admin_password="a-different-password")
    assert again.services.audit.recent(len(entries))[::-1] == entries[::-1]
    again.login()


def test_a_search_past_search_timeout_seconds_answers_504_and_the_server_goes_on(start_server) -> None:
    # Here every search is past its deadline at once: the answer is a clear
    # ERROR (504 in the status header), never a hang or a partial answer.
    srv = start_server(search_timeout_seconds=1e-6)
    token = srv.login()
    message = srv.fail("ds/audit_search", {"options": {"searchStr": "*"}}, token, status=504)
    assert "stopped after 1e-06 s (setting search_timeout_seconds)" in message
    srv.call("auth/userList", {}, token)
