"""Calls of the auth/ family: login, users, API tokens."""

from __future__ import annotations

from typing import Any

from seclake.api.registry import CallContext, call
from seclake.errors import ValidationFailed


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
    return ctx.services.users.add(_required(kargs, "user"), where="user")


@call("auth/userUpdate", permission="admin")
def user_update(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    """Change some fields of ``user`` (named by ``user.username``)."""
    user = _required(kargs, "user")
    if not isinstance(user, dict):
        raise ValidationFailed("user", "must be an object")
    return ctx.services.users.update(user.get("username"), user, where="user")


@call("auth/userDelete", permission="admin")
def user_delete(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    ctx.services.users.delete(kargs.get("username"))
    return {"deleted": kargs["username"]}


@call("auth/api_token", permission="admin")
def api_token(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    """``action`` add (token shown once), list (never shows tokens) or delete."""
    tokens = ctx.services.tokens
    action = kargs.get("action")
    if action == "add":
        username = kargs.get("username", ctx.caller.username if ctx.caller else None)
        return tokens.create(username, kargs.get("name", ""), kargs.get("expiresInDays"))
    if action == "list":
        return {"tokens": tokens.list(kargs.get("username"))}
    if action == "delete":
        return tokens.revoke(kargs.get("id"))
    raise ValidationFailed("action", f"must be add, list or delete, not {action!r}")


def _required(kargs: dict[str, Any], key: str) -> Any:
    if key not in kargs:
        raise ValidationFailed(key, "required")
    return kargs[key]
