"""Calls of the auth/ family: login, users, API tokens."""

from __future__ import annotations

from typing import Any

from seclake.api.authentication import token_from
from seclake.api.registry import CallContext, call
from seclake.errors import ValidationFailed
from seclake.service.policies import changes
from seclake.service.secret import SESSION_PREFIX
from seclake.service.users import check_username

# The fields of a user record that decide what its caller may do.
ACCESS_FIELDS = ("roles", "dataPolicies", "APIPolicies", "disabled")


@call("auth/login", permission="public")
def login(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    return ctx.services.login.login(kargs.get("username"), kargs.get("password"), ctx.client)


@call("auth/logout", permission="public")
def logout(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    """End the session whose token the request carries (the web sign-out).

    Answered alike whether or not the token was a live session: logging out
    twice, or with an API token (which is revoked with auth/api_token, not
    here), tells nothing and changes nothing.
    """
    token = token_from(ctx.headers)
    if token and token.startswith(SESSION_PREFIX):
        ctx.services.sessions.end(token)
    return {"loggedOut": True}


@call("auth/userUnlock", permission="admin")
def user_unlock(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    """End the lockouts of a username after failed logins (from any address)."""
    username = check_username(kargs.get("username"))
    ended = ctx.services.login.unlock(username)
    ctx.audit_detail = f"user {username!r} unlocked ({ended} lockout counter(s) cleared)"
    return {"username": username, "cleared": ended}


@call("auth/userList", permission="admin")
def user_list(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    return {"users": ctx.services.users.list()}


@call("auth/getUser", permission="admin")
def get_user(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    # The clients read response.user.
    return {"user": ctx.services.users.get(kargs.get("username"))}


@call("auth/userAdd", permission="admin")
def user_add(ctx: CallContext, kargs: dict[str, Any]) -> Any:
    added = ctx.services.users.add(_required(kargs, "user"), where="user")
    ctx.audit_detail = f"user {added['username']!r} added: " + changes(None, added, ACCESS_FIELDS)
    if not added["passwordSet"]:
        added = {**added, "note": (
            f"{added['username']!r} has no password: signing in with a password is refused until one is set "
            f"(auth/userUpdate with user.password, or `seclake user passwd {added['username']}`)"
        )}
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
    # The clients send {action, args: {entry: {name, description, roles}}} to
    # add, {action, args: {id: <name or id>}} or args.entry.name to delete;
    # seclake's own form puts the same fields at the top of kargs.
    args = kargs.get("args") or {}
    if not isinstance(args, dict):
        raise ValidationFailed("args", "must be an object")
    entry = args.get("entry") or {}
    if not isinstance(entry, dict):
        raise ValidationFailed("args.entry", "must be an object")
    if action == "add":
        fields = {**entry, **{k: v for k, v in kargs.items() if k not in ("action", "args")}}
        username = fields.get("username", ctx.caller.username if ctx.caller else None)
        created = tokens.create(
            username, fields.get("name", ""), fields.get("expiresInDays"),
            data_policies=fields.get("dataPolicies"), api_policies=fields.get("APIPolicies"),
            description=fields.get("description", ""), roles=fields.get("roles"),
        )
        ctx.audit_detail = (
            f"API token {created['id']} for {created['username']!r} added"
            + "".join(f"; {k}={v}" for k in ("dataPolicies", "APIPolicies") if (v := created[k]))
        )
        return created
    if action == "list":
        listed = tokens.list(kargs.get("username"))
        # entries: what the clients read; tokens: seclake's earlier name.
        return {"entries": listed, "tokens": listed}
    if action == "delete":
        if "id" in kargs:
            revoked = tokens.revoke(kargs["id"])
        elif "id" in args:
            revoked = tokens.revoke(args["id"], where="args.id", by_name=True)
        else:
            revoked = tokens.revoke(entry.get("name"), where="args.entry.name", by_name=True)
        ctx.audit_detail = f"API token {revoked['id']} of {revoked['username']!r} revoked"
        return revoked
    raise ValidationFailed("action", f"must be add, list or delete, not {action!r}")


def _required(kargs: dict[str, Any], key: str) -> Any:
    if key not in kargs:
        raise ValidationFailed(key, "required")
    return kargs[key]
