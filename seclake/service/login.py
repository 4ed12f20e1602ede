"""Password login: lockout after repeated failures, equal cost for unknown users."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from seclake.db.database import Database
from seclake.db.models import LoginFailure, User
from seclake.errors import TooManyAttempts, Unauthorized, ValidationFailed
from seclake.service.audit import Audit
from seclake.service.clock import Clock, iso
from seclake.service.password import MAX_PASSWORD_LENGTH, PasswordHasher
from seclake.service.roles import rights_of
from seclake.service.sessions import Sessions
from seclake.service.users import NO_PASSWORD, full_name, timezone_of
from seclake.settings import Settings

# One message for a wrong password and an unknown user, so that the answer
# does not tell which usernames exist.
BAD_CREDENTIALS = "invalid username or password"


class Login:
    def __init__(
        self, db: Database, hasher: PasswordHasher, sessions: Sessions, audit: Audit,
        settings: Settings, clock: Clock,
    ):
        self.db = db
        self.hasher = hasher
        self.sessions = sessions
        self.audit = audit
        self.settings = settings
        self.clock = clock

    def login(self, username: object, password: object, client: str = "") -> dict[str, Any]:
        """Check the credentials and open a session; return the session record (spec 2.2)."""
        if not isinstance(username, str) or not 0 < len(username) <= 128:
            raise ValidationFailed("username", "must be a non-empty string of at most 128 characters")
        if not isinstance(password, str) or len(password) > MAX_PASSWORD_LENGTH:
            raise ValidationFailed("password", f"must be a string of at most {MAX_PASSWORD_LENGTH} characters")
        now = self.clock()
        self._refuse_if_locked(username, client, now)

        with self.db.session() as s:
            user = s.scalar(select(User).where(User.username == username))
        if user is None:
            self.hasher.verify_dummy(password)
            self._failed(username, client, "unknown user")
        elif user.password_hash == NO_PASSWORD:
            # Same time and answer as a wrong password: nothing tells the two apart.
            self.hasher.verify_dummy(password)
            self._failed(username, client, "no password set")
        elif not self.hasher.verify(user.password_hash, password):
            self._failed(username, client, "wrong password")
        elif user.disabled:
            self.audit.login(username, client, False, "user disabled")
            raise Unauthorized(f"user {username!r} is disabled")

        token, session = self.sessions.create(user.id, now)
        with self.db.session(write=True) as s:
            stored = s.get(User, user.id)
            stored.last_login = now
            if self.hasher.needs_rehash(stored.password_hash):
                stored.password_hash = self.hasher.hash(password)
            failures = s.get(LoginFailure, username)
            if failures is not None:
                s.delete(failures)
        self.audit.login(username, client, True)
        return {
            "sessionToken": token,
            "publicKey": session.public_id,
            "userName": user.username,
            "createdOn": iso(session.created_on),
            "roles": list(user.roles),
            "status": "succeed",
            "fullName": full_name(user),
            "rights": rights_of(user.roles),
            "email": user.email,
            "organization": user.organization,
            "name": user.username,
            "preference": user.preference,
            "timezone": timezone_of(user),
            "profile": user.profile,
        }

    def _refuse_if_locked(self, username: str, client: str, now: datetime) -> None:
        with self.db.session() as s:
            row = s.get(LoginFailure, username)
        if row is not None and row.locked_until is not None and row.locked_until > now:
            wait = math.ceil((row.locked_until - now).total_seconds())
            self.audit.login(username, client, False, "locked out")
            raise TooManyAttempts(
                f"too many failed logins for {username!r}; try again in {math.ceil(wait / 60)} minute(s)",
                retry_after_seconds=wait,
            )

    def _failed(self, username: str, client: str, why: str) -> None:
        now = self.clock()
        window = timedelta(minutes=self.settings.login_window_minutes)
        with self.db.session(write=True) as s:
            row = s.get(LoginFailure, username, with_for_update=True)
            if row is None:
                row = LoginFailure(username=username, failures=0, first_failure=now)
                s.add(row)
            stale = now - row.first_failure > window
            lock_over = row.locked_until is not None and row.locked_until <= now
            if stale or lock_over:
                row.failures, row.first_failure, row.locked_until = 0, now, None
            row.failures += 1
            if row.failures >= self.settings.login_max_failures:
                row.locked_until = now + timedelta(minutes=self.settings.login_lockout_minutes)
        self.audit.login(username, client, False, why)
        raise Unauthorized(BAD_CREDENTIALS)
