"""Roles a user may hold and the permissions each grants.

A call names one permission; a caller may make it when one of the caller's
roles grants that permission. ``public`` calls need no caller at all.
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
    granted: set[str] = set()
    for role in roles:
        granted |= ROLES.get(role, frozenset())
    return frozenset(granted)


def rights_of(roles: Iterable[str]) -> str:
    """The ``rights`` string of a user record: its strongest role."""
    held = set(roles)
    for role in ROLES:  # strongest first
        if role in held:
            return role
    return "none"
