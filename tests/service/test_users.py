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
    assert [(u["username"], u["roles"]) for u in users] == [("admin", ["admin"])]
    assert services.login.login("admin", "admin-test-password")["status"] == "succeed"
    assert services.prepare() is None  # not again
    assert len(services.users.list()) == 1


def test_first_start_generates_a_password_when_none_is_set(database_url, tmp_path) -> None:
    svc = Services(load_settings(data_dir=tmp_path, database_url=database_url))
    generated = svc.prepare()
    assert generated and len(generated) >= 16
    assert svc.login.login("admin", generated)["roles"] == ["admin"]
    assert svc.prepare() is None
    svc.stop()


def test_passwords_are_argon2id_at_owasp_parameters(services) -> None:
    with services.db.session() as s:
        stored = s.scalar(select(User.password_hash).where(User.username == "admin"))
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert "admin-test-password" not in stored


def test_password_minimum_length_follows_the_setting(services) -> None:
    with pytest.raises(ValidationFailed, match="at least 10 characters"):
        services.users.add({"username": "bob", "password": "123456789"})
    services.users.add({"username": "bob", "password": "1234567890"})


def test_the_last_enabled_admin_is_kept(services) -> None:
    with pytest.raises(Conflict):
        services.users.delete("admin")
    with pytest.raises(Conflict):
        services.users.set_disabled("admin", True)
    with pytest.raises(Conflict):
        services.users.update("admin", {"roles": ["analyst", "ingest"]})
    # A disabled admin does not count as the other admin.
    services.users.add({"username": "other", "password": "long-enough-1", "roles": ["admin"], "disabled": True})
    with pytest.raises(Conflict):
        services.users.delete("admin")
    services.users.set_disabled("other", False)
    services.users.delete("admin")
    assert [u["username"] for u in services.users.list()] == ["other"]


def test_roles_are_deduplicated_and_default_to_analyst(services) -> None:
    assert services.users.add({"username": "a1", "password": "long-enough-1"})["roles"] == ["analyst"]
    record = services.users.add({"username": "a2", "password": "long-enough-1", "roles": ["ingest", "ingest"]})
    assert record["roles"] == ["ingest"] and record["rights"] == "ingest"
