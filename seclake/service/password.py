"""Password hashing with argon2id at OWASP's recommended parameters, and the rule a new password must pass."""

from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Sequence
from functools import cached_property

from argon2 import PasswordHasher as _Argon2, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from seclake.errors import ValidationFailed

# OWASP Password Storage Cheat Sheet: argon2id, m=19 MiB, t=2, p=1.
TIME_COST = 2
MEMORY_COST_KIB = 19456
PARALLELISM = 1
# Long enough for any passphrase, short enough that hashing stays cheap.
MAX_PASSWORD_LENGTH = 1024


class PasswordHasher:
    def __init__(self, *, eager: bool = True) -> None:
        """``eager``: make the stand-in hash now (a server, which answers
        logins), not at the first login of an unknown user, whose answer
        would then take twice as long (a one-shot command may never need it:
        it cost 30 ms of each one's start)."""
        self._argon2 = _Argon2(
            time_cost=TIME_COST,
            memory_cost=MEMORY_COST_KIB,
            parallelism=PARALLELISM,
            hash_len=32,
            salt_len=16,
            type=Type.ID,
        )
        # Verified against when a username is unknown, so that an unknown
        # user costs the same time as a wrong password.
        if eager:
            self._dummy  # noqa: B018 - made now

    @cached_property
    def _dummy(self) -> str:
        return self._argon2.hash(secrets.token_urlsafe(24))

    def hash(self, password: str) -> str:
        return self._argon2.hash(password)

    def verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._argon2.verify(password_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    def verify_dummy(self, password: str) -> bool:
        self.verify(self._dummy, password)
        return False

    def needs_rehash(self, password_hash: str) -> bool:
        return self._argon2.check_needs_rehash(password_hash)


def check_password(
    password: object, min_length: int, field: str = "password", *, min_strength: int = 0, context: Sequence[str] = ()
) -> str:
    """Return the password if acceptable, else raise naming the field.

    Length alone let ten spaces or ten NULs through. As NIST SP 800-63B
    advises, there are no composition rules; instead control characters are
    refused and the password must not be easy to guess: zxcvbn (Dropbox's
    estimator: common passwords, dictionary words, keyboard walks,
    repeats, dates, and ``context`` such as the user's own name) must rate
    it at least ``min_strength`` (0-4). zxcvbn reads at most 72 characters
    (its own bound on work); longer passwords are rated by their start.
    """
    if not isinstance(password, str):
        raise ValidationFailed(field, "must be a string")
    if len(password) < min_length:
        raise ValidationFailed(field, f"must be at least {min_length} characters long")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ValidationFailed(field, f"must be at most {MAX_PASSWORD_LENGTH} characters long")
    if any(unicodedata.category(c) == "Cc" for c in password):
        raise ValidationFailed(field, "must not contain control characters (NUL, tab, newline...)")
    if min_strength > 0:
        from zxcvbn import zxcvbn  # loaded when a password is set (~16 ms at every start otherwise)

        rating = zxcvbn(password[:72], user_inputs=[c for c in context if c][:8])
        if rating["score"] < min_strength:
            feedback = rating.get("feedback") or {}
            why = feedback.get("warning") or "it follows a common pattern"
            hint = " ".join(feedback.get("suggestions") or ["Add another word or two; uncommon words are better."])
            raise ValidationFailed(field, f"is too easy to guess: {why.rstrip('.')}. {hint}"[:300])
    return password


def generate_password() -> str:
    return secrets.token_urlsafe(18)
