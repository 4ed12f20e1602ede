"""Managing access: data policies and roles (admin calls).

* ``auth/dataPolicyList {}`` -> ``{policies}``;
  ``auth/dataPolicyAdd {policy: {name, description?, filters}}``;
  ``auth/dataPolicyUpdate {policy: {name, description?, filters?}}`` (filters
  replaced whole); ``auth/dataPolicyDelete {name}`` (refused while in use).
* ``auth/roleList {}`` -> ``{roles}`` (built-ins first, ``builtIn: true``);
  ``auth/roleAdd {role: {name, description?, permissions, APIPolicies?, dataPolicies?}}``;
  ``auth/roleUpdate {role: {name, ...}}``; ``auth/roleDelete {name}`` (refused
  while a user holds it).

Policies and roles are attached to users with ``auth/userUpdate``
(``roles``, ``dataPolicies``, ``APIPolicies``) and to API tokens with
``auth/api_token`` add (``dataPolicies``, ``APIPolicies``). Every change is
audited with what changed; it applies from the next call on, also in
sessions already open (rights are read on every call).
"""

from __future__ import annotations

from typing import Any

from seclake.api.registry import CallContext, call
from seclake.errors import ValidationFailed
from seclake.service.policies import POLICY_FIELDS, ROLE_FIELDS, changes

AUDITED_ROLE_FIELDS = tuple(f for f in ROLE_FIELDS if f != "name")
AUDITED_POLICY_FIELDS = tuple(f for f in POLICY_FIELDS if f != "name")


def _only(kargs: dict[str, Any], allowed: tuple[str, ...], what: str) -> None:
    for name in kargs:
        if name not in allowed:
            raise ValidationFailed(str(name)[:100], f"is not a field of {what}; use {', '.join(allowed)}")


def _required(kargs: dict[str, Any], key: str) -> Any:
    if kargs.get(key) is None:
        raise ValidationFailed(key, "required")
    return kargs[key]


@call("auth/dataPolicyList", permission="admin")
def policy_list(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    _only(kargs, (), "auth/dataPolicyList")
    return {"policies": ctx.services.policies.list_policies()}


@call("auth/dataPolicyAdd", permission="admin")
def policy_add(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    _only(kargs, ("policy",), "auth/dataPolicyAdd")
    added = ctx.services.policies.add_policy(_required(kargs, "policy"))
    ctx.audit_detail = f"data policy {added['name']!r} added: " + changes(None, added, AUDITED_POLICY_FIELDS)
    return added


@call("auth/dataPolicyUpdate", permission="admin")
def policy_update(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    _only(kargs, ("policy",), "auth/dataPolicyUpdate")
    before, after = ctx.services.policies.update_policy(_required(kargs, "policy"))
    ctx.audit_detail = f"data policy {after['name']!r}: " + changes(before, after, AUDITED_POLICY_FIELDS)
    return after


@call("auth/dataPolicyDelete", permission="admin")
def policy_delete(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    _only(kargs, ("name",), "auth/dataPolicyDelete")
    deleted = ctx.services.policies.delete_policy(_required(kargs, "name"))
    ctx.audit_detail = f"data policy {deleted['name']!r} deleted (was: " + changes(None, deleted, AUDITED_POLICY_FIELDS) + ")"
    return {"deleted": deleted["name"]}


@call("auth/roleList", permission="admin")
def role_list(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    _only(kargs, (), "auth/roleList")
    return {"roles": ctx.services.policies.list_roles()}


@call("auth/roleAdd", permission="admin")
def role_add(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    _only(kargs, ("role",), "auth/roleAdd")
    added = ctx.services.policies.add_role(_required(kargs, "role"))
    ctx.audit_detail = f"role {added['name']!r} added: " + changes(None, added, AUDITED_ROLE_FIELDS)
    return added


@call("auth/roleUpdate", permission="admin")
def role_update(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    _only(kargs, ("role",), "auth/roleUpdate")
    before, after = ctx.services.policies.update_role(_required(kargs, "role"))
    ctx.audit_detail = f"role {after['name']!r}: " + changes(before, after, AUDITED_ROLE_FIELDS)
    return after


@call("auth/roleDelete", permission="admin")
def role_delete(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    _only(kargs, ("name",), "auth/roleDelete")
    deleted = ctx.services.policies.delete_role(_required(kargs, "name"))
    ctx.audit_detail = f"role {deleted['name']!r} deleted (was: " + changes(None, deleted, AUDITED_ROLE_FIELDS) + ")"
    return {"deleted": deleted["name"]}
