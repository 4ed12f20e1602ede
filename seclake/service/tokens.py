"""API tokens: shown once at creation, optional expiry, last use, revocable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError
from sqlalchemy import select

from seclake.db.database import Database
from seclake.db.models import ApiToken, CustomRole, User
from seclake.errors import Conflict, NotFound, Unauthorized, ValidationFailed
from seclake.service.caller import Caller
from seclake.service.clock import Clock, iso
from seclake.service.secret import API_PREFIX, new_token, same_hash, token_hash
from seclake.model import Line, Number, Open, Text, typed
from seclake.service.policies import CallPatterns, PolicyNames, check_policy_names, check_role_names
from seclake.service.users import Username

MAX_NAME = 100
MAX_DESCRIPTION = 500
MAX_DAYS = 3650
# Last use is recorded with this resolution, so a busy token does not cost
# a write on every call.
LAST_USE_RESOLUTION = timedelta(seconds=60)


def _reference(value: Any) -> int | str:
    """A token's id (a number, or its digits as the clients send it) or its name."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 19:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        raise PydanticCustomError("token", "must be the id of a token (see action list) or its name")
    return value[:200] if isinstance(value, str) else value


# How a request names a token: its id, or (the clients' form) its name.
TokenReference = Annotated[int | str, BeforeValidator(_reference)]


class TokenInput(Open):
    """A new API token: ``data_policies`` and ``APIPolicies`` narrow it below
    its user's rights (seclake.service.access), ``roles`` to some of its user's."""

    username: Username | None = Field(None, description="Whose token; the caller's own when not given.")
    name: Annotated[Line, Field(max_length=MAX_NAME)] = Field("", description="The token's name, unique per user.")
    description: Annotated[Text, Field(max_length=MAX_DESCRIPTION)] = Field("", description="What the token is for.")
    expiresInDays: Annotated[Number, Field(gt=0, le=MAX_DAYS)] | None = Field(None, description="Never, when not given.")
    roles: Annotated[list[Text], Field(max_length=100)] | None = Field(
        None, description="Some of its user's roles to narrow it to; none: its user's rights as they are.")
    dataPolicies: PolicyNames | None = Field(
        None, description="Data policies narrowing what it sees, beyond its user's.")
    APIPolicies: CallPatterns | None = Field(None, description="Call patterns it may call; none: any its user may.")


@dataclass(frozen=True)
class TokenView:
    """An API token as read: the row, its user's name, and the secret only
    in the answer to ``create`` (the one time it is shown)."""

    token: ApiToken
    username: str
    secret: str | None = None

    def state(self, now: datetime) -> str:
        if self.token.revoked_on is not None:
            return "revoked"
        if self.token.expires_on is not None and self.token.expires_on <= now:
            return "expired"
        return "active"


class Tokens:
    def __init__(self, db: Database, clock: Clock):
        self.db = db
        self.clock = clock

    def create(self, username: str, new: TokenInput | Mapping[str, Any] | None = None) -> TokenView:
        """Issue a token of ``username``; the returned ``token`` is the only time it is shown.

        Data policies must be among the user's own (or the user's roles')
        when the user has any; API patterns are matched on top of the
        user's, so they cannot widen.
        """
        new = typed(TokenInput, new or {})
        now = self.clock()
        expires = None if new.expiresInDays is None else now + timedelta(days=new.expiresInDays)
        secret = new_token(API_PREFIX)
        with self.db.session(write=True) as s:
            user = s.scalar(select(User).where(User.username == username))
            if user is None:
                raise NotFound(f"no user named {username!r}")
            policies = _narrowing_policies(s, user, new.dataPolicies)
            narrowed = _narrowing_roles(s, user, new.roles)
            token = ApiToken(
                token_hash=token_hash(secret),
                prefix=secret[:10],
                name=new.name,
                user_id=user.id,
                created_on=now,
                expires_on=expires,
                data_policies=policies or None,
                api_policies=new.APIPolicies or None,
                description=new.description,
                roles=narrowed,
            )
            s.add(token)
            s.flush()
            return TokenView(token, user.username, secret)

    def list(self, username: str | None = None, revoked: bool = False) -> list[TokenView]:
        """The tokens of ``username`` (everyone's when None). A revoked token
        is a deleted one to its user (the clients' delete revokes): it is
        listed only with ``revoked``; its row stays, so that using it is told
        "revoked" and the audit's entries keep naming it."""
        query = select(ApiToken, User.username).join(User).order_by(ApiToken.id)
        if username is not None:
            query = query.where(User.username == username)
        if not revoked:
            query = query.where(ApiToken.revoked_on.is_(None))
        with self.db.session() as s:
            return [TokenView(t, name) for t, name in s.execute(query)]

    def revoke(self, token_id: int | str, where: str = "id", by_name: bool = False) -> TokenView:
        """Revoke a token by its id or, with ``by_name`` (the clients' other
        form), by its name when one active token has it."""
        if isinstance(token_id, str) and token_id.isascii() and token_id.isdigit() and len(token_id) < 19:
            token_id = int(token_id)  # the id as records show it
        if isinstance(token_id, str) and not by_name:
            raise ValidationFailed(where, "must be the id of a token (see action list)")
        now = self.clock()
        with self.db.session(write=True) as s:
            if isinstance(token_id, int):
                row = s.execute(select(ApiToken, User.username).join(User).where(ApiToken.id == token_id)).first()
            else:
                rows = s.execute(
                    select(ApiToken, User.username).join(User)
                    .where(ApiToken.name == token_id, ApiToken.revoked_on.is_(None)).limit(2)
                ).all()
                if len(rows) > 1:
                    raise Conflict(f"{where}: several active API tokens are named {token_id[:100]!r}; revoke one by its id")
                row = rows[0] if rows else None
            if row is None:
                raise NotFound(f"no API token with id {token_id}" if isinstance(token_id, int)
                               else f"no active API token named {token_id[:100]!r}")
            token, name = row
            if token.revoked_on is None:
                token.revoked_on = now
            return TokenView(token, name)

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
            # A token with roles acts with those (an admin's), or with those
            # of them its user still holds.
            if token.roles is None:
                roles = user.roles
            elif "admin" in user.roles:
                roles = token.roles
            else:
                roles = [r for r in token.roles if r in user.roles]
            return Caller(
                username=user.username,
                roles=tuple(roles),
                token_kind="api",
                token_id=token.id,
                data_policies=user.data_policies,
                api_policies=user.api_policies,
                token_data_policies=token.data_policies,
                token_api_policies=token.api_policies,
                fresh_until=min(t for t in (token.last_used + LAST_USE_RESOLUTION, token.expires_on) if t is not None),
            )




def _narrowing_roles(s, user: User, value: list[str] | None) -> list[str] | None:
    """The roles a new token of ``user`` acts with: some of the user's own,
    or any role for an admin (who could give a user any role anyway)."""
    if value is None:
        return None
    roles = check_role_names(s, value, "roles")
    if "admin" in user.roles:
        return roles
    for i, role in enumerate(roles):
        if role not in user.roles:
            raise ValidationFailed(
                f"roles[{i}]",
                f"{user.username!r} does not have the role {role[:100]!r}; a token can only narrow its user's roles "
                f"({', '.join(user.roles)[:200]})",
            )
    return roles


def _narrowing_policies(s, user: User, value: list[str] | None) -> list[str] | None:
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
