"""Destination secrets sealed with the deployment's key (migration 0015, ``notify_secrets``).

AES-256-GCM from ``cryptography`` (a solved problem: no cipher of ours). The
destination's name is the associated data, so a sealed secret copied onto
another destination's row does not open there. A version byte leads, so the
format can change later.
"""

from __future__ import annotations

import os
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from seclake.db.database import Database
from seclake.db.models import DeploymentKey

VERSION = b"\x01"
KEY_NAME = "notify_secrets"


class SecretBox:
    def __init__(self, key: bytes):
        self._aead = AESGCM(key)

    def seal(self, name: str, secrets: dict[str, Any]) -> bytes:
        nonce = os.urandom(12)
        return VERSION + nonce + self._aead.encrypt(nonce, orjson.dumps(secrets), name.encode("utf-8"))

    def open(self, name: str, blob: bytes | None) -> dict[str, Any]:
        if not blob:
            return {}
        if blob[:1] != VERSION:
            raise ValueError(f"destination {name!r}: its secrets are sealed in an unknown format")
        try:
            return orjson.loads(self._aead.decrypt(blob[1:13], blob[13:], name.encode("utf-8")))
        except InvalidTag:
            raise ValueError(f"destination {name!r}: its secrets do not open with this deployment's key") from None


def box_in(db: Database) -> SecretBox:
    with db.session() as s:
        key = s.get(DeploymentKey, KEY_NAME)
        if key is None:
            raise RuntimeError(f"the database has no {KEY_NAME} key: run the migrations (seclake serve does)")
        return SecretBox(key.value)
