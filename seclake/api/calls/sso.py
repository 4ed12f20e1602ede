"""Calls of sign-in with an identity provider (service/oidc.py, api/sso.py)."""

from __future__ import annotations

from typing import Any

from seclake.api.registry import CallContext, call
from seclake.api.reply import SessionRecord, SsoProviders, session_record
from seclake.api.request import Empty, SsoSessionRequest
from seclake.errors import Unauthorized
from seclake.service.oidc import SignInFailed


@call("auth/ssoProviders", permission="public", request=Empty, reply=SsoProviders,
      summary="The identity providers one may sign in with, for the sign-in page.")
def sso_providers(ctx: CallContext, args: Empty) -> Any:
    return {
        "providers": [
            {"name": p.name, "displayName": p.label, "signInUrl": f"/auth/oidc/{p.name}/start"}
            for p in ctx.services.oidc.providers()
        ],
        "localPasswords": ctx.settings.local_passwords,
    }


@call("auth/ssoSession", permission="public", request=SsoSessionRequest, reply=SessionRecord,
      summary="The session a sign-in with an identity provider opened, for its one-time code (single use).")
def sso_session(ctx: CallContext, args: SsoSessionRequest) -> Any:
    try:
        signed_in = ctx.services.oidc.session(args.code)
    except SignInFailed as failure:
        raise Unauthorized(str(failure)) from failure
    ctx.audit_username = signed_in.user.username
    return session_record(signed_in)
