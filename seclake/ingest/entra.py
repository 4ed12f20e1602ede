"""Microsoft Entra ID (Azure AD) sign-in logs in common ECS names.

Two shapes reach a log store: the Graph API's ``signIn`` resource
(``userPrincipalName``, ``ipAddress``, ``status.errorCode``,
``createdDateTime`` at the top) and the Azure Monitor diagnostic export
through Event Hubs (``category: SignInLogs``, ``time``, ``callerIpAddress``,
and the same sign-in under ``properties``). Either way the record keeps
what it has and gains ``event.*`` (authentication/start, outcome from
``errorCode``: 0 is success), ``user.*``, ``source.ip``, ``source.geo.*``
and ``user_agent.original``. Names follow Elastic's Azure module.
docs/fields.md.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import compact, dig, ip, merge, number, text

_CATEGORIES = frozenset({"SignInLogs", "NonInteractiveUserSignInLogs", "ServicePrincipalSignInLogs",
                         "ManagedIdentitySignInLogs"})


def matches(fields: dict[str, Any]) -> bool:
    if _exported(fields):
        return True
    return "userPrincipalName" in fields and "createdDateTime" in fields and isinstance(fields.get("status"), dict)


def enrich(fields: dict[str, Any], dataset: str = "event") -> Any:
    """Add the common names to an Entra ID sign-in's ``@fields`` (in place); returns its event time."""
    exported = _exported(fields)
    sign_in = fields["properties"] if exported else fields
    code = number(dig(sign_in, "status", "errorCode"))
    if code is None and exported:
        code = number(fields.get("resultType"))
    address = ip(sign_in.get("ipAddress")) or (ip(fields.get("callerIpAddress")) if exported else None)
    common = {
        "event": {"category": "authentication", "type": "start", "action": "sign-in",
                  "outcome": None if code is None else ("success" if code == 0 else "failure"),
                  "code": None if code is None else str(code),
                  "reason": text(dig(sign_in, "status", "failureReason")) if code else None,
                  "id": text(sign_in.get("id"))},
        "user": {"name": text(sign_in.get("userPrincipalName")), "full_name": text(sign_in.get("userDisplayName")),
                 "id": text(sign_in.get("userId"))},
        "source": {"ip": address,
                   "geo": {"city_name": text(dig(sign_in, "location", "city")),
                           "country_iso_code": text(dig(sign_in, "location", "countryOrRegion"))}},
        "user_agent": {"original": text(sign_in.get("userAgent"))},
        "cloud": {"provider": "azure"},
        "observer": {"vendor": "Microsoft", "product": "Entra ID"},
    }
    merge(fields, compact(common))
    return fields.get("time") if exported else fields.get("createdDateTime")


def _exported(fields: dict[str, Any]) -> bool:
    """The Azure Monitor export shape: the sign-in under ``properties``."""
    category = fields.get("category")
    return isinstance(category, str) and category in _CATEGORIES and isinstance(fields.get("properties"), dict)
