"""API tokens: only hashes stored, expiry, revocation, last use."""

from __future__ import annotations

import base64
import hashlib

import pytest
from sqlalchemy import select

from seclake.db.models import ApiToken, UserSession
from seclake.errors import Unauthorized
from seclake.service.clock import iso


def test_tokens_are_random_256_bit_and_stored_only_as_hashes(services) -> None:
    secret = services.tokens.create("admin", {"name": "ci"}).secret
    session = services.login.login("admin", "admin-test-password").token
    for token, prefix in ((secret, "slk_"), (session, "sls_")):
        assert token.startswith(prefix)
        raw = base64.urlsafe_b64decode(token[len(prefix):] + "=")
        assert len(raw) * 8 >= 256
    with services.db.session() as s:
        stored = [t.token_hash for t in s.scalars(select(ApiToken))]
        stored_sessions = [t.token_hash for t in s.scalars(select(UserSession))]
    assert stored == [hashlib.sha256(secret.encode()).hexdigest()]
    assert stored_sessions == [hashlib.sha256(session.encode()).hexdigest()]


def test_token_expiry_revocation_and_last_use(services, clock) -> None:
    created = services.tokens.create("admin", {"name": "short", "expiresInDays": 1})
    assert iso(created.token.expires_on) == "2026-11-22T10:00:00.123000Z"
    clock.advance(hours=1)
    assert services.auth.caller(created.secret).token_kind == "api"
    listed = services.tokens.list("admin")[0]
    assert iso(listed.token.last_used) == "2026-11-21T11:00:00.123000Z" and listed.secret is None
    assert listed.state(clock()) == "active"
    clock.advance(days=1)
    with pytest.raises(Unauthorized, match="expired"):
        services.auth.caller(created.secret)
    assert services.tokens.list()[0].state(clock()) == "expired"

    other = services.tokens.create("admin", {"name": "revoked"})
    assert services.tokens.revoke(str(other.token.id)).state(clock()) == "revoked"
    with pytest.raises(Unauthorized, match="revoked"):
        services.auth.caller(other.secret)


def test_a_revoked_token_leaves_the_list_unless_asked_for(services, clock) -> None:
    kept = services.tokens.create("admin", {"name": "kept"})
    gone = services.tokens.create("admin", {"name": "gone"})
    services.tokens.revoke("gone", by_name=True)
    assert [v.token.name for v in services.tokens.list()] == ["kept"]
    listed = services.tokens.list(revoked=True)
    assert [(v.token.name, v.state(clock())) for v in listed] == [("kept", "active"), ("gone", "revoked")]
    assert kept.token.id != gone.token.id
