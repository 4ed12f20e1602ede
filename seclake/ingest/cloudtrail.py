"""AWS CloudTrail events (one event per line) in common ECS names.

Shippers send CloudTrail one event per line (the S3 files' ``Records``
array split). The record keeps CloudTrail's names and gains
``event.action`` (``eventName``), ``event.provider`` (``eventSource``),
``event.outcome`` (failure when ``errorCode`` is set, or a console sign-in
says so), ``user.*``, ``source.ip``, ``user_agent.original`` and
``cloud.*``. Sign-ins and token calls are ``authentication``; calls to IAM
are ``iam``. Names follow Elastic's AWS module. docs/fields.md.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import compact, dig, ip, merge, text

_SIGN_IN = frozenset({"ConsoleLogin", "CheckMfa", "GetSessionToken", "AssumeRole", "AssumeRoleWithSAML",
                      "AssumeRoleWithWebIdentity", "GetFederationToken", "ExternalIdPDirectoryLogin"})


def matches(fields: dict[str, Any]) -> bool:
    return "eventSource" in fields and "eventName" in fields and "eventVersion" in fields


def enrich(fields: dict[str, Any], dataset: str = "event") -> Any:
    """Add the common names to a CloudTrail record's ``@fields`` (in place); returns its event time."""
    name = text(fields.get("eventName"))
    identity = fields.get("userIdentity") if isinstance(fields.get("userIdentity"), dict) else {}
    error = text(fields.get("errorCode"))
    console = dig(fields, "responseElements", "ConsoleLogin")
    if error is not None or console == "Failure":
        outcome = "failure"
    else:
        outcome = "success"
    event: dict[str, Any] = {"action": name, "provider": text(fields.get("eventSource")), "outcome": outcome,
                             "id": text(fields.get("eventID")), "reason": text(fields.get("errorMessage")) or error}
    if name in _SIGN_IN:
        event.update({"category": "authentication", "type": "start"})
    elif fields.get("eventSource") == "iam.amazonaws.com" and name:
        event.update({"category": "iam", "type": "creation" if name.startswith(("Create", "Add", "Attach", "Put"))
                      else "deletion" if name.startswith(("Delete", "Remove", "Detach")) else "change"})
    arn = text(identity.get("arn"))
    user_name = (text(identity.get("userName")) or text(dig(identity, "sessionContext", "sessionIssuer", "userName"))
                 or (arn.rsplit("/", 1)[-1] if arn and "/" in arn else None))
    address = text(fields.get("sourceIPAddress"))  # an address, or the AWS service that called
    common = {
        "event": event,
        "user": {"name": user_name, "id": text(identity.get("principalId")),
                 "target": {"name": text(dig(fields, "requestParameters", "userName"))}},
        "source": {"ip": ip(address), "address": address},
        "user_agent": {"original": text(fields.get("userAgent"))},
        "cloud": {"provider": "aws", "region": text(fields.get("awsRegion")),
                  "account": {"id": text(fields.get("recipientAccountId")) or text(identity.get("accountId"))}},
        "error": {"code": error, "message": text(fields.get("errorMessage"))},
        "observer": {"vendor": "AWS", "product": "CloudTrail"},
    }
    merge(fields, compact(common))
    return fields.get("eventTime")
