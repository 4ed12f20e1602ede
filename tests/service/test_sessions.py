"""Sessions end after idle time and after their lifetime."""

from __future__ import annotations

import pytest

from seclake.errors import Unauthorized

PASSWORD = "admin-test-password"


def test_idle_session_ends_and_activity_keeps_it(services, clock) -> None:
    token = services.login.login("admin", PASSWORD).token
    for _ in range(5):
        clock.advance(minutes=20)
        assert services.auth.caller(token).username == "admin"
    clock.advance(minutes=30, seconds=1)
    with pytest.raises(Unauthorized, match="inactivity"):
        services.auth.caller(token)
    with pytest.raises(Unauthorized):  # and it stays ended
        services.auth.caller(token)


def test_session_ends_after_its_lifetime(services, clock) -> None:
    token = services.login.login("admin", PASSWORD).token
    for _ in range(12 * 4):
        clock.advance(minutes=15)
        services.auth.caller(token)
    clock.advance(seconds=1)
    with pytest.raises(Unauthorized, match="maximum lifetime"):
        services.auth.caller(token)


def test_caller_carries_roles_and_policies(services) -> None:
    services.policies.add_policy({"name": "p1", "filters": {"event": "@customer:acme"}})
    services.users.add({"username": "ana", "password": "long-enough-1", "roles": ["analyst"],
                        "dataPolicies": ["p1"], "APIPolicies": []})
    caller = services.auth.caller(services.login.login("ana", "long-enough-1").token)
    assert (caller.username, caller.roles, caller.token_kind) == ("ana", ("analyst",), "session")
    assert caller.data_policies == ["p1"] and caller.api_policies == []
    assert caller.may("search") and caller.may("triage") and not caller.may("admin") and not caller.may("ingest")
