"""The effective rights of a caller, computed from the database on every call.

Nothing here is cached in a session or token: a change to a user, a role or
a data policy applies to the very next call of every open session.

* **Permissions**: the union of what the caller's roles grant (built-in roles
  from ``seclake.service.roles``, custom roles from the ``roles`` table). An
  unknown role name grants nothing.
* **API policies**: allow lists of call-name globs (``ds/*``,
  ``auth/userList``; ``fnmatch`` syntax, ``*`` also crosses ``/``). The
  user's own ``APIPolicies`` and those of all its roles form one list; when
  that list is not empty, a call must match one of its patterns. A token's
  list, when it has one, must be matched as well. So a token can only
  narrow. Permissions are checked as well, always: API policies never grant
  a call the roles do not allow.
* **Data policies**: the user's ``dataPolicies`` and those of all its roles
  form one set; when it is not empty the caller sees, in each dataset, the
  records that match at least one of their filters (OR). A token that names
  data policies adds a second set that must match too (AND), so a token can
  only narrow, whatever later happens to the user's policies. No data policy
  at all means every record.

  A policy is an allow list: a dataset the policy does not name contributes
  no records (fail closed). A user restricted by ``@customer:acme`` on events
  only sees no flows, behaviors or summaries until the policy names those
  datasets too; write ``*`` for "every record of this dataset". A policy name
  that no longer names a policy contributes nothing either.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from sqlalchemy import select

from seclake.db.database import Database
from seclake.db.models import CustomRole, DataPolicy
from seclake.errors import Forbidden, SeclakeError
from seclake.query import ast
from seclake.query.limits import QueryLimits
from seclake.query.parser import parse
from seclake.record.dataset import Dataset
from seclake.service.roles import ROLES

if TYPE_CHECKING:
    from seclake.service.caller import Caller

# Policy filters always combine their clauses with AND, whatever the
# server's default operator for user queries: a policy must not change
# meaning when that setting does.
POLICY_OPERATOR = "AND"

# One policy as a rights layer holds it: its name and its filter per dataset.
PolicyFilters = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Rights:
    permissions: frozenset[str]
    # Each layer is an allow list the call name must match; no layer: no API policy.
    api_layers: tuple[tuple[str, ...], ...] = ()
    # Each layer is a set of policies whose filters are OR-ed; layers are
    # AND-ed. No layer: every record of every dataset.
    data_layers: tuple[tuple[PolicyFilters, ...], ...] = ()

    def may(self, permission: str) -> bool:
        return permission in self.permissions

    def allows_call(self, name: str) -> bool:
        return all(any(fnmatchcase(name, p) for p in layer) for layer in self.api_layers)

    @property
    def restricted(self) -> bool:
        return bool(self.data_layers)

    def restriction(self, dataset: Dataset, limits: QueryLimits | None = None, now_ms: int | None = None) -> ast.Node | None:
        """The filter every record of ``dataset`` must match, or None for no restriction.

        A filter that no longer parses (limits lowered since it was saved)
        fails the call rather than being dropped, and the message names the
        policy, not its filter.
        """
        if not self.data_layers:
            return None
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        layers = []
        for layer in self.data_layers:
            alternatives = []
            for name, filters in layer:
                text = dict(filters).get(dataset.name)
                if text is None:
                    continue
                try:
                    alternatives.append(
                        parse(text, dataset, default_operator=POLICY_OPERATOR, limits=limits, now_ms=now_ms)
                    )
                except SeclakeError:
                    raise Forbidden(
                        f"data policy {name!r} cannot be applied to {dataset.name} records; "
                        "ask an administrator to check it"
                    ) from None
            layers.append(ast.or_(*alternatives))
        return ast.and_(*layers)


def _strings(values: object) -> list[str]:
    """The string entries of a stored list; anything else stored there names nothing."""
    if not isinstance(values, list):
        return []
    return [v for v in values if isinstance(v, str)]


class Access:
    def __init__(self, db: Database):
        self.db = db

    def rights(self, caller: Caller) -> Rights:
        roles = [r for r in caller.roles if isinstance(r, str)]
        custom_names = [r for r in roles if r not in ROLES]
        with self.db.session() as s:
            custom = list(s.scalars(select(CustomRole).where(CustomRole.name.in_(custom_names)))) if custom_names else []
            permissions: set[str] = set()
            for role in roles:
                permissions |= ROLES.get(role, frozenset())
            user_patterns = _strings(caller.api_policies)
            user_policies = _strings(caller.data_policies)
            for role in custom:
                permissions |= set(_strings(role.permissions))
                user_patterns += _strings(role.api_policies)
                user_policies += _strings(role.data_policies)
            api_layers = []
            if user_patterns:
                api_layers.append(tuple(dict.fromkeys(user_patterns)))
            token_patterns = _strings(caller.token_api_policies) if caller.token_api_policies is not None else []
            if token_patterns:
                api_layers.append(tuple(dict.fromkeys(token_patterns)))

            token_policies = _strings(caller.token_data_policies) if caller.token_data_policies is not None else []
            wanted = set(user_policies) | set(token_policies)
            found = {
                p.name: p for p in (s.scalars(select(DataPolicy).where(DataPolicy.name.in_(wanted))) if wanted else [])
            }
        data_layers = []
        for names in (user_policies, token_policies):
            if names:
                data_layers.append(tuple(_layer(names, found)))
        return Rights(frozenset(permissions), tuple(api_layers), tuple(data_layers))

    def complete(self, caller: Caller) -> Caller:
        """The caller with its rights as they stand now."""
        return dataclasses.replace(caller, rights=self.rights(caller))


def _layer(names: Iterable[str], found: dict[str, DataPolicy]) -> list[PolicyFilters]:
    out = []
    for name in dict.fromkeys(names):
        policy = found.get(name)
        if policy is None:
            continue  # a vanished policy lets nothing through
        filters = policy.filters if isinstance(policy.filters, dict) else {}
        out.append((name, tuple(sorted((k, v) for k, v in filters.items() if isinstance(v, str)))))
    return out
