"""Users on each database: first start, hashing, the last-admin rule."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from seclake.db.models import User
from seclake.errors import Conflict, ValidationFailed
from seclake.services import Services
from seclake.settings import load_settings


def test_first_start_creates_admin_with_the_configured_password(services) -> None:
    users = services.users.list()
    assert [(u.username, u.roles) for u in users] == [("admin", ["admin"])]
    assert services.login.login("admin", "admin-test-password").user.username == "admin"
    assert services.prepare() is None  # not again
    assert len(services.users.list()) == 1


def test_first_start_generates_a_password_when_none_is_set(database_url, tmp_path) -> None:
    svc = Services(load_settings(data_dir=tmp_path, database_url=database_url))
    generated = svc.prepare()
    assert generated and len(generated) >= 16
    assert svc.login.login("admin", generated).user.roles == ["admin"]
    assert svc.prepare() is None
    svc.stop()


def test_passwords_are_argon2id_at_owasp_parameters(shipped_password_cost, services) -> None:
    with services.db.session() as s:
        stored = s.scalar(select(User.password_hash).where(User.username == "admin"))
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert "admin-test-password" not in stored


def test_password_minimum_length_follows_the_setting(services) -> None:
    with pytest.raises(ValidationFailed, match="at least 10 characters"):
        services.users.add({"username": "bob", "password": "plum-kite"})
    services.users.add({"username": "bob", "password": "plum-kite7"})


@pytest.mark.parametrize(
    ("password", "why"),
    [
        # Issue 17.13: length alone let these through.
        (" " * 10, "too easy to guess"),
        ("\x00" * 10, "control characters"),
        ("1234567890", "too easy to guess"),
        ("password123", "too easy to guess"),
        ("aaaaaaaaaaaa", "too easy to guess"),
        ("qwertyuiop", "too easy to guess"),
        ("carol12345", "too easy to guess"),  # the user's own name and a count
        ("seclake123", "too easy to guess"),  # the service's name
        ("tab\tinside-it", "control characters"),
    ],
)
def test_guessable_passwords_are_refused_with_the_reason(services, password: str, why: str) -> None:
    with pytest.raises(ValidationFailed, match=why) as err:
        services.users.add({"username": "carol", "password": password})
    assert str(err.value).startswith("user.password")
    with pytest.raises(ValidationFailed, match=why):
        services.users.set_password("admin", password)


def test_passphrases_and_random_passwords_pass(services) -> None:
    for i, password in enumerate(["correct horse battery staple", "plum-kite7", "x7#Qv9!mZ2", "Überraschung-Ahorn"]):
        services.users.add({"username": f"dan{i}", "password": password})


def test_the_last_enabled_admin_is_kept(services) -> None:
    with pytest.raises(Conflict):
        services.users.delete("admin")
    with pytest.raises(Conflict):
        services.users.set_disabled("admin", True)
    with pytest.raises(Conflict):
        services.users.update({"username": "admin", "roles": ["analyst", "ingest"]})
    # A disabled admin does not count as the other admin.
    services.users.add({"username": "other", "password": "long-enough-1", "roles": ["admin"], "disabled": True})
    with pytest.raises(Conflict):
        services.users.delete("admin")
    services.users.set_disabled("other", False)
    services.users.delete("admin")
    assert [u.username for u in services.users.list()] == ["other"]


def test_roles_are_deduplicated_and_default_to_analyst(services) -> None:
    assert services.users.add({"username": "a1", "password": "long-enough-1"}).roles == ["analyst"]
    user = services.users.add({"username": "a2", "password": "long-enough-1", "roles": ["ingest", "ingest"]})
    assert user.roles == ["ingest"]
