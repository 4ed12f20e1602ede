"""Resolved callers are reused only while nothing about access changed.

Two Services objects on one database stand for two API nodes: a change
made through one must reach the very next call resolved by the other.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from seclake.db import generation
from seclake.errors import Unauthorized
from seclake.services import Services

PASSWORD = "ana-password-1"


@pytest.fixture
def other_node(services: Services, clock) -> Iterator[Services]:
    node = Services(services.settings, clock=clock)
    try:
        yield node
    finally:
        node.stop()


@pytest.fixture
def ana(services: Services) -> str:
    services.users.add({"username": "ana", "password": PASSWORD, "roles": ["analyst"]})
    return services.login.login("ana", PASSWORD).token


def test_disabling_on_another_node_ends_the_next_call(services, other_node, ana) -> None:
    assert services.auth.caller(ana).username == "ana"
    assert services.auth.caller(ana).username == "ana"  # now from what was kept
    other_node.users.set_disabled("ana", True)
    with pytest.raises(Unauthorized, match="no such session"):  # disabling ended the session
        services.auth.caller(ana)


def test_policy_change_on_another_node_narrows_the_next_call(services, other_node, ana) -> None:
    assert not services.auth.caller(ana).rights.restricted
    other_node.policies.add_policy({"name": "acme", "filters": {"event": "@customer:acme"}})
    other_node.users.update({"username": "ana", "dataPolicies": ["acme"]})
    assert services.auth.caller(ana).rights.restricted
    other_node.policies.update_policy({"name": "acme", "filters": {"event": "@customer:beta"}})
    layer = services.auth.caller(ana).rights.data_layers[0]
    assert layer == (("acme", (("event", "@customer:beta"),)),)


def test_revoked_token_and_logout_end_the_next_call(services, other_node) -> None:
    created = services.tokens.create("admin", {"name": "ci"})
    assert services.auth.caller(created.secret).token_kind == "api"
    other_node.tokens.revoke(created.token.id)
    with pytest.raises(Unauthorized, match="revoked"):
        services.auth.caller(created.secret)

    session = services.login.login("admin", "admin-test-password").token
    assert services.auth.caller(session).username == "admin"
    other_node.sessions.end(session)
    with pytest.raises(Unauthorized):
        services.auth.caller(session)


def test_calling_moves_no_generation_but_changes_do(services, clock, ana) -> None:
    before = generation.current(services.db)
    for _ in range(3):
        clock.advance(minutes=2)  # past the last-seen resolution: each call writes last_seen
        services.auth.caller(ana)
    assert generation.current(services.db) == before
    services.users.update({"username": "ana", "email": "ana@example.org"})
    assert generation.current(services.db) == before + 1


def test_idle_expiry_holds_for_a_kept_caller(services, clock, ana) -> None:
    services.auth.caller(ana)
    clock.advance(minutes=30, seconds=1)
    with pytest.raises(Unauthorized, match="inactivity"):
        services.auth.caller(ana)
