"""Data policies and custom roles: typed input, storage, snapshots as read.

Every field is checked as hostile input: names are short identifiers,
descriptions bounded, filters parsed at save time against the dataset they
name (a bad filter is refused with its position), permissions and patterns
drawn from known sets. A policy or role still in use cannot be deleted: a
user restricted by a deleted policy would otherwise fall back to seeing
everything, or (as ``seclake.service.access`` fails closed) to nothing.

What the rights mean is ``seclake.service.access``'s business.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, Field, Strict
from pydantic_core import PydanticCustomError
from sqlalchemy import select
from sqlalchemy.orm import Session

from seclake.db.database import Database
from seclake.db.models import ApiToken, CustomRole, DataPolicy, User
from seclake.detect.summaries import SUMMARY_FIELDS
from seclake.errors import Conflict, NotFound, SeclakeError, ValidationFailed
from seclake.model import Closed, Line, Text, typed
from seclake.query.limits import QueryLimits
from seclake.query.parser import parse
from seclake.record.dataset import AUDIT, BEHAVIORS, EVENTS, FLOWS, Dataset
from seclake.service.access import POLICY_OPERATOR
from seclake.service.clock import Clock
from seclake.service.roles import PERMISSIONS, ROLES
from seclake.settings import Settings

# The datasets a data policy may name, with the field names each resolves.
POLICY_DATASETS: dict[str, Dataset] = {
    "event": EVENTS, "flow": FLOWS, "behavior": BEHAVIORS, "summary": SUMMARY_FIELDS, "audit": AUDIT,
}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Call names and raw routes are letters, digits and ``/_.-``; globs add ``*`` and ``?``.
PATTERN = re.compile(r"[A-Za-z0-9_./*?-]{1,200}")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_DESCRIPTION = 500
MAX_FILTER = 4000
MAX_ENTRIES = 100
T = TypeVar("T")
POLICY_FIELDS = ("name", "description", "filters")
ROLE_FIELDS = ("name", "description", "permissions", "APIPolicies", "dataPolicies")


# -- typed input (also used for users and tokens) ----------------------------


def _name(value: str) -> str:
    if not NAME.fullmatch(value):
        raise PydanticCustomError(
            "name", "must be 1-64 characters: letters, digits and . _ -, starting with a letter or digit")
    return value


def _pattern(value: str) -> str:
    if not PATTERN.fullmatch(value):
        raise PydanticCustomError(
            "pattern", "must be a call name or glob of 1-200 characters (letters, digits, / _ . - * ?), like ds/* "
            "or auth/userList, not {value}", {"value": repr(value[:60])})
    return value


def _once(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


# The name of a data policy or a role.
Name = Annotated[str, Strict(), AfterValidator(_name)]
# Call-name globs: ``ds/*``, ``auth/userList``, ``import/*``; each once.
CallPatterns = Annotated[list[Annotated[str, Strict(), AfterValidator(_pattern)]],
                         Field(max_length=MAX_ENTRIES), AfterValidator(_once)]
# Names of data policies (that they exist is checked where they are stored).
PolicyNames = Annotated[list[Name], Field(max_length=MAX_ENTRIES), AfterValidator(_once)]
Description = Annotated[Line, Field(max_length=MAX_DESCRIPTION)]
# What clients send back of a record they were given; accepted and ignored.
ReadOnly = Field(None, exclude=True, description="Read only: as the server answers it; accepted and ignored.")


class PolicyInput(Closed):
    """A data policy as auth/dataPolicyAdd and auth/dataPolicyUpdate take it:
    ``filters`` maps a dataset to a Lucene filter (replaced whole on update)."""

    name: Name = Field(description="The policy's name.")
    description: Description | None = Field(None, description="What it is for.")
    filters: dict[str, Text] | None = Field(
        None, description='Dataset -> Lucene filter, like {"event": "@customer:acme"}.')
    builtIn: Any = ReadOnly
    createdOn: Any = ReadOnly
    updatedOn: Any = ReadOnly
    usedBy: Any = ReadOnly


class RoleInput(Closed):
    """A custom role as auth/roleAdd and auth/roleUpdate take it."""

    name: Name = Field(description="The role's name.")
    description: Description | None = Field(None, description="What it is for.")
    permissions: Annotated[list[Literal[PERMISSIONS]], Field(max_length=MAX_ENTRIES)] | None = Field(  # type: ignore[valid-type]
        None, description="What its holders may do: search, triage, ingest, admin...")
    APIPolicies: CallPatterns | None = Field(
        None, description="Call patterns its holders may call; none: any their permissions allow.")
    dataPolicies: PolicyNames | None = Field(
        None, description="Data policies narrowing what its holders see; none: all data.")
    builtIn: Any = ReadOnly
    createdOn: Any = ReadOnly
    updatedOn: Any = ReadOnly
    usedBy: Any = ReadOnly


def check_policy_names(s: Session, names: list[str] | None, where: str) -> list[str]:
    """The names, each of an existing data policy (checked in the transaction that stores them)."""
    if not names:
        return []
    known = set(s.scalars(select(DataPolicy.name).where(DataPolicy.name.in_(names))))
    for i, name in enumerate(names):
        if name not in known:
            raise ValidationFailed(f"{where}[{i}]", f"no data policy named {name!r} (see auth/dataPolicyList)")
    return names


def known_roles(s: Session) -> list[str]:
    return list(ROLES) + list(s.scalars(select(CustomRole.name).order_by(CustomRole.name)))


def check_role_names(s: Session, roles: list[str], where: str) -> list[str]:
    """The roles, each once, each built in or a custom role that exists."""
    known = known_roles(s)
    if not roles:
        raise ValidationFailed(where, f"must be a non-empty array of roles ({', '.join(known)[:300]})")
    for i, role in enumerate(roles):
        if role not in known:
            raise ValidationFailed(f"{where}[{i}]", f"unknown role {role[:64]!r}; known roles: {', '.join(known)[:300]}")
    return _once(roles)


def check_filters(value: dict[str, str], where: str, limits: QueryLimits) -> dict[str, str]:
    """Each filter parsed against the dataset it names (a bad one is refused with its position)."""
    if not value:
        raise ValidationFailed(where, f"must name at least one dataset ({', '.join(POLICY_DATASETS)})")
    for dataset_name, text in value.items():
        path = f"{where}.{dataset_name[:40]}"
        dataset = POLICY_DATASETS.get(dataset_name)
        if dataset is None:
            raise ValidationFailed(path, f"is not a dataset; use {', '.join(POLICY_DATASETS)}")
        if not text.strip():
            raise ValidationFailed(path, "must not be blank; write * for every record of the dataset")
        if len(text) > MAX_FILTER:
            raise ValidationFailed(path, f"must be at most {MAX_FILTER} characters long")
        try:
            parse(text, dataset, default_operator=POLICY_OPERATOR, limits=limits)
        except SeclakeError as e:
            raise ValidationFailed(path, e.message) from None
    return dict(value)


# -- policies and roles as read ---------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """A data policy as read (a snapshot: it stays what it was when the row changes)."""

    name: str
    description: str
    filters: dict[str, str]
    created_on: datetime | None
    updated_on: datetime | None

    @staticmethod
    def of(row: DataPolicy) -> Policy:
        return Policy(row.name, row.description, dict(row.filters), row.created_on, row.updated_on)


@dataclass(frozen=True)
class Role:
    """A role as read: built in (``ROLES``) or an admin's (a snapshot of its row)."""

    name: str
    description: str
    built_in: bool
    permissions: tuple[str, ...]
    api_policies: tuple[str, ...] = ()
    data_policies: tuple[str, ...] = ()
    created_on: datetime | None = None
    updated_on: datetime | None = None

    @staticmethod
    def of(row: CustomRole) -> Role:
        return Role(row.name, row.description, False, tuple(row.permissions), tuple(row.api_policies),
                    tuple(row.data_policies), row.created_on, row.updated_on)

    @staticmethod
    def builtin(name: str) -> Role:
        return Role(name, f"built-in role {name}", True, tuple(p for p in PERMISSIONS if p in ROLES[name]))


def changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, fields: tuple[str, ...]) -> str:
    """What changed, for the audit: ``description: 'a' -> 'b'; filters.event: ...``."""
    if before is None:
        return "; ".join(f"{k}={_show(after[k])}" for k in fields if after and after.get(k) not in (None, "", [], {}))
    if after is None:
        return "deleted"
    out = []
    for key in fields:
        old, new = before.get(key), after.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            for sub in sorted(set(old) | set(new)):
                if old.get(sub) != new.get(sub):
                    out.append(f"{key}.{sub}: {_show(old.get(sub))} -> {_show(new.get(sub))}")
        elif old != new:
            out.append(f"{key}: {_show(old)} -> {_show(new)}")
    return "; ".join(out) or "no change"


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return repr(value)


# -- the store --------------------------------------------------------------------


class Policies:
    def __init__(self, db: Database, settings: Settings, clock: Clock):
        self.db = db
        self.settings = settings
        self.clock = clock

    @property
    def limits(self) -> QueryLimits:
        return QueryLimits.from_settings(self.settings)

    # -- data policies ---------------------------------------------------------

    def list_policies(self) -> list[Policy]:
        with self.db.session() as s:
            return [Policy.of(p) for p in s.scalars(select(DataPolicy).order_by(DataPolicy.name))]

    def get_policy(self, name: str) -> Policy:
        with self.db.session() as s:
            return Policy.of(_policy(s, name))

    def add_policy(self, policy: PolicyInput | Mapping[str, Any], where: str = "policy") -> Policy:
        policy = typed(PolicyInput, policy, where)
        if policy.filters is None:
            raise ValidationFailed(f"{where}.filters", "is required: dataset -> Lucene filter, like {\"event\": \"@customer:acme\"}")
        filters = check_filters(policy.filters, f"{where}.filters", self.limits)
        now = self.clock()
        with self.db.session(write=True) as s:
            if s.scalar(select(DataPolicy.id).where(DataPolicy.name == policy.name)) is not None:
                raise Conflict(f"a data policy named {policy.name!r} exists already")
            row = DataPolicy(name=policy.name, description=policy.description or "", filters=filters,
                             created_on=now, updated_on=now)
            s.add(row)
            s.flush()
            return Policy.of(row)

    def update_policy(self, policy: PolicyInput | Mapping[str, Any], where: str = "policy") -> tuple[Policy, Policy]:
        """Change description and/or filters (filters are replaced whole); (before, after)."""
        policy = typed(PolicyInput, policy, where)
        values: dict[str, Any] = {}
        if "description" in policy.model_fields_set:
            values["description"] = policy.description or ""
        if policy.filters is not None:
            values["filters"] = check_filters(policy.filters, f"{where}.filters", self.limits)
        if not values:
            raise ValidationFailed(where, "nothing to change: send description or filters")
        with self.db.session(write=True) as s:
            return self._changed(_policy(s, policy.name, for_update=True), values, Policy.of)

    def delete_policy(self, name: str) -> Policy:
        with self.db.session(write=True) as s:
            policy = _policy(s, name, for_update=True)
            users = [u.username for u in s.scalars(select(User).order_by(User.username)) if name in (u.data_policies or [])]
            roles = [r.name for r in s.scalars(select(CustomRole).order_by(CustomRole.name)) if name in (r.data_policies or [])]
            tokens = [
                str(t.id) for t in s.scalars(select(ApiToken).where(ApiToken.revoked_on.is_(None)))
                if name in (t.data_policies or [])
            ]
            holders = [f"users {', '.join(users)}"] if users else []
            holders += [f"roles {', '.join(roles)}"] if roles else []
            holders += [f"API tokens {', '.join(tokens)}"] if tokens else []
            if holders:
                raise Conflict(f"data policy {name!r} is in use by {'; '.join(holders)}"[:400] + "; detach it first")
            deleted = Policy.of(policy)
            s.delete(policy)
            return deleted

    def _changed(self, row: Any, values: dict[str, Any], snapshot: Callable[[Any], T]) -> tuple[T, T]:
        """Apply ``values`` to a policy or role row; what it was and what it is."""
        before = snapshot(row)
        for key, value in values.items():
            setattr(row, key, value)
        row.updated_on = self.clock()
        return before, snapshot(row)

    # -- roles -------------------------------------------------------------------

    def list_roles(self) -> list[Role]:
        with self.db.session() as s:
            custom = [Role.of(r) for r in s.scalars(select(CustomRole).order_by(CustomRole.name))]
        return [Role.builtin(name) for name in ROLES] + custom

    def get_role(self, name: str) -> Role:
        if name in ROLES:
            return Role.builtin(name)
        with self.db.session() as s:
            return Role.of(_role(s, name))

    def add_role(self, role: RoleInput | Mapping[str, Any], where: str = "role") -> Role:
        role = typed(RoleInput, role, where)
        if role.name in ROLES:
            raise Conflict(f"{role.name!r} is a built-in role")
        now = self.clock()
        with self.db.session(write=True) as s:
            values = self._role_values(s, role, where, new=True)
            if s.scalar(select(CustomRole.id).where(CustomRole.name == role.name)) is not None:
                raise Conflict(f"a role named {role.name!r} exists already")
            row = CustomRole(name=role.name, created_on=now, updated_on=now, **values)
            s.add(row)
            s.flush()
            return Role.of(row)

    def update_role(self, role: RoleInput | Mapping[str, Any], where: str = "role") -> tuple[Role, Role]:
        role = typed(RoleInput, role, where)
        if role.name in ROLES:
            raise Conflict(f"{role.name!r} is a built-in role and cannot be changed")
        with self.db.session(write=True) as s:
            values = self._role_values(s, role, where, new=False)
            if not values:
                raise ValidationFailed(where, "nothing to change: send description, permissions, APIPolicies or dataPolicies")
            return self._changed(_role(s, role.name, for_update=True), values, Role.of)

    def delete_role(self, name: str) -> Role:
        if name in ROLES:
            raise Conflict(f"{name!r} is a built-in role and cannot be deleted")
        with self.db.session(write=True) as s:
            row = _role(s, name, for_update=True)
            users = [u.username for u in s.scalars(select(User).order_by(User.username)) if name in (u.roles or [])]
            if users:
                raise Conflict(f"role {name!r} is held by users {', '.join(users)}"[:400] + "; take it away first")
            deleted = Role.of(row)
            s.delete(row)
            return deleted

    def _role_values(self, s: Session, role: RoleInput, where: str, *, new: bool) -> dict[str, Any]:
        """The columns to write: every field sent (all of them for a new role)."""
        sent = role.model_fields_set
        values: dict[str, Any] = {}
        if "description" in sent or new:
            values["description"] = role.description or ""
        if "permissions" in sent or new:
            if role.permissions is None:
                raise ValidationFailed(f"{where}.permissions", f"is required: some of {', '.join(PERMISSIONS)}")
            values["permissions"] = [p for p in PERMISSIONS if p in {"public", *role.permissions}]
        if "APIPolicies" in sent or new:
            values["api_policies"] = role.APIPolicies or []
        if "dataPolicies" in sent or new:
            values["data_policies"] = check_policy_names(s, role.dataPolicies, f"{where}.dataPolicies")
        return values


def _policy(s: Session, name: str, for_update: bool = False) -> DataPolicy:
    query = select(DataPolicy).where(DataPolicy.name == name)
    policy = s.scalar(query.with_for_update() if for_update else query)
    if policy is None:
        raise NotFound(f"no data policy named {name!r}")
    return policy


def _role(s: Session, name: str, for_update: bool = False) -> CustomRole:
    query = select(CustomRole).where(CustomRole.name == name)
    role = s.scalar(query.with_for_update() if for_update else query)
    if role is None:
        raise NotFound(f"no role named {name!r}")
    return role
