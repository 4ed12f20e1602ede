"""Roles a user may hold and the permissions each grants.

A call names one permission; a caller may make it when one of the caller's
roles grants that permission. ``public`` calls need no caller at all.

The built-in roles below always exist; admins may define more (with their
own permissions, API policies and data policies) in the database, see
``seclake.service.policies``. A role name held by a user that names no role
(built-in or stored) grants nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

PERMISSIONS = ("public", "search", "triage", "ingest", "admin")

ROLES: dict[str, frozenset[str]] = {
    "admin": frozenset(PERMISSIONS),
    "analyst": frozenset({"public", "search", "triage"}),
    "ingest": frozenset({"public", "ingest"}),
}


def permissions_of(roles: Iterable[str]) -> frozenset[str]:
    """The permissions the built-in roles among ``roles`` grant."""
    granted: set[str] = set()
    for role in roles:
        granted |= ROLES.get(role, frozenset())
    return frozenset(granted)


def rights_of(roles: Iterable[str]) -> str:
    """The ``rights`` string of a user record: its strongest built-in role."""
    held = set(roles)
    for role in ROLES:  # strongest first
        if role in held:
            return role
    return "none"
