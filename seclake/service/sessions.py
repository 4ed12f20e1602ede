"""Login sessions: created at login, ended by idle time or absolute lifetime."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete, select

from seclake.db.database import Database
from seclake.db.models import User, UserSession
from seclake.errors import Unauthorized
from seclake.service.caller import Caller
from seclake.service.clock import Clock
from seclake.service.secret import SESSION_PREFIX, new_token, same_hash, token_hash
from seclake.settings import Settings


class Sessions:
    def __init__(self, db: Database, settings: Settings, clock: Clock):
        self.db = db
        self.settings = settings
        self.clock = clock

    @property
    def idle(self) -> timedelta:
        return timedelta(minutes=self.settings.session_idle_minutes)

    @property
    def lifetime(self) -> timedelta:
        return timedelta(hours=self.settings.session_max_hours)

    def create(self, user_id: int, now: datetime) -> tuple[str, UserSession]:
        token = new_token(SESSION_PREFIX)
        session = UserSession(
            public_id=secrets.token_hex(16),
            token_hash=token_hash(token),
            user_id=user_id,
            created_on=now,
            last_seen=now,
        )
        with self.db.session(write=True) as s:
            s.add(session)
            # Ended sessions of this user are of no further use; drop them here
            # so the table does not grow without bound.
            s.execute(
                delete(UserSession).where(
                    UserSession.user_id == user_id,
                    (UserSession.last_seen < now - self.idle) | (UserSession.created_on < now - self.lifetime),
                )
            )
        return token, session

    def resolve(self, token: str) -> Caller:
        """The caller a session token stands for; Unauthorized if it has ended."""
        digest = token_hash(token)
        now = self.clock()
        with self.db.session(write=True) as s:
            row = s.execute(
                select(UserSession, User).join(User).where(UserSession.token_hash == digest)
            ).first()
            if row is None or not same_hash(row[0].token_hash, digest):
                raise Unauthorized("invalid token: no such session or API token")
            session, user = row
            if now - session.last_seen > self.idle:
                s.delete(session)
                raise Unauthorized("session expired after inactivity; log in again")
            if now - session.created_on > self.lifetime:
                s.delete(session)
                raise Unauthorized("session reached its maximum lifetime; log in again")
            if user.disabled:
                raise Unauthorized(f"user {user.username!r} is disabled")
            # Writing on every call would serialize readers on SQLite; a
            # resolution of a few seconds is plenty for an idle timeout.
            resolution = min(self.idle / 10, timedelta(seconds=30))
            if now - session.last_seen > resolution:
                session.last_seen = now
            return Caller(
                username=user.username,
                roles=tuple(user.roles),
                token_kind="session",
                token_id=session.id,
                data_policies=user.data_policies,
                api_policies=user.api_policies,
                fresh_until=min(session.last_seen + resolution, session.created_on + self.lifetime),
            )

    def end(self, token: str) -> None:
        with self.db.session(write=True) as s:
            s.execute(delete(UserSession).where(UserSession.token_hash == token_hash(token)))
