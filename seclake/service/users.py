"""User accounts: the typed input, storage, and the rule that the service
always keeps at least one enabled admin. The wire record (spec 2.3) is the
API's (``api/reply.user_record``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import available_timezones

import orjson
from pydantic import AfterValidator, BeforeValidator, Field, Strict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from seclake.db.database import Database
from seclake.db.models import LoginFailure, User, UserSession
from seclake.errors import Conflict, NotFound
from seclake.service.clock import Clock
from seclake.service.password import PasswordHasher, check_password, generate_password
from seclake.model import Closed, Flag, Line, Open, Text, typed
from seclake.service.policies import CallPatterns, PolicyNames, ReadOnly, check_policy_names, check_role_names
from seclake.settings import Settings

USERNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
MAX_JSON_BYTES = 16 * 1024
FIRST_PASSWORD_FILE = "admin-password"
DEFAULT_PREFERENCE = {"timezone": {"value": "UTC", "policy": "Server"}}
# A user added without a password (the clients' user model has none: such
# users sign in through an identity provider) keeps this hash, which no
# password verifies, until one is set.
NO_PASSWORD = ""


def _username(value: str) -> str:
    if not USERNAME.fullmatch(value):
        raise PydanticCustomError(
            "username", "must be 1-128 characters: letters, digits and . _ @ + -, starting with a letter or digit")
    return value


def _small(value: Any) -> Any:
    """Free-form JSON a user carries (preference, profile) stays small."""
    if len(orjson.dumps(value)) > MAX_JSON_BYTES:
        raise PydanticCustomError("size", "must be at most {limit} bytes as JSON", {"limit": MAX_JSON_BYTES})
    return value


def _zone(value: str) -> str:
    if value not in _zones():
        raise PydanticCustomError("zone", "unknown time zone {zone}", {"zone": repr(value[:60])})
    return value


Username = Annotated[str, Strict(), AfterValidator(_username)]


class TimezonePreference(Open):
    value: Annotated[str, Strict(), AfterValidator(_zone)] = Field(
        "UTC", description="A time-zone name (IANA, like Europe/Paris).")
    policy: Annotated[Line, Field(min_length=1, max_length=32, description="Server, GMT...")] = "Server"


class Preference(Open):
    timezone: TimezonePreference = Field(
        default_factory=TimezonePreference, description="The time zone times are shown in.")


class UserInput(Closed):
    """A user as auth/userAdd and auth/userUpdate take it (spec 2.3, the
    clients' model: ``oauthProvider``, ``oauthFlag``, no password needed).

    On update only the fields sent change (``model_fields_set``); the
    computed fields of a record sent back (``rights``, ``lastLogin``...) are
    accepted and ignored. That roles and policies exist is checked in the
    transaction that stores them; the password's length and strength by the
    server's settings (``check_password``).
    """

    username: Username = Field(description="The name the user signs in with.")
    password: Text = Field("", description="Without one, the user cannot sign in with a password.")
    email: Annotated[Line, Field(max_length=254)] = Field("", description="E-mail address.")
    firstName: Annotated[Line, Field(max_length=100)] = Field("", description="First name.")
    lastName: Annotated[Line, Field(max_length=100)] = Field("", description="Last name.")
    organization: Annotated[Line, Field(max_length=200)] = Field("", description="Organization.")
    roles: Annotated[list[Text], Field(max_length=100)] | None = Field(
        None, description="Built-in (admin, analyst, triage, ingest, viewer) or custom; analyst when none is given.")
    restricted: Flag = Field(False, description="A restricted user.")
    disabled: Flag = Field(False, description="A disabled user cannot sign in or call.")
    dataPolicies: PolicyNames | None = Field(
        None, description="Data policy names: the records the user sees (with those of the roles).")
    APIPolicies: CallPatterns | None = Field(
        None, description="Call patterns the user may call (auth/*, ds/get_*); none: any the roles allow.")
    preference: Annotated[Preference, BeforeValidator(_small)] = Field(
        default_factory=Preference, description="Holds timezone: {value, policy}.")
    profile: Annotated[dict[str, Any], BeforeValidator(_small)] | None = Field(
        None, description="Free-form profile object (small).")
    oauthProvider: Annotated[Line, Field(max_length=100)] = Field(
        "", description="The identity provider of an OAuth user.")
    oauthFlag: Flag = Field(False, description="True for a user of an identity provider.")
    rights: Any = ReadOnly
    lastLogin: Any = ReadOnly
    passwordDate: Any = ReadOnly
    passwordSet: Any = ReadOnly
    fullName: Any = ReadOnly
    name: Any = ReadOnly
    timezone: Any = ReadOnly
    createdOn: Any = ReadOnly
    note: Any = ReadOnly

    @field_validator("email")
    @classmethod
    def _email(cls, value: str, info: ValidationInfo) -> str:
        # The clients' AddUser copies the user name into email.
        if value and not EMAIL.fullmatch(value) and value != info.data.get("username"):
            raise PydanticCustomError("email", "must be an e-mail address like name@example.com")
        return value

    def changes(self) -> dict[str, Any]:
        """The editable fields sent, by wire name."""
        sent = self.model_fields_set - {"username"}
        return {k: getattr(self, k) for k in sent if not type(self).model_fields[k].exclude}


class Users:
    def __init__(self, db: Database, hasher: PasswordHasher, settings: Settings, clock: Clock):
        self.db = db
        self.hasher = hasher
        self.settings = settings
        self.clock = clock

    # -- reading -------------------------------------------------------------

    def list(self) -> list[User]:
        with self.db.session() as s:
            return list(s.scalars(select(User).order_by(User.username)))

    def get(self, username: str) -> User:
        with self.db.session() as s:
            return _find(s, username)

    def count(self) -> int:
        with self.db.session() as s:
            return s.scalar(select(func.count()).select_from(User)) or 0

    # -- changing ------------------------------------------------------------

    def add(self, new: UserInput | Mapping[str, Any], where: str = "user") -> User:
        """Create a user (without a password: it cannot sign in with one until one is set)."""
        new = typed(UserInput, new, where)
        values = self._values(new, where)
        if values.get("roles", 0) is None:  # the clients send null for "none given"
            del values["roles"]
        values.setdefault("roles", ["analyst"])
        now = self.clock()
        user = User(
            username=new.username,
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
            if s.scalar(select(User.id).where(User.username == new.username)) is not None:
                raise Conflict(f"{where}.username: user {new.username!r} already exists")
            s.add(user)
        return user

    def update(self, changed: UserInput | Mapping[str, Any], where: str = "user") -> User:
        """Change the fields sent of a user; refuses to leave no enabled admin."""
        changed = typed(UserInput, changed, where)
        name = changed.username
        values = self._values(changed, where)
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
        if "password" in values and name == "admin":
            self.first_password_file().unlink(missing_ok=True)  # it no longer opens anything
        return user

    def set_password(self, username: str, password: str) -> User:
        return self.update({"username": username, "password": password})

    def set_disabled(self, username: str, disabled: bool) -> User:
        return self.update({"username": username, "disabled": disabled})

    def delete(self, username: str) -> None:
        with self.db.session(write=True) as s:
            user = _find(s, username)
            s.delete(user)
            s.flush()
            _keep_an_admin(s, f"cannot delete {username!r}")

    def ensure_admin(self, password: str | None) -> str | None:
        """On an empty database create ``admin``; return its password if generated.

        A generated password is also written to ``first_password_file()``,
        readable by the data dir's owner only, until the admin's password is
        changed: a console line scrolls away (or goes to a service manager's
        journal), and the operator who owns the data dir must not be locked
        out of a new deployment by missing it."""
        if self.count():
            return None
        generated = None if password else generate_password()
        self.add({
            "username": "admin",
            "password": password or generated,
            "roles": ["admin"],
            "firstName": "Administrator",
        }, where="admin")
        if generated:
            path = self.first_password_file()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.unlink(missing_ok=True)  # a left-over of an earlier database: never another's mode
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(generated + "\n")
        return generated

    def first_password_file(self) -> Path:
        """Where the generated first admin password waits until it is changed."""
        return self.settings.data_dir / FIRST_PASSWORD_FILE

    # -- validation ----------------------------------------------------------

    def _values(self, user: UserInput, where: str) -> dict[str, Any]:
        """The fields sent, by wire name; the password checked against the server's policy."""
        values = user.changes()
        if "password" in values:
            context = (user.username, user.email, user.firstName, "seclake")
            values["password"] = check_password(
                values["password"], self.settings.password_min_length, f"{where}.password",
                min_strength=self.settings.password_min_strength, context=context,
            )
        if "preference" in values:
            values["preference"] = user.preference.model_dump()
        return values


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


def _check_names(s: Session, values: dict[str, Any], where: str) -> None:
    """Roles and data policies must name roles and policies that exist, checked
    in the transaction that stores them (a policy deleted meanwhile is refused)."""
    if "roles" in values:
        values["roles"] = check_role_names(s, values["roles"], f"{where}.roles")
    if values.get("dataPolicies") is not None:
        values["dataPolicies"] = check_policy_names(s, values["dataPolicies"], f"{where}.dataPolicies")


_ZONES: set[str] = set()


def _zones() -> set[str]:
    if not _ZONES:
        _ZONES.update(available_timezones(), {"UTC", "GMT"})
    return _ZONES



