"""Cloud sign-ins: Okta System Log events (JSON), as the System Log API returns them.

One event per line, in Okta's own shape (``actor``, ``client``,
``eventType``, ``outcome``, ``published``...), so the Okta mapping gives
the records the same ``user.name``, ``source.ip`` and ``event.outcome`` as
sshd and Windows logons.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import orjson

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant

VENDOR = "okta"
DATASET = "event"

# (eventType, displayMessage, legacyEventType of a success, of a failure)
SIGN_ON = ("user.session.start", "User login to Okta", "core.user_auth.login_success",
            "core.user_auth.login_failed")
_SSO = ("user.authentication.sso", "User single sign on to app", "app.auth.sso", "app.auth.sso")
_MFA = ("user.authentication.auth_via_mfa", "Authentication of user via MFA", "core.user.factor.attempt_success",
        "core.user.factor.attempt_fail")
_END = ("user.session.end", "User logout from Okta", "core.user_auth.logout_success", None)
_APPS = ("Salesforce.com", "Slack", "Atlassian Cloud", "Zoom", "GitHub Enterprise Cloud", "Microsoft Office 365")
_BROWSERS = (("CHROME", "Windows 10", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
              "(KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"),
             ("EDGE", "Windows 10", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
              "(KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0"),
             ("SAFARI", "Mac OS X", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 "
              "(KHTML, like Gecko) Version/17.4 Safari/605.1.15"))


def _id(*parts: object) -> str:
    return hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=10).hexdigest()


def home_ip(user: str) -> str:
    """Where a user signs in from outside the office: one stable consumer address each."""
    h = hashlib.blake2b(user.encode(), digest_size=3).digest()
    return f"86.{h[0]}.{h[1]}.{1 + h[2] % 254}"


def format_line(ts: int, tn: Tenant, user: str, ip: str, kind: tuple[str, str, str, str | None], success: bool,
                browser: int = 0, app: str | None = None, reason: str | None = None) -> str:
    event_type, message, legacy_ok, legacy_fail = kind
    family, os_name, agent = _BROWSERS[browser % len(_BROWSERS)]
    email = f"{user}@{tn.name}.example.com"
    event = {
        "actor": {"id": "00u" + _id(tn.name, user)[:17], "type": "User", "alternateId": email,
                  "displayName": user.capitalize()},
        "client": {"userAgent": {"rawUserAgent": agent, "os": os_name, "browser": family}, "zone": "null",
                   "device": "Computer", "ipAddress": ip},
        "authenticationContext": {"externalSessionId": "102" + _id(user, ts)[:22]},
        "displayMessage": message,
        "eventType": event_type,
        "outcome": {"result": "SUCCESS"} if success else {"result": "FAILURE",
                                                          "reason": reason or "INVALID_CREDENTIALS"},
        "published": Minute(ts).iso_at(ts),
        "severity": "INFO" if success else "WARN",
        "legacyEventType": legacy_ok if success else legacy_fail,
        "transaction": {"type": "WEB", "id": _id("tx", ts, user)[:20]},
        "uuid": _uuid(ts, user),
        "version": "0",
        "request": {"ipChain": [{"ip": ip, "version": "V4"}]},
        "target": [{"id": "0oa" + _id(app)[:17], "type": "AppInstance", "alternateId": app, "displayName": app}]
        if app else None,
    }
    return orjson.dumps(event).decode()


def _uuid(ts: int, user: str) -> str:
    h = _id("uuid", ts, user) + _id(user, ts, "uuid")
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class Okta(Source):
    vendor = VENDOR
    dataset = DATASET

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        i = tn.ws.draw(rnd)
        user = tn.owners[i]
        ip = tn.public_ip if rnd() < 0.8 else home_ip(user)
        browser = int(rnd() * 3)
        r = rnd()
        if r < 0.45:
            ok = rnd() >= 0.06  # mistyped passwords
            return format_line(ts, tn, user, ip, SIGN_ON, ok, browser)
        if r < 0.8:
            return format_line(ts, tn, user, ip, _SSO, True, browser, app=_APPS[int(rnd() * len(_APPS))])
        if r < 0.93:
            ok = rnd() >= 0.04
            return format_line(ts, tn, user, ip, _MFA, ok, browser, reason=None if ok else "INVALID_FACTOR")
        return format_line(ts, tn, user, ip, _END, True, browser)
