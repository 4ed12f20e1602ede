"""Who is making a call, as established from a session or API token."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from seclake.service.roles import permissions_of


@dataclass(frozen=True)
class Caller:
    username: str
    roles: tuple[str, ...]
    token_kind: Literal["session", "api"]
    token_id: int
    data_policies: list[Any] | None = None
    api_policies: list[Any] | None = None

    def may(self, permission: str) -> bool:
        return permission in permissions_of(self.roles)
