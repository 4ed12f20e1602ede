"""Bearer secrets (session and API tokens): how they are made and kept.

Tokens carry 256 random bits from ``secrets``; only their SHA-256 is stored.
A fast hash is right here: unlike a password, a 256-bit token cannot be
guessed, so slowing down each guess buys nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SESSION_PREFIX = "sls_"
API_PREFIX = "slk_"
TOKEN_BYTES = 32
MAX_TOKEN_LENGTH = 128


def new_token(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_hash(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))
