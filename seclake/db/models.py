"""Models of the service foundation: users, sessions, API tokens, login
failures, the audit log, access policies and roles, and the behavior rules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from seclake.db.base import Base, UTCDateTime

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(128), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    email: Mapped[str] = mapped_column(String(254), default="")
    first_name: Mapped[str] = mapped_column(String(100), default="")
    last_name: Mapped[str] = mapped_column(String(100), default="")
    organization: Mapped[str] = mapped_column(String(200), default="")
    restricted: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    roles: Mapped[list[str]] = mapped_column(JSON)
    # Names of data policies and call-name globs (seclake.service.access).
    data_policies: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    api_policies: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    preference: Mapped[dict[str, Any]] = mapped_column(JSON)
    profile: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_on: Mapped[datetime] = mapped_column(UTCDateTime)
    password_date: Mapped[datetime] = mapped_column(UTCDateTime)
    last_login: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Sign-in through an identity provider ("Azure AD", "Google"), as the
    # clients' user model says; such a user may have no password ("").
    oauth_provider: Mapped[str] = mapped_column(String(100), default="")
    oauth_flag: Mapped[bool] = mapped_column(Boolean, default=False)


class UserSession(Base):
    """A login session; only the SHA-256 of its token is kept."""

    __tablename__ = "sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Shown to the client as ``publicKey``: names the session, grants nothing.
    public_id: Mapped[str] = mapped_column(String(32), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_on: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)


class ApiToken(Base):
    """A long-lived API token; only the SHA-256 of the token is kept."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The first characters of the token, so a user can tell tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(100), default="")
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_on: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_on: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_used: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_on: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # A token may narrow its user's rights (never widen them): data policy
    # names and call-name globs; None means the user's rights as they are.
    data_policies: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    api_policies: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    description: Mapped[str] = mapped_column(String(500), default="")
    # Roles the token acts with, a subset of its user's; None: the user's own.
    roles: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)


class LoginFailure(Base):
    """Failed logins of one username (known or not) from one client address;
    username "" counts the address's failures over every username."""

    __tablename__ = "login_failures"

    __table_args__ = (Index("ix_login_failures_first_failure", "first_failure"),)

    username: Mapped[str] = mapped_column(String(128), primary_key=True)
    client: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer)
    first_failure: Mapped[datetime] = mapped_column(UTCDateTime)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class AuditEntry(Base):
    """One login attempt (kind ``login``) or one API call (kind ``call``)."""

    __tablename__ = "audit"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    created_on: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    kind: Mapped[str] = mapped_column(String(16))
    username: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    call: Mapped[str] = mapped_column(String(200))
    client: Mapped[str] = mapped_column(String(64), default="")
    outcome: Mapped[str] = mapped_column(String(16))
    status: Mapped[int] = mapped_column(Integer)
    duration_ms: Mapped[int] = mapped_column(Integer, default=0)
    detail: Mapped[str | None] = mapped_column(String(500), nullable=True)


class DataPolicy(Base):
    """A named data policy: per dataset, a Lucene filter of the records it lets a caller see.

    ``filters`` maps a dataset name (event, flow, behavior, summary, audit)
    to the filter's text, kept as the admin wrote it and parsed on each call.
    """

    __tablename__ = "data_policies"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(String(500), default="")
    filters: Mapped[dict[str, str]] = mapped_column(JSON)
    created_on: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_on: Mapped[datetime] = mapped_column(UTCDateTime)


class CustomRole(Base):
    """A role an admin defined: permissions, API policies (call-name globs) and data policies (names)."""

    __tablename__ = "roles"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(String(500), default="")
    permissions: Mapped[list[str]] = mapped_column(JSON)
    api_policies: Mapped[list[str]] = mapped_column(JSON)
    data_policies: Mapped[list[str]] = mapped_column(JSON)
    created_on: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_on: Mapped[datetime] = mapped_column(UTCDateTime)


class AccessGeneration(Base):
    """One row counting every change that can alter who may do what.

    Every committed change to users, sessions, API tokens, roles or data
    policies adds one (seclake.db.generation), in the same transaction.
    API nodes cache resolved callers keyed by this number, so a change made
    on any node reaches the next call on every node.
    """

    __tablename__ = "access_generation"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger)


class StoredRule(Base):
    """One behavior rule, as ``Rule.to_dict()`` gives it (seclake.detect.rulebook)."""

    __tablename__ = "rules"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_on: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_on: Mapped[datetime] = mapped_column(UTCDateTime)


class RuleGeneration(Base):
    """One row counting the changes to ``rules``, bumped in the same transaction as each.

    Every node compares it with the number its rules were read at before it
    uses them, so a change made on any node applies everywhere at the next
    read. ``seeded_on`` is set once the first start imported the legacy rule
    files or the starter pack; never again after that, so deleted starter
    rules stay deleted.
    """

    __tablename__ = "rule_generation"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger)
    seeded_on: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class DeploymentKey(Base):
    """A secret made once per deployment by a migration (0013): ``record_ids``
    keys the permutation that shows record ids (``record/identity.py``)."""

    __tablename__ = "deployment_keys"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[bytes] = mapped_column(LargeBinary)
