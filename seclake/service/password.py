"""Password hashing with argon2id at OWASP's recommended parameters."""

from __future__ import annotations

import secrets

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
    def __init__(self) -> None:
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
        self._dummy = self._argon2.hash(secrets.token_urlsafe(24))

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


def check_password(password: object, min_length: int, field: str = "password") -> str:
    """Return the password if acceptable, else raise naming the field."""
    if not isinstance(password, str):
        raise ValidationFailed(field, "must be a string")
    if len(password) < min_length:
        raise ValidationFailed(field, f"must be at least {min_length} characters long")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ValidationFailed(field, f"must be at most {MAX_PASSWORD_LENGTH} characters long")
    return password


def generate_password() -> str:
    return secrets.token_urlsafe(18)
