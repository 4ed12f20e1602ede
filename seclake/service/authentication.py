"""Turns a presented token into a Caller, whatever kind of token it is.

Resolving a token and computing its rights takes a write transaction and
several lookups; a search then takes a fraction of a millisecond. So a
resolved caller is kept, keyed by the token's hash, and reused while

* the access generation (seclake.db.generation) is the one it was resolved
  under: any change to a user, session, token, role or policy, made on any
  node sharing the database, makes every kept caller stale at once; and
* its ``fresh_until`` has not passed: the moment the session's "last seen"
  or the token's "last used" is due to be written again, or the token ends.

Each call still reads the generation (one indexed single-row read), so
nothing granted or revoked waits for a timer. Failed resolutions are never
kept: a wrong token always costs the full lookup.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from seclake.db import generation
from seclake.errors import Unauthorized
from seclake.service.access import Access
from seclake.service.caller import Caller
from seclake.service.secret import API_PREFIX, MAX_TOKEN_LENGTH, SESSION_PREFIX, token_hash
from seclake.service.sessions import Sessions
from seclake.service.tokens import Tokens

# Enough for every open session of a large team; the least recently used
# entry goes first.
MAX_KEPT = 10_000


class Authentication:
    def __init__(self, sessions: Sessions, tokens: Tokens, access: Access | None = None):
        self.sessions = sessions
        self.tokens = tokens
        self.access = access or Access(sessions.db)
        self._kept: OrderedDict[str, tuple[int, Caller]] = OrderedDict()
        self._lock = threading.Lock()

    def caller(self, token: str | None) -> Caller:
        """The caller behind ``token``, with its rights as they stand now."""
        token = _checked(token)
        key = token_hash(token)
        now_generation = generation.current(self.sessions.db)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
        if kept is not None:
            kept_generation, caller = kept
            if kept_generation == now_generation and caller.fresh_until and self.sessions.clock() < caller.fresh_until:
                return caller
        # Resolving may write (last seen), which moves no generation; read it
        # before resolving so a change committed meanwhile is never masked.
        caller = self.access.complete(self._resolve(token))
        with self._lock:
            self._kept[key] = (now_generation, caller)
            self._kept.move_to_end(key)
            while len(self._kept) > MAX_KEPT:
                self._kept.popitem(last=False)
        return caller

    def _resolve(self, token: str) -> Caller:
        if token.startswith(SESSION_PREFIX):
            return self.sessions.resolve(token)
        if token.startswith(API_PREFIX):
            return self.tokens.resolve(token)
        raise Unauthorized("invalid token: no such session or API token")


def _checked(token: str | None) -> str:
    if not token:
        raise Unauthorized(
            "missing token: send the Servicetoken header (or Authorization: Bearer) "
            "with an API token or the sessionToken from auth/login"
        )
    if len(token) > MAX_TOKEN_LENGTH:
        raise Unauthorized("invalid token: too long")
    return token
