"""Password login: lockout after repeated failures, equal cost for unknown users."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from seclake.db.database import Database
from seclake.db.models import LoginFailure, User, UserSession
from seclake.errors import TooManyAttempts, Unauthorized
from seclake.service.audit import Audit
from seclake.service.clock import Clock
from seclake.service.metrics import Metrics
from seclake.service.password import PasswordHasher
from seclake.service.sessions import Sessions
from seclake.service.users import NO_PASSWORD
from seclake.settings import Settings

# One message for a wrong password and an unknown user, so that the answer
# does not tell which usernames exist.
BAD_CREDENTIALS = "invalid username or password"
# local_passwords = false: the same answer for every username but the break-glass admin's.
PASSWORDS_OFF = "password sign-in is off on this server: sign in with your organisation's identity provider"
# The counter row of an address over every username.
ANY_USER = ""

log = logging.getLogger("seclake.login")


@dataclass(frozen=True)
class SignIn:
    """A session just opened: its token (shown this once), the session and its user."""

    token: str
    session: UserSession
    user: User


class Login:
    def __init__(
        self, db: Database, hasher: PasswordHasher, sessions: Sessions, audit: Audit,
        settings: Settings, clock: Clock, metrics: Metrics,
    ):
        self.db = db
        self.hasher = hasher
        self.sessions = sessions
        self.audit = audit
        self.settings = settings
        self.clock = clock
        self.metrics = metrics

    def login(self, username: str, password: str, client: str = "") -> SignIn:
        """Check the credentials and open a session."""
        if not self.settings.local_passwords and username != self.settings.break_glass_admin:
            # Refused before any password is looked at: nothing is verified or counted.
            self.audit.login(username, client, False, "password sign-in is off (local_passwords = false)")
            raise Unauthorized(PASSWORDS_OFF)
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
            # The same answer as a wrong password: the right password of a
            # disabled account must not confirm itself. Not counted as a failure.
            self.audit.login(username, client, False, "user disabled")
            raise Unauthorized(BAD_CREDENTIALS)

        return self.open(user, client, password=password)

    def open(
        self, user: User, client: str, *, password: str | None = None, call: str = "auth/login",
        detail: str | None = None,
    ) -> SignIn:
        """Open a session for ``user``, whose identity was just proven (a
        password, or an identity provider's ID token: service/oidc.py): the
        same session either way, so the API and every client work alike."""
        now = self.clock()
        token, session = self.sessions.create(user.id, now)
        with self.db.session(write=True) as s:
            stored = s.get(User, user.id)
            stored.last_login = now
            if password is not None and self.hasher.needs_rehash(stored.password_hash):
                stored.password_hash = self.hasher.hash(password)
            failures = s.get(LoginFailure, (user.username, _client(client)))
            if failures is not None:
                s.delete(failures)
        self.audit.login(user.username, client, True, detail, call=call)
        return SignIn(token, session, user)

    def unlock(self, username: str) -> int:
        """End every lockout of ``username`` (an admin's unlock), and those of
        the addresses it failed or was refused from: behind a proxy all
        clients share one address, which others' guesses lock for everyone.
        How many counters were cleared."""
        if username == ANY_USER:
            return 0
        with self.db.session(write=True) as s:
            clients = list(s.scalars(select(LoginFailure.client).where(LoginFailure.username == username)))
            ended = s.execute(delete(LoginFailure).where(LoginFailure.username == username)).rowcount or 0
            if clients:
                # Only locked ones: a count still under its limit stays.
                ended += s.execute(delete(LoginFailure).where(
                    LoginFailure.username == ANY_USER, LoginFailure.client.in_(clients),
                    LoginFailure.locked_until.is_not(None),
                )).rowcount or 0
            return ended

    def unlock_address(self, address: str) -> int:
        """End every lockout from ``address``: its own and each username's
        there. How many counters were cleared."""
        with self.db.session(write=True) as s:
            return s.execute(delete(LoginFailure).where(LoginFailure.client == _client(address))).rowcount or 0

    def _refuse_if_locked(self, username: str, client: str, now: datetime) -> None:
        # Counted per (username, address) and per address: a stranger's
        # failures lock that username for the stranger's address only.
        key = (username, _client(client))
        with self.db.session() as s:
            mine = s.get(LoginFailure, key)
            address = s.get(LoginFailure, (ANY_USER, key[1]))
        where = f"from this address ({key[1] or 'unknown'})"
        for row, whose in ((address, where), (mine, f"for {username!r} {where}")):
            if row is not None and row.locked_until is not None and row.locked_until > now:
                wait = math.ceil((row.locked_until - now).total_seconds())
                if row is address and mine is None and username != ANY_USER:
                    self._note_refused(key, now)
                self.metrics.locked_out.labels("address" if row is address else "user").inc()
                self.audit.login(username, client, False, "locked out " + whose.removeprefix(f"for {username!r} "))
                raise TooManyAttempts(
                    f"too many failed logins {whose}; try again in {math.ceil(wait / 60)} minute(s)",
                    retry_after_seconds=wait,
                )

    def _note_refused(self, key: tuple[str, str], now: datetime) -> None:
        """Leave a counter of no failures for a username refused by its
        address's lockout, so that unlocking the username finds the address.
        Once per name and address (a refusal writes its audit entry anyway);
        purged with the other counters once the window is over."""
        try:
            with self.db.session(write=True) as s:
                if s.get(LoginFailure, key) is None:
                    s.add(LoginFailure(username=key[0], client=key[1], failures=0, first_failure=now))
        except IntegrityError:
            pass  # a refusal of the same name at the same moment wrote it

    def _failed(self, username: str, client: str, why: str) -> None:
        now = self.clock()
        window = timedelta(minutes=self.settings.login_window_minutes)
        limits = ((username, self.settings.login_max_failures), (ANY_USER, self.settings.login_address_max_failures))
        started: list[str] = []
        with self.db.session(write=True) as s:
            # Old counters go here, so the table holds only the last window's.
            s.execute(delete(LoginFailure).where(
                LoginFailure.first_failure < now - window,
                (LoginFailure.locked_until.is_(None)) | (LoginFailure.locked_until <= now),
            ))
            for who, limit in limits:
                key = (who, _client(client))
                row = s.get(LoginFailure, key, with_for_update=True)
                if row is None:
                    row = LoginFailure(username=who, client=key[1], failures=0, first_failure=now)
                    s.add(row)
                stale = now - row.first_failure > window
                lock_over = row.locked_until is not None and row.locked_until <= now
                if stale or lock_over:
                    row.failures, row.first_failure, row.locked_until = 0, now, None
                row.failures += 1
                if row.failures >= limit:
                    if row.locked_until is None:
                        started.append(who)
                    row.locked_until = now + timedelta(minutes=self.settings.login_lockout_minutes)
        for who in started:
            # Said once, when the lockout starts; each refusal is counted and audited.
            scope = "address" if who == ANY_USER else "user"
            self.metrics.lockouts.labels(scope).inc()
            log.warning(
                "login: %s from %s locked out for %g minute(s) after %d failed logins in %g minute(s) "
                "(setting %s); %s lifts it", "every username" if who == ANY_USER else repr(who[:128]),
                _client(client) or "an unknown address", self.settings.login_lockout_minutes,
                dict(limits)[who], self.settings.login_window_minutes,
                "login_address_max_failures" if who == ANY_USER else "login_max_failures",
                "auth/addressUnlock" if who == ANY_USER else "auth/userUnlock",
            )
        self.audit.login(username, client, False, why)
        raise Unauthorized(BAD_CREDENTIALS)


def _client(address: str) -> str:
    return address[:64]
