"""API tokens: shown once at creation, optional expiry, last use, revocable."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from seclake.db.database import Database
from seclake.db.models import ApiToken, CustomRole, User
from seclake.errors import NotFound, Unauthorized, ValidationFailed
from seclake.service.caller import Caller
from seclake.service.clock import Clock, iso
from seclake.service.secret import API_PREFIX, new_token, same_hash, token_hash
from seclake.service.policies import check_patterns, check_policy_names
from seclake.service.users import check_username

MAX_NAME = 100
MAX_DAYS = 3650
# Last use is recorded with this resolution, so a busy token does not cost
# a write on every call.
LAST_USE_RESOLUTION = timedelta(seconds=60)


def token_record(token: ApiToken, username: str, now: datetime) -> dict[str, Any]:
    if token.revoked_on is not None:
        state = "revoked"
    elif token.expires_on is not None and token.expires_on <= now:
        state = "expired"
    else:
        state = "active"
    return {
        "id": token.id,
        "name": token.name,
        "username": username,
        "prefix": token.prefix,
        "createdOn": iso(token.created_on),
        "expiresOn": iso(token.expires_on),
        "lastUsed": iso(token.last_used),
        "revokedOn": iso(token.revoked_on),
        "state": state,
        # The narrowing this token carries; null: its user's rights as they are.
        "dataPolicies": token.data_policies,
        "APIPolicies": token.api_policies,
    }


class Tokens:
    def __init__(self, db: Database, clock: Clock):
        self.db = db
        self.clock = clock

    def create(
        self, username: object, name: object = "", expires_in_days: object = None,
        data_policies: object = None, api_policies: object = None,
    ) -> dict[str, Any]:
        """Issue a token; the returned ``token`` is the only time it is shown.

        ``data_policies`` and ``api_policies`` narrow the token below its
        user's rights (seclake.service.access): data policies must be among
        the user's own (or the user's roles') when the user has any; API
        patterns are matched on top of the user's, so they cannot widen.
        """
        user_name = check_username(username, "username")
        if not isinstance(name, str) or len(name) > MAX_NAME:
            raise ValidationFailed("name", f"must be a string of at most {MAX_NAME} characters")
        now = self.clock()
        expires = None
        if expires_in_days is not None:
            if (
                isinstance(expires_in_days, bool)
                or not isinstance(expires_in_days, int | float)
                or not 0 < expires_in_days <= MAX_DAYS
            ):
                raise ValidationFailed("expiresInDays", f"must be a number of days above 0 and at most {MAX_DAYS}")
            expires = now + timedelta(days=expires_in_days)
        secret = new_token(API_PREFIX)
        with self.db.session(write=True) as s:
            user = s.scalar(select(User).where(User.username == user_name))
            if user is None:
                raise NotFound(f"no user named {user_name!r}")
            policies = _narrowing_policies(s, user, data_policies)
            patterns = check_patterns(api_policies, "APIPolicies") if api_policies is not None else None
            token = ApiToken(
                token_hash=token_hash(secret),
                prefix=secret[:10],
                name=name,
                user_id=user.id,
                created_on=now,
                expires_on=expires,
                data_policies=policies or None,
                api_policies=patterns or None,
            )
            s.add(token)
            s.flush()
            return {"token": secret, **token_record(token, user.username, now)}

    def list(self, username: object = None) -> list[dict[str, Any]]:
        now = self.clock()
        query = select(ApiToken, User.username).join(User).order_by(ApiToken.id)
        if username is not None:
            query = query.where(User.username == check_username(username, "username"))
        with self.db.session() as s:
            return [token_record(t, name, now) for t, name in s.execute(query)]

    def revoke(self, token_id: object) -> dict[str, Any]:
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise ValidationFailed("id", "must be the integer id of a token (see action list)")
        now = self.clock()
        with self.db.session(write=True) as s:
            row = s.execute(select(ApiToken, User.username).join(User).where(ApiToken.id == token_id)).first()
            if row is None:
                raise NotFound(f"no API token with id {token_id}")
            token, name = row
            if token.revoked_on is None:
                token.revoked_on = now
            return token_record(token, name, now)

    def resolve(self, secret: str) -> Caller:
        digest = token_hash(secret)
        now = self.clock()
        with self.db.session(write=True) as s:
            row = s.execute(select(ApiToken, User).join(User).where(ApiToken.token_hash == digest)).first()
            if row is None or not same_hash(row[0].token_hash, digest):
                raise Unauthorized("invalid token: no such session or API token")
            token, user = row
            if token.revoked_on is not None:
                raise Unauthorized(f"API token {token.prefix}... was revoked")
            if token.expires_on is not None and token.expires_on <= now:
                raise Unauthorized(f"API token {token.prefix}... expired at {iso(token.expires_on)}")
            if user.disabled:
                raise Unauthorized(f"user {user.username!r} is disabled")
            if token.last_used is None or now - token.last_used > LAST_USE_RESOLUTION:
                token.last_used = now
            return Caller(
                username=user.username,
                roles=tuple(user.roles),
                token_kind="api",
                token_id=token.id,
                data_policies=user.data_policies,
                api_policies=user.api_policies,
                token_data_policies=token.data_policies,
                token_api_policies=token.api_policies,
                fresh_until=min(t for t in (token.last_used + LAST_USE_RESOLUTION, token.expires_on) if t is not None),
            )




def _narrowing_policies(s, user: User, value: object) -> list[str] | None:
    """The data policies a new token of ``user`` is restricted to, checked to narrow."""
    if value is None:
        return None
    names = check_policy_names(s, value, "dataPolicies")
    held = [p for p in (user.data_policies or []) if isinstance(p, str)]
    custom = [r for r in user.roles if isinstance(r, str)]
    for role in s.scalars(select(CustomRole).where(CustomRole.name.in_(custom))) if custom else []:
        held += [p for p in role.data_policies or [] if isinstance(p, str)]
    if held:
        for i, name in enumerate(names):
            if name not in held:
                raise ValidationFailed(
                    f"dataPolicies[{i}]",
                    f"{user.username!r} is not restricted by data policy {name!r}; a token can only narrow "
                    f"its user's policies ({', '.join(dict.fromkeys(held))[:200]})",
                )
    return names
