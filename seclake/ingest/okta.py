"""Okta System Log events in common ECS names.

An Okta event names what happened in ``eventType`` (``user.session.start``,
``user.authentication.auth_via_mfa``...), who in ``actor``, from where in
``client`` and how it went in ``outcome.result``. The record keeps all of it
and gains ``event.*``, ``user.*``, ``source.*`` and ``user_agent.original``.
Sessions and authentication events are ``authentication``; user lifecycle,
group membership and policy changes are ``iam``. Names follow Elastic's
Okta module. docs/fields.md.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import compact, dig, ip, merge, text

_OUTCOMES = {"SUCCESS": "success", "ALLOW": "success", "FAILURE": "failure", "DENY": "failure"}


def matches(fields: dict[str, Any]) -> bool:
    return isinstance(fields.get("eventType"), str) and isinstance(fields.get("actor"), dict) and "published" in fields


def enrich(fields: dict[str, Any], dataset: str = "event") -> Any:
    """Add the common names to an Okta record's ``@fields`` (in place); returns its event time."""
    kind = fields["eventType"]
    if kind.startswith(("user.session.", "user.authentication.", "policy.evaluate_sign_on")):
        category, event_type = "authentication", ("end" if kind == "user.session.end" else "start")
    elif kind.startswith(("user.lifecycle.", "group.user_membership.", "user.account.", "application.user_membership.")):
        category = "iam"
        event_type = ("creation" if kind.endswith((".create", ".add")) else
                      "deletion" if kind.endswith((".delete", ".remove")) else "change")
    else:
        category = event_type = None
    result = dig(fields, "outcome", "result")
    targets = fields.get("target")
    target_user = None
    if isinstance(targets, list):
        for target in targets[:16]:
            if isinstance(target, dict) and target.get("type") == "User":
                target_user = text(target.get("alternateId"))
                break
    common = {
        "event": {"action": kind[:256], "category": category, "type": event_type,
                  "outcome": _OUTCOMES.get(result) if isinstance(result, str) else None,
                  "reason": text(dig(fields, "outcome", "reason")), "id": text(fields.get("uuid"))},
        "user": {"name": text(dig(fields, "actor", "alternateId")), "full_name": text(dig(fields, "actor", "displayName")),
                 "id": text(dig(fields, "actor", "id")), "target": {"name": target_user}},
        "source": {"ip": ip(dig(fields, "client", "ipAddress")),
                   "geo": {"city_name": text(dig(fields, "client", "geographicalContext", "city")),
                           "country_name": text(dig(fields, "client", "geographicalContext", "country"))}},
        "user_agent": {"original": text(dig(fields, "client", "userAgent", "rawUserAgent"))},
        "observer": {"vendor": "Okta", "product": "Okta System Log"},
    }
    merge(fields, compact(common))
    return fields.get("published")
