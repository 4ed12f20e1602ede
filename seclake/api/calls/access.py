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
from seclake.api.reply import PolicyRecord, RoleRecord, policy_record, role_record
from seclake.api.request import NameRequest, NoArguments, PolicyRequest, RoleRequest
from seclake.service.policies import POLICY_FIELDS, ROLE_FIELDS, changes

AUDITED_ROLE_FIELDS = tuple(f for f in ROLE_FIELDS if f != "name")
AUDITED_POLICY_FIELDS = tuple(f for f in POLICY_FIELDS if f != "name")


def _managed(kind: str, arg: str, label: str, plural: str, fields, store, request, reply, record) -> None:
    """Register auth/<kind>List|Add|Update|Delete for one kind of managed object.

    ``store(services)`` gives (list, add, update, delete) functions; every
    change is written to the audit entry with what changed. ``request`` is
    the model of add and update (``{policy}``, ``{role}``), ``reply`` the
    model of the record and ``record`` what renders it.
    """

    @call(f"auth/{kind}List", permission="admin", request=NoArguments, reply=dict[str, list[reply]],
          summary=f"Every {label}, as {{{plural}}}.")
    def list_(ctx: CallContext, args: NoArguments) -> Any:
        return {plural: [record(x) for x in store(ctx.services)[0]()]}

    @call(f"auth/{kind}Add", permission="admin", request=request, reply=reply, summary=f"Add a {label}.")
    def add(ctx: CallContext, args: Any) -> Any:
        added = record(store(ctx.services)[1](getattr(args, arg)))
        ctx.audit_detail = f"{label} {added['name']!r} added: " + changes(None, added, fields)
        return added

    @call(f"auth/{kind}Update", permission="admin", request=request, reply=reply, summary=f"Change a {label}.")
    def update(ctx: CallContext, args: Any) -> Any:
        before, after = map(record, store(ctx.services)[2](getattr(args, arg)))
        ctx.audit_detail = f"{label} {after['name']!r}: " + changes(before, after, fields)
        return after

    @call(f"auth/{kind}Delete", permission="admin", request=NameRequest, reply=dict[str, str],
          summary=f"Delete a {label} not in use.")
    def delete(ctx: CallContext, args: NameRequest) -> Any:
        deleted = record(store(ctx.services)[3](args.name))
        ctx.audit_detail = f"{label} {deleted['name']!r} deleted (was: " + changes(None, deleted, fields) + ")"
        return {"deleted": deleted["name"]}


_managed(
    "dataPolicy", "policy", "data policy", "policies", AUDITED_POLICY_FIELDS,
    lambda sv: (sv.policies.list_policies, sv.policies.add_policy, sv.policies.update_policy, sv.policies.delete_policy),
    PolicyRequest, PolicyRecord, policy_record,
)
_managed(
    "role", "role", "role", "roles", AUDITED_ROLE_FIELDS,
    lambda sv: (sv.policies.list_roles, sv.policies.add_role, sv.policies.update_role, sv.policies.delete_role),
    RoleRequest, RoleRecord, role_record,
)
