"""User accounts: validation, storage, the wire record (spec 2.3), and the
rule that the service always keeps at least one enabled admin."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from zoneinfo import available_timezones

import orjson
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from seclake.db.database import Database
from seclake.db.models import LoginFailure, User, UserSession
from seclake.errors import Conflict, NotFound, ValidationFailed
from seclake.service.clock import Clock, iso
from seclake.service.password import PasswordHasher, check_password, generate_password
from seclake.service.policies import check_patterns, check_policy_names, check_role_names
from seclake.service.roles import ROLES, rights_of
from seclake.settings import Settings
from seclake.record.jsontype import json_kind as _kind

USERNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_TEXT = {"email": 254, "firstName": 100, "lastName": 100, "organization": 200, "oauthProvider": 100}
MAX_POLICIES = 100
MAX_JSON_BYTES = 16 * 1024
DEFAULT_PREFERENCE = {"timezone": {"value": "UTC", "policy": "Server"}}
# Fields of a user record that are computed; a client that sends back a record
# it received may carry them, and they are ignored rather than refused.
READ_ONLY = {"rights", "lastLogin", "passwordDate", "fullName", "name", "timezone", "createdOn", "passwordSet"}
EDITABLE = {
    "password", "email", "firstName", "lastName", "organization", "roles", "restricted",
    "disabled", "dataPolicies", "APIPolicies", "preference", "profile", "oauthProvider", "oauthFlag",
}
# A user added without a password (the clients' user model has none: such
# users sign in through an identity provider) keeps this hash, which no
# password verifies, until one is set.
NO_PASSWORD = ""


def user_record(user: User) -> dict[str, Any]:
    """The user record of spec 2.3."""
    return {
        "username": user.username,
        "email": user.email,
        "firstName": user.first_name,
        "lastName": user.last_name,
        "organization": user.organization,
        "rights": rights_of(user.roles),
        "restricted": user.restricted,
        "disabled": user.disabled,
        "lastLogin": iso(user.last_login),
        "passwordDate": iso(user.password_date),
        "preference": user.preference,
        "roles": list(user.roles),
        "dataPolicies": user.data_policies,
        "APIPolicies": user.api_policies,
        "profile": user.profile,
        "oauthProvider": user.oauth_provider or "",
        "oauthFlag": bool(user.oauth_flag),
        # False: added without a password; signing in with one is refused until it is set.
        "passwordSet": user.password_hash != NO_PASSWORD,
    }


def full_name(user: User) -> str:
    return " ".join(part for part in (user.first_name, user.last_name) if part) or user.username


def timezone_of(user: User) -> str:
    return str(user.preference.get("timezone", {}).get("value", "UTC"))


class Users:
    def __init__(self, db: Database, hasher: PasswordHasher, settings: Settings, clock: Clock):
        self.db = db
        self.hasher = hasher
        self.settings = settings
        self.clock = clock

    # -- reading -------------------------------------------------------------

    def list(self) -> list[dict[str, Any]]:
        with self.db.session() as s:
            return [user_record(u) for u in s.scalars(select(User).order_by(User.username))]

    def get(self, username: object, where: str = "username") -> dict[str, Any]:
        name = check_username(username, where)
        with self.db.session() as s:
            return user_record(_find(s, name))

    def count(self) -> int:
        with self.db.session() as s:
            return s.scalar(select(func.count()).select_from(User)) or 0

    # -- changing ------------------------------------------------------------

    def add(self, data: object, where: str = "user") -> dict[str, Any]:
        """Create a user from a user object (wire field names)."""
        fields = _check_object(data, where)
        unknown = set(fields) - EDITABLE - READ_ONLY - {"username"}
        if unknown:
            raise ValidationFailed(f"{where}.{sorted(unknown)[0]}", "unknown field")
        username = check_username(fields.get("username"), f"{where}.username")
        if fields.get("roles", 0) is None:  # the clients send null for "none given"
            fields = {k: v for k, v in fields.items() if k != "roles"}
        values = self._check_changes(fields, where, username)
        values.setdefault("roles", ["analyst"])
        now = self.clock()
        user = User(
            username=username,
            email="",
            first_name="",
            last_name="",
            organization="",
            restricted=False,
            disabled=False,
            preference=DEFAULT_PREFERENCE,
            profile=None,
            data_policies=None,
            api_policies=None,
            created_on=now,
            password_date=now,
            last_login=None,
            password_hash=NO_PASSWORD,
            oauth_provider="",
            oauth_flag=False,
        )
        with self.db.session(write=True) as s:
            _check_names(s, values, where)
            _apply(user, values, self.hasher, now)
            if s.scalar(select(User.id).where(User.username == username)) is not None:
                raise Conflict(f"{where}.username: user {username!r} already exists")
            s.add(user)
        return user_record(user)

    def update(self, username: object, changes: object, where: str = "user") -> dict[str, Any]:
        """Change some fields of a user; refuses to leave no enabled admin."""
        name = check_username(username, f"{where}.username")
        fields = _check_object(changes, where)
        unknown = set(fields) - EDITABLE - READ_ONLY - {"username"}
        if unknown:
            raise ValidationFailed(f"{where}.{sorted(unknown)[0]}", "unknown field")
        values = self._check_changes(fields, where, name)
        with self.db.session(write=True) as s:
            user = _find(s, name)
            _check_names(s, values, where)
            ends_sessions = (
                "password" in values
                or (values.get("disabled") is True and not user.disabled)
                or ("roles" in values and list(values["roles"]) != list(user.roles))
            )
            _apply(user, values, self.hasher, self.clock())
            s.flush()
            _keep_an_admin(s, f"cannot change {name!r}")
            if ends_sessions:
                # A new password, a disabled account or other roles: every
                # session opened before is over (API tokens follow the user's
                # state and roles at each call by themselves).
                s.execute(delete(UserSession).where(UserSession.user_id == user.id))
            if "password" in values:
                # A reset ends any lockout of the account.
                s.execute(delete(LoginFailure).where(LoginFailure.username == name))
            return user_record(user)

    def set_password(self, username: object, password: object) -> dict[str, Any]:
        return self.update(username, {"password": password})

    def set_disabled(self, username: object, disabled: bool) -> dict[str, Any]:
        return self.update(username, {"disabled": disabled})

    def delete(self, username: object, where: str = "username") -> None:
        name = check_username(username, where)
        with self.db.session(write=True) as s:
            user = _find(s, name)
            s.delete(user)
            s.flush()
            _keep_an_admin(s, f"cannot delete {name!r}")

    def ensure_admin(self, password: str | None) -> str | None:
        """On an empty database create ``admin``; return its password if generated."""
        if self.count():
            return None
        generated = None if password else generate_password()
        self.add(
            {
                "username": "admin",
                "password": password or generated,
                "roles": ["admin"],
                "firstName": "Administrator",
            },
            where="admin",
        )
        return generated

    # -- validation ----------------------------------------------------------

    def _check_changes(self, fields: Mapping[str, Any], where: str, username: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in fields.items():
            path = f"{where}.{key}"
            if key in READ_ONLY or key == "username":
                continue
            if key == "password":
                context = (username, str(fields.get("email") or ""), str(fields.get("firstName") or ""), "seclake")
                out[key] = check_password(
                    value, self.settings.password_min_length, path,
                    min_strength=self.settings.password_min_strength, context=context,
                )
            elif key in MAX_TEXT:
                out[key] = _check_text(value, MAX_TEXT[key], path)
                # The clients' AddUser copies the user name into email.
                if key == "email" and out[key] and not EMAIL.fullmatch(out[key]) and out[key] != fields.get("username"):
                    raise ValidationFailed(path, "must be an e-mail address like name@example.com")
            elif key == "roles":
                # Names are checked against the roles table in the write
                # transaction (_check_names); the shape is checked here.
                if not isinstance(value, list) or not value:
                    raise ValidationFailed(path, f"must be a non-empty array of roles ({', '.join(ROLES)}, or a custom role)")
                out[key] = value
            elif key in ("restricted", "disabled", "oauthFlag"):
                if not isinstance(value, bool):
                    raise ValidationFailed(path, "must be true or false")
                out[key] = value
            elif key == "APIPolicies":
                out[key] = None if value is None else check_patterns(value, path)
            elif key == "dataPolicies":
                out[key] = _check_policies(value, path)  # names: _check_names
            elif key == "preference":
                out[key] = _check_preference(value, path)
            elif key == "profile":
                if value is not None:
                    _check_object(value, path)
                    _check_size(value, path)
                out[key] = value
        return out


def check_username(value: object, where: str = "username") -> str:
    if not isinstance(value, str):
        raise ValidationFailed(where, "must be a string")
    if not USERNAME.fullmatch(value):
        raise ValidationFailed(
            where,
            "must be 1-128 characters: letters, digits and . _ @ + -, starting with a letter or digit",
        )
    return value


def _find(s: Session, username: str) -> User:
    user = s.scalar(select(User).where(User.username == username))
    if user is None:
        raise NotFound(f"no user named {username!r}")
    return user


def _keep_an_admin(s: Session, what: str) -> None:
    enabled = s.scalars(select(User).where(User.disabled.is_(False)).with_for_update())
    if not any("admin" in u.roles for u in enabled):
        raise Conflict(f"{what}: it would leave no enabled user with the admin role")


def _apply(user: User, values: Mapping[str, Any], hasher: PasswordHasher, now) -> None:
    columns = {
        "email": "email", "firstName": "first_name", "lastName": "last_name",
        "organization": "organization", "roles": "roles", "restricted": "restricted",
        "disabled": "disabled", "dataPolicies": "data_policies", "APIPolicies": "api_policies",
        "preference": "preference", "profile": "profile",
        "oauthProvider": "oauth_provider", "oauthFlag": "oauth_flag",
    }
    for key, value in values.items():
        if key == "password":
            user.password_hash = hasher.hash(value)
            user.password_date = now
        else:
            setattr(user, columns[key], value)


def _check_object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValidationFailed(where, f"must be an object, not {_kind(value)}")
    return value


def _check_text(value: object, max_length: int, where: str) -> str:
    if not isinstance(value, str):
        raise ValidationFailed(where, f"must be a string, not {_kind(value)}")
    if len(value) > max_length:
        raise ValidationFailed(where, f"must be at most {max_length} characters long")
    if CONTROL.search(value):
        raise ValidationFailed(where, "must not contain control characters")
    return value


def _check_names(s: Session, values: dict[str, Any], where: str) -> None:
    """Roles and data policies must name roles and policies that exist, checked
    in the transaction that stores them (a policy deleted meanwhile is refused)."""
    if "roles" in values:
        values["roles"] = check_role_names(s, values["roles"], f"{where}.roles")
    if values.get("dataPolicies") is not None:
        values["dataPolicies"] = check_policy_names(s, values["dataPolicies"], f"{where}.dataPolicies")


def _check_policies(value: object, where: str) -> list[Any] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValidationFailed(where, f"must be null or an array, not {_kind(value)}")
    if len(value) > MAX_POLICIES:
        raise ValidationFailed(where, f"must hold at most {MAX_POLICIES} entries")
    _check_size(value, where)
    return value


def _check_preference(value: object, where: str) -> dict[str, Any]:
    pref = _check_object(value, where)
    _check_size(pref, where)
    tz = pref.get("timezone", DEFAULT_PREFERENCE["timezone"])
    _check_object(tz, f"{where}.timezone")
    zone = tz.get("value", "UTC")
    if not isinstance(zone, str) or zone not in _zones():
        raise ValidationFailed(f"{where}.timezone.value", f"unknown time zone {zone!r}")
    policy = tz.get("policy", "Server")
    if not isinstance(policy, str) or not 0 < len(policy) <= 32:
        raise ValidationFailed(f"{where}.timezone.policy", "must be a string such as Server or GMT")
    return {**pref, "timezone": {**tz, "value": zone, "policy": policy}}


def _check_size(value: object, where: str) -> None:
    try:
        size = len(orjson.dumps(value))
    except TypeError as e:  # pragma: no cover - wire input is always JSON
        raise ValidationFailed(where, f"not JSON: {e}") from e
    if size > MAX_JSON_BYTES:
        raise ValidationFailed(where, f"must be at most {MAX_JSON_BYTES} bytes as JSON")


_ZONES: set[str] = set()


def _zones() -> set[str]:
    if not _ZONES:
        _ZONES.update(available_timezones(), {"UTC", "GMT"})
    return _ZONES



