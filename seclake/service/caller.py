"""Who is making a call, as established from a session or API token."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from seclake.service.roles import permissions_of

if TYPE_CHECKING:
    from seclake.query import ast
    from seclake.record.dataset import Dataset
    from seclake.service.access import Rights
    from seclake.settings import Settings


@dataclass(frozen=True)
class Caller:
    username: str
    roles: tuple[str, ...]
    token_kind: Literal["session", "api"]
    token_id: int
    # As stored on the user (spec 2.3): data policy names and call-name globs.
    data_policies: list[Any] | None = None
    api_policies: list[Any] | None = None
    # The narrowing an API token carries (None: none).
    token_data_policies: list[Any] | None = None
    token_api_policies: list[Any] | None = None
    # Effective rights, computed from the database on every call
    # (seclake.service.access); None only before that.
    rights: Rights | None = field(default=None, compare=False)
    # Until when this resolution may be reused if nothing about access
    # changes (seclake.service.authentication): the next bookkeeping write
    # (last seen / last used) or the token's end, whichever comes first.
    fresh_until: datetime | None = field(default=None, compare=False)

    def may(self, permission: str) -> bool:
        if self.rights is not None:
            return self.rights.may(permission)
        return permission in permissions_of(self.roles)

    def restriction(self, dataset: Dataset, settings: Settings | None = None) -> ast.Node | None:
        """The filter every record of ``dataset`` this caller sees must match; None: no restriction."""
        if self.rights is None:
            raise RuntimeError("the caller's rights were not computed")
        from seclake.query.limits import QueryLimits

        limits = QueryLimits.from_settings(settings) if settings is not None else None
        return self.rights.restriction(dataset, limits)
