"""Calls of the auth/ family: login, users, API tokens."""

from __future__ import annotations

from typing import Any

from seclake.api.registry import CallContext, call
from seclake.errors import ValidationFailed
from seclake.service.policies import changes

# The fields of a user record that decide what its caller may do.
ACCESS_FIELDS = ("roles", "dataPolicies", "APIPolicies", "disabled")


@call("auth/login", permission="public")
def login(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    return ctx.services.login.login(kargs.get("username"), kargs.get("password"), ctx.client)


@call("auth/userList", permission="admin")
def user_list(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    return {"users": ctx.services.users.list()}


@call("auth/getUser", permission="admin")
def get_user(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    return ctx.services.users.get(kargs.get("username"))


@call("auth/userAdd", permission="admin")
def user_add(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    added = ctx.services.users.add(_required(kargs, "user"), where="user")
    ctx.audit_detail = f"user {added['username']!r} added: " + changes(None, added, ACCESS_FIELDS)
    return added


@call("auth/userUpdate", permission="admin")
def user_update(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    """Change some fields of ``user`` (named by ``user.username``)."""
    user = _required(kargs, "user")
    if not isinstance(user, dict):
        raise ValidationFailed("user", "must be an object")
    users = ctx.services.users
    before = users.get(user.get("username"), where="user.username")
    after = users.update(user.get("username"), user, where="user")
    # Access changes are named in the audit entry; other fields by name only.
    what = [changes(before, after, ACCESS_FIELDS)] if any(before[f] != after[f] for f in ACCESS_FIELDS) else []
    what += [f for f in sorted(user) if f not in ACCESS_FIELDS and f != "username" and f in after and before[f] != after[f]]
    what += ["password"] if "password" in user else []
    ctx.audit_detail = f"user {after['username']!r}: " + ("; ".join(what) or "no change")
    return after


@call("auth/userDelete", permission="admin")
def user_delete(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    ctx.services.users.delete(kargs.get("username"))
    ctx.audit_detail = f"user {kargs['username']!r} deleted"
    return {"deleted": kargs["username"]}


@call("auth/api_token", permission="admin")
def api_token(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    """``action`` add (token shown once), list (never shows tokens) or delete."""
    tokens = ctx.services.tokens
    action = kargs.get("action")
    if action == "add":
        username = kargs.get("username", ctx.caller.username if ctx.caller else None)
        created = tokens.create(
            username, kargs.get("name", ""), kargs.get("expiresInDays"),
            data_policies=kargs.get("dataPolicies"), api_policies=kargs.get("APIPolicies"),
        )
        ctx.audit_detail = (
            f"API token {created['id']} for {created['username']!r} added"
            + "".join(f"; {k}={v}" for k in ("dataPolicies", "APIPolicies") if (v := created[k]))
        )
        return created
    if action == "list":
        return {"tokens": tokens.list(kargs.get("username"))}
    if action == "delete":
        revoked = tokens.revoke(kargs.get("id"))
        ctx.audit_detail = f"API token {revoked['id']} of {revoked['username']!r} revoked"
        return revoked
    raise ValidationFailed("action", f"must be add, list or delete, not {action!r}")


def _required(kargs: dict[str, Any], key: str) -> Any:
    if key not in kargs:
        raise ValidationFailed(key, "required")
    return kargs[key]
