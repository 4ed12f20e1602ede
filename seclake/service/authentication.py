"""Turns a presented token into a Caller, whatever kind of token it is."""

from __future__ import annotations

from seclake.errors import Unauthorized
from seclake.service.access import Access
from seclake.service.caller import Caller
from seclake.service.secret import API_PREFIX, MAX_TOKEN_LENGTH, SESSION_PREFIX
from seclake.service.sessions import Sessions
from seclake.service.tokens import Tokens


class Authentication:
    def __init__(self, sessions: Sessions, tokens: Tokens, access: Access | None = None):
        self.sessions = sessions
        self.tokens = tokens
        self.access = access or Access(sessions.db)

    def caller(self, token: str | None) -> Caller:
        """The caller behind ``token``, with its rights as they stand now (read on every call)."""
        return self.access.complete(self._resolve(token))

    def _resolve(self, token: str | None) -> Caller:
        if not token:
            raise Unauthorized(
                "missing token: send the Servicetoken header (or Authorization: Bearer) "
                "with an API token or the sessionToken from auth/login"
            )
        if len(token) > MAX_TOKEN_LENGTH:
            raise Unauthorized("invalid token: too long")
        if token.startswith(SESSION_PREFIX):
            return self.sessions.resolve(token)
        if token.startswith(API_PREFIX):
            return self.tokens.resolve(token)
        raise Unauthorized("invalid token: no such session or API token")
