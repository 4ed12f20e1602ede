"""Calls of the auth/ family: login, users, API tokens."""

from __future__ import annotations

from typing import Any

from seclake.api.authentication import token_from
from seclake.api.registry import CallContext, call
from seclake.api.reply import SessionRecord, TokenList, TokenRecord, UserRecord, session_record, token_record, user_record
from seclake.api.request import AddressRequest, Empty, LoginRequest, TokenRequest, UsernameRequest, UserRequest
from seclake.errors import ValidationFailed
from seclake.model import validated
from seclake.service.policies import changes
from seclake.service.secret import SESSION_PREFIX
from seclake.service.tokens import TokenInput

# The fields of a user record that decide what its caller may do.
ACCESS_FIELDS = ("roles", "dataPolicies", "APIPolicies", "disabled")


@call("auth/login", permission="public", request=LoginRequest, reply=SessionRecord,
      summary="Sign in; the session token goes in Servicetoken.")
def login(ctx: CallContext, args: LoginRequest) -> Any:
    # The call's audit entry names the user tried, as the login entry does.
    ctx.audit_username = args.username
    return session_record(ctx.services.login.login(args.username, args.password, ctx.client))


@call("auth/logout", permission="public", request=Empty, reply=dict[str, bool],
      summary="End the session of the token sent.")
def logout(ctx: CallContext, args: Empty) -> Any:
    """End the session whose token the request carries (the web sign-out).

    Answered alike whether or not the token was a live session: logging out
    twice, or with an API token (which is revoked with auth/api_token, not
    here), tells nothing and changes nothing.
    """
    token = token_from(ctx.headers)
    if token and token.startswith(SESSION_PREFIX):
        ctx.services.sessions.end(token)
    return {"loggedOut": True}


@call("auth/userUnlock", permission="admin", request=UsernameRequest, reply=dict[str, Any],
      summary="End a username's login lockouts.")
def user_unlock(ctx: CallContext, args: UsernameRequest) -> Any:
    """End the lockouts of a username after failed logins (from any address),
    and those of the addresses it was refused from."""
    ended = ctx.services.login.unlock(args.username)
    ctx.audit_detail = f"user {args.username!r} unlocked ({ended} lockout counter(s) cleared)"
    return {"username": args.username, "cleared": ended}


@call("auth/addressUnlock", permission="admin", request=AddressRequest, reply=dict[str, Any],
      summary="End a client address's login lockouts.")
def address_unlock(ctx: CallContext, args: AddressRequest) -> Any:
    """End every lockout from one address: its own (failures over every
    username) and each username's there."""
    ended = ctx.services.login.unlock_address(args.address)
    ctx.audit_detail = f"address {args.address} unlocked ({ended} lockout counter(s) cleared)"
    return {"address": args.address, "cleared": ended}


@call("auth/userList", permission="admin", request=Empty, reply=dict[str, list[UserRecord]],
      summary="Every user, as {users}.")
def user_list(ctx: CallContext, args: Empty) -> Any:
    return {"users": [user_record(u) for u in ctx.services.users.list()]}


@call("auth/getUser", permission="admin", request=UsernameRequest, reply=dict[str, UserRecord],
      summary="One user, as {user}.")
def get_user(ctx: CallContext, args: UsernameRequest) -> Any:
    # The clients read response.user.
    return {"user": user_record(ctx.services.users.get(args.username))}


@call("auth/userAdd", permission="admin", request=UserRequest, reply=UserRecord,
      summary="Add a user; without a password it cannot sign in with one.")
def user_add(ctx: CallContext, args: UserRequest) -> Any:
    added = user_record(ctx.services.users.add(args.user, where="user"))
    ctx.audit_detail = f"user {added['username']!r} added: " + changes(None, added, ACCESS_FIELDS)
    if not added["passwordSet"]:
        added = {**added, "note": (
            f"{added['username']!r} has no password: signing in with a password is refused until one is set "
            f"(auth/userUpdate with user.password, or `seclake user passwd {added['username']}`)"
        )}
    return added


@call("auth/userUpdate", permission="admin", request=UserRequest, reply=UserRecord,
      summary="Change some fields of user.username.")
def user_update(ctx: CallContext, args: UserRequest) -> Any:
    """Change the fields sent of ``user`` (named by ``user.username``)."""
    users = ctx.services.users
    before = user_record(users.get(args.user.username))
    after = user_record(users.update(args.user, where="user"))
    # Access changes are named in the audit entry; other fields by name only.
    sent = args.user.changes()
    what = [changes(before, after, ACCESS_FIELDS)] if any(before[f] != after[f] for f in ACCESS_FIELDS) else []
    what += [f for f in sorted(sent) if f not in ACCESS_FIELDS and f in after and before[f] != after[f]]
    what += ["password"] if "password" in sent else []
    ctx.audit_detail = f"user {after['username']!r}: " + ("; ".join(what) or "no change")
    return after


@call("auth/userDelete", permission="admin", request=UsernameRequest, reply=dict[str, str],
      summary="Delete a user.")
def user_delete(ctx: CallContext, args: UsernameRequest) -> Any:
    ctx.services.users.delete(args.username)
    ctx.audit_detail = f"user {args.username!r} deleted"
    return {"deleted": args.username}


@call("auth/api_token", permission="admin", request=TokenRequest, reply=TokenRecord | TokenList,
      summary="API tokens: add (shown once), list (deleted ones with revoked: true), delete.")
def api_token(ctx: CallContext, args: TokenRequest) -> Any:
    """``action`` add (token shown once), list (never shows tokens; deleted
    ones only with ``revoked``) or delete."""
    tokens = ctx.services.tokens
    # The clients send {action, args: {entry: {name, description, roles}}} to
    # add, {action, args: {id: <name or id>}} or args.entry.name to delete;
    # seclake's own form puts the same fields at the top of kargs.
    clients = args.args
    entry = clients.entry if clients is not None else None
    if args.action == "add":
        sent = {} if entry is None else entry.model_dump(exclude_unset=True)
        sent |= {k: getattr(args, k) for k in args.model_fields_set if k in TokenInput.model_fields}
        new = validated(TokenInput, sent, "kargs")
        assert ctx.caller is not None
        created = token_record(tokens.create(new.username or ctx.caller.username, new), ctx.services.clock())
        ctx.audit_detail = (
            f"API token {created['id']} for {created['username']!r} added"
            + "".join(f"; {k}={v}" for k in ("dataPolicies", "APIPolicies") if (v := created[k]))
        )
        return created
    if args.action == "list":
        now = ctx.services.clock()
        listed = [token_record(t, now) for t in tokens.list(args.username, revoked=args.revoked)]
        # entries: what the clients read; tokens: seclake's earlier name.
        return {"entries": listed, "tokens": listed}
    if args.id is not None:
        view = tokens.revoke(args.id)
    elif clients is not None and clients.id is not None:
        view = tokens.revoke(clients.id, where="args.id", by_name=True)
    elif entry is not None and entry.name:
        view = tokens.revoke(entry.name, where="args.entry.name", by_name=True)
    else:
        raise ValidationFailed("id", "is required: the id of the token to delete (see action list)")
    # Revoked, and so gone from the list; the row stays for "revoked" answers.
    deleted = token_record(view, ctx.services.clock())
    ctx.audit_detail = f"API token {deleted['id']} of {deleted['username']!r} deleted"
    return deleted
