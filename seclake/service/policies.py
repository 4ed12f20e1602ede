"""Data policies and custom roles: validation, storage, wire records.

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
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from seclake.db.database import Database
from seclake.db.models import ApiToken, CustomRole, DataPolicy, User
from seclake.detect.summaries import SUMMARY_FIELDS
from seclake.errors import Conflict, NotFound, SeclakeError, ValidationFailed
from seclake.query.limits import QueryLimits
from seclake.query.parser import parse
from seclake.record.dataset import AUDIT, BEHAVIORS, EVENTS, FLOWS, Dataset
from seclake.record.jsontype import json_kind
from seclake.service.access import POLICY_OPERATOR
from seclake.service.clock import Clock, iso
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
POLICY_FIELDS = ("name", "description", "filters")
ROLE_FIELDS = ("name", "description", "permissions", "APIPolicies", "dataPolicies")


# -- field checks (also used for users and tokens) ----------------------------


def check_name(value: object, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise ValidationFailed(where, f"must be the name of a {what} (a string), not {json_kind(value)}")
    if not NAME.fullmatch(value):
        raise ValidationFailed(
            where, "must be 1-64 characters: letters, digits and . _ -, starting with a letter or digit"
        )
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationFailed(where, f"must be an array, not {json_kind(value)}")
    if len(value) > MAX_ENTRIES:
        raise ValidationFailed(where, f"must hold at most {MAX_ENTRIES} entries")
    return value


def check_patterns(value: object, where: str) -> list[str]:
    """Call-name globs: ``ds/*``, ``auth/userList``, ``import/*``."""
    if value is None:
        return []
    out: list[str] = []
    for i, entry in enumerate(_list(value, where)):
        if not isinstance(entry, str) or not PATTERN.fullmatch(entry):
            raise ValidationFailed(
                f"{where}[{i}]",
                "must be a call name or glob of 1-200 characters (letters, digits, / _ . - * ?), like ds/* "
                f"or auth/userList, not {str(entry)[:60]!r}",
            )
        if entry not in out:
            out.append(entry)
    return out


def check_policy_names(s: Session, value: object, where: str) -> list[str]:
    """Names of existing data policies, each once."""
    if value is None:
        return []
    names: list[str] = []
    for i, entry in enumerate(_list(value, where)):
        name = check_name(entry, f"{where}[{i}]", "data policy")
        if name not in names:
            names.append(name)
    known = set(s.scalars(select(DataPolicy.name).where(DataPolicy.name.in_(names)))) if names else set()
    for i, name in enumerate(names):
        if name not in known:
            raise ValidationFailed(f"{where}[{i}]", f"no data policy named {name!r} (see auth/dataPolicyList)")
    return names


def known_roles(s: Session) -> list[str]:
    return list(ROLES) + list(s.scalars(select(CustomRole.name).order_by(CustomRole.name)))


def check_role_names(s: Session, value: object, where: str) -> list[str]:
    known = known_roles(s)
    if not isinstance(value, list) or not value:
        raise ValidationFailed(where, f"must be a non-empty array of roles ({', '.join(known)[:300]})")
    roles: list[str] = []
    for i, role in enumerate(_list(value, where)):
        if not isinstance(role, str) or role not in known:
            raise ValidationFailed(f"{where}[{i}]", f"unknown role {str(role)[:64]!r}; known roles: {', '.join(known)[:300]}")
        if role not in roles:
            roles.append(role)
    return roles


def _text(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationFailed(where, f"must be a string, not {json_kind(value)}")
    if len(value) > MAX_DESCRIPTION:
        raise ValidationFailed(where, f"must be at most {MAX_DESCRIPTION} characters long")
    if CONTROL.search(value):
        raise ValidationFailed(where, "must not contain control characters")
    return value


def check_filters(value: object, where: str, limits: QueryLimits) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ValidationFailed(where, f"must be an object of dataset -> filter, not {json_kind(value)}")
    if not value:
        raise ValidationFailed(where, f"must name at least one dataset ({', '.join(POLICY_DATASETS)})")
    out: dict[str, str] = {}
    for dataset_name, text in value.items():
        path = f"{where}.{str(dataset_name)[:40]}"
        dataset = POLICY_DATASETS.get(dataset_name)
        if dataset is None:
            raise ValidationFailed(path, f"is not a dataset; use {', '.join(POLICY_DATASETS)}")
        if not isinstance(text, str):
            raise ValidationFailed(path, f"must be a Lucene filter (a string), not {json_kind(text)}")
        if not text.strip():
            raise ValidationFailed(path, "must not be blank; write * for every record of the dataset")
        if len(text) > MAX_FILTER:
            raise ValidationFailed(path, f"must be at most {MAX_FILTER} characters long")
        try:
            parse(text, dataset, default_operator=POLICY_OPERATOR, limits=limits)
        except SeclakeError as e:
            raise ValidationFailed(path, e.message) from None
        out[dataset_name] = text
    return out


def _fields(data: object, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValidationFailed(where, f"must be an object, not {json_kind(data)}")
    for key in data:
        if key not in allowed and key not in ("builtIn", "createdOn", "updatedOn", "usedBy"):
            raise ValidationFailed(f"{where}.{str(key)[:60]}", f"unknown field; use {', '.join(allowed)}")
    return data


# -- wire records ---------------------------------------------------------------


def policy_record(p: DataPolicy) -> dict[str, Any]:
    return {
        "name": p.name, "description": p.description, "filters": dict(p.filters),
        "createdOn": iso(p.created_on), "updatedOn": iso(p.updated_on),
    }


def role_record(r: CustomRole) -> dict[str, Any]:
    return {
        "name": r.name, "description": r.description, "builtIn": False,
        "permissions": list(r.permissions), "APIPolicies": list(r.api_policies),
        "dataPolicies": list(r.data_policies), "createdOn": iso(r.created_on), "updatedOn": iso(r.updated_on),
    }


def builtin_role_record(name: str) -> dict[str, Any]:
    return {
        "name": name, "description": f"built-in role {name}", "builtIn": True,
        "permissions": [p for p in PERMISSIONS if p in ROLES[name]], "APIPolicies": [], "dataPolicies": [],
        "createdOn": None, "updatedOn": None,
    }


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

    def list_policies(self) -> list[dict[str, Any]]:
        with self.db.session() as s:
            return [policy_record(p) for p in s.scalars(select(DataPolicy).order_by(DataPolicy.name))]

    def get_policy(self, name: object) -> dict[str, Any]:
        name = check_name(name, "name", "data policy")
        with self.db.session() as s:
            return policy_record(_policy(s, name))

    def add_policy(self, data: object, where: str = "policy") -> dict[str, Any]:
        fields = _fields(data, where, POLICY_FIELDS)
        name = check_name(fields.get("name"), f"{where}.name", "data policy")
        description = _text(fields.get("description"), f"{where}.description")
        if "filters" not in fields:
            raise ValidationFailed(f"{where}.filters", "is required: dataset -> Lucene filter, like {\"event\": \"@customer:acme\"}")
        filters = check_filters(fields["filters"], f"{where}.filters", self.limits)
        now = self.clock()
        with self.db.session(write=True) as s:
            if s.scalar(select(DataPolicy.id).where(DataPolicy.name == name)) is not None:
                raise Conflict(f"a data policy named {name!r} exists already")
            policy = DataPolicy(name=name, description=description, filters=filters, created_on=now, updated_on=now)
            s.add(policy)
            s.flush()
            return policy_record(policy)

    def update_policy(self, data: object, where: str = "policy") -> tuple[dict[str, Any], dict[str, Any]]:
        """Change description and/or filters (filters are replaced whole); (before, after)."""
        fields = _fields(data, where, POLICY_FIELDS)
        name = check_name(fields.get("name"), f"{where}.name", "data policy")
        values: dict[str, Any] = {}
        if "description" in fields:
            values["description"] = _text(fields["description"], f"{where}.description")
        if "filters" in fields:
            values["filters"] = check_filters(fields["filters"], f"{where}.filters", self.limits)
        if not values:
            raise ValidationFailed(where, "nothing to change: send description or filters")
        with self.db.session(write=True) as s:
            return self._changed(_policy(s, name, for_update=True), values, policy_record)

    def delete_policy(self, name: object) -> dict[str, Any]:
        name = check_name(name, "name", "data policy")
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
            record = policy_record(policy)
            s.delete(policy)
            return record

    def _changed(
        self, row: Any, values: dict[str, Any], record: Callable[[Any], dict[str, Any]]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Apply ``values`` to a policy or role row; its record (before, after)."""
        before = record(row)
        for key, value in values.items():
            setattr(row, key, value)
        row.updated_on = self.clock()
        return before, record(row)

    # -- roles -------------------------------------------------------------------

    def list_roles(self) -> list[dict[str, Any]]:
        with self.db.session() as s:
            custom = [role_record(r) for r in s.scalars(select(CustomRole).order_by(CustomRole.name))]
        return [builtin_role_record(name) for name in ROLES] + custom

    def get_role(self, name: object) -> dict[str, Any]:
        name = check_name(name, "name", "role")
        if name in ROLES:
            return builtin_role_record(name)
        with self.db.session() as s:
            return role_record(_role(s, name))

    def add_role(self, data: object, where: str = "role") -> dict[str, Any]:
        fields = _fields(data, where, ROLE_FIELDS)
        name = check_name(fields.get("name"), f"{where}.name", "role")
        if name in ROLES:
            raise Conflict(f"{name!r} is a built-in role")
        now = self.clock()
        with self.db.session(write=True) as s:
            values = self._role_values(s, fields, where, new=True)
            if s.scalar(select(CustomRole.id).where(CustomRole.name == name)) is not None:
                raise Conflict(f"a role named {name!r} exists already")
            role = CustomRole(name=name, created_on=now, updated_on=now, **values)
            s.add(role)
            s.flush()
            return role_record(role)

    def update_role(self, data: object, where: str = "role") -> tuple[dict[str, Any], dict[str, Any]]:
        fields = _fields(data, where, ROLE_FIELDS)
        name = check_name(fields.get("name"), f"{where}.name", "role")
        if name in ROLES:
            raise Conflict(f"{name!r} is a built-in role and cannot be changed")
        with self.db.session(write=True) as s:
            values = self._role_values(s, fields, where, new=False)
            if not values:
                raise ValidationFailed(where, "nothing to change: send description, permissions, APIPolicies or dataPolicies")
            return self._changed(_role(s, name, for_update=True), values, role_record)

    def delete_role(self, name: object) -> dict[str, Any]:
        name = check_name(name, "name", "role")
        if name in ROLES:
            raise Conflict(f"{name!r} is a built-in role and cannot be deleted")
        with self.db.session(write=True) as s:
            role = _role(s, name, for_update=True)
            users = [u.username for u in s.scalars(select(User).order_by(User.username)) if name in (u.roles or [])]
            if users:
                raise Conflict(f"role {name!r} is held by users {', '.join(users)}"[:400] + "; take it away first")
            record = role_record(role)
            s.delete(role)
            return record

    def _role_values(self, s: Session, fields: Mapping[str, Any], where: str, *, new: bool) -> dict[str, Any]:
        values: dict[str, Any] = {}
        if "description" in fields or new:
            values["description"] = _text(fields.get("description"), f"{where}.description")
        if "permissions" in fields or new:
            raw = fields.get("permissions")
            if raw is None and new:
                raise ValidationFailed(f"{where}.permissions", f"is required: some of {', '.join(PERMISSIONS)}")
            perms: set[str] = {"public"}
            for i, p in enumerate(_list(raw, f"{where}.permissions")):
                if p not in PERMISSIONS:
                    raise ValidationFailed(f"{where}.permissions[{i}]", f"unknown permission {str(p)[:40]!r}; use {', '.join(PERMISSIONS)}")
                perms.add(p)
            values["permissions"] = [p for p in PERMISSIONS if p in perms]
        if "APIPolicies" in fields or new:
            values["api_policies"] = check_patterns(fields.get("APIPolicies"), f"{where}.APIPolicies")
        if "dataPolicies" in fields or new:
            values["data_policies"] = check_policy_names(s, fields.get("dataPolicies"), f"{where}.dataPolicies")
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
