"""Notifications (docs/alerting.md): rules, destinations, deliveries; and the
Go clients' ``platform_notification_endpoint_dao``.

* ``notify/rule_dao {action: list|get|add|update|delete, rule?, name?}``
* ``notify/destination_dao {action: list|get|add|update|delete, destination?, name?}``:
  secrets are accepted, never answered (``secretsSet`` names those set).
* ``notify/delivery_list {status?, limit?, before?}``: the outbox, newest first, with counts.
* ``notify/resend {id}``: a failed (or sent) delivery again.
* ``notify/test {name}``: a test notification to one destination, now; answers what happened.
* ``ds/platform_notification_endpoint_dao {action: list|get|add|update|delete,
  args: {id} | {entry: {name, integration, action, email: {to, cc}, slack: {...}}}}``:
  the Go ``ingext_api`` NotificationService's endpoints, kept as email and
  Slack destinations (``add`` answers ``{id}``, ``list`` ``{entries}``, ``get`` ``{entry}``).

Every call needs the admin permission: destinations hold where alerts go
and with which credentials. The request models live here, beside the only
calls that read them (the services' own models, ``AlertRule`` and
``DestinationInput``, are the records).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from seclake.api.registry import CallContext, call
from seclake.errors import ValidationFailed
from seclake.model import Closed, Open, Text, Whole
from seclake.notify.alertrule import AlertRule, Name
from seclake.notify.outbox import STATUSES

ACTIONS = ("list", "get", "add", "update", "delete")
MAX_LIST = 1000
INTEGRATIONS = {"email": "Email", "slack": "Slack", "webhook": "Webhook", "teams": "Teams",
                "pagerduty": "PagerDuty", "syslog": "Syslog"}


class RuleDaoRequest(Closed):
    action: Literal[ACTIONS] = Field(description="list, get, add, update or delete.")  # type: ignore[valid-type]
    rule: AlertRule | None = Field(None, description="add/update: the notification rule.")
    name: Name | None = Field(None, description="get/delete: the rule's name.")


class DestinationDaoRequest(Closed):
    action: Literal[ACTIONS] = Field(description="list, get, add, update or delete.")  # type: ignore[valid-type]
    destination: dict[str, Any] | None = Field(None, description=(
        "add/update: the destination (docs/alerting.md); update keeps the secrets it leaves out."))
    name: Name | None = Field(None, description="get/delete: the destination's name.")


class DeliveryListRequest(Closed):
    status: Literal[STATUSES] | None = Field(None, description="Only pending, sent or failed ones.")  # type: ignore[valid-type]
    limit: Annotated[Whole, Field(ge=1, le=MAX_LIST)] = Field(100, description="At most this many.")
    before: Annotated[Whole, Field(ge=1)] | None = Field(None, description="Deliveries older than this id (paging).")


class ResendRequest(Closed):
    id: Annotated[Whole, Field(ge=1)] = Field(description="The delivery's id.")


class TestRequest(Closed):
    name: Name = Field(description="The destination's name.")


class EndpointEmail(Open):
    to: Annotated[list[Text], Field(max_length=50)] | None = Field(None, description="Recipients.")
    cc: Annotated[list[Text], Field(max_length=50)] | None = Field(None, description="Copies.")


class EndpointSlack(Open):
    channel: Annotated[Text, Field(max_length=256)] | None = Field(None, description="The channel.")
    channels: Annotated[list[Annotated[Text, Field(max_length=256)]], Field(max_length=50)] | None = Field(
        None, description="Channels, kept as sent.")
    integrationName: Annotated[Text, Field(max_length=256)] | None = Field(
        None, description="The Slack integration's name, kept as sent.")


class EndpointEntry(Open):
    """The Go clients' ``EndpointConfig``."""

    name: Name = Field(description="The endpoint's name (a destination's).")
    integration: Literal["Email", "Slack"] = Field(description="Email or Slack.")
    action: Annotated[Text, Field(max_length=256)] = Field("", description="The action name, kept as sent.")
    email: EndpointEmail | None = Field(None, description="Email: to and cc.")
    slack: EndpointSlack | None = Field(None, description="Slack: channel, channels, integrationName.")


class EndpointArgs(Open):
    id: Name | None = Field(None, description="get/delete: the endpoint's name.")
    entry: EndpointEntry | None = Field(None, description="add/update: the endpoint.")


class EndpointDaoRequest(Open):
    action: Literal[ACTIONS] = Field(description="list, get, add, update or delete.")  # type: ignore[valid-type]
    args: EndpointArgs | None = Field(None, description="{id: name} or {entry: endpoint}.")


def _audit(ctx: CallContext, what: str) -> None:
    ctx.audit_detail = what[:500]


@call("notify/rule_dao", permission="admin", request=RuleDaoRequest, reply=dict[str, Any],
      summary="List, get, add, update, delete notification rules.")
def rule_dao(ctx: CallContext, args: RuleDaoRequest) -> dict[str, Any]:
    alerting = ctx.services.alerting
    if args.action == "list":
        rules = [r.model_dump() for r in alerting.rules()]
        return {"action": "list", "total": len(rules), "rules": rules}
    if args.action in ("get", "delete"):
        name = args.name or (args.rule.name if args.rule is not None else None)
        if name is None:
            raise ValidationFailed("name", "is required: the rule's name")
        if args.action == "get":
            return {"action": "get", "rule": alerting.rule(name).model_dump()}
        alerting.delete_rule(name)
        _audit(ctx, f"notification rule {name!r}: delete")
        return {"action": "delete", "name": name}
    if args.rule is None:
        raise ValidationFailed("rule", "is required: the notification rule")
    rule = alerting.put_rule(args.rule, create=args.action == "add")
    _audit(ctx, f"notification rule {rule.name!r}: {args.action}")
    return {"action": args.action, "name": rule.name, "rule": rule.model_dump()}


@call("notify/destination_dao", permission="admin", request=DestinationDaoRequest, reply=dict[str, Any],
      summary="List, get, add, update, delete notification destinations (secrets never answered).")
def destination_dao(ctx: CallContext, args: DestinationDaoRequest) -> dict[str, Any]:
    alerting = ctx.services.alerting
    if args.action == "list":
        found = alerting.destinations()
        return {"action": "list", "total": len(found), "destinations": found}
    if args.action in ("get", "delete"):
        name = args.name
        if name is None:
            raise ValidationFailed("name", "is required: the destination's name")
        if args.action == "get":
            return {"action": "get", "destination": alerting.destination(name)}
        alerting.delete_destination(name)
        _audit(ctx, f"destination {name!r}: delete")
        return {"action": "delete", "name": name}
    if args.destination is None:
        raise ValidationFailed("destination", "is required: the destination")
    shown = alerting.put_destination(args.destination, create=args.action == "add", where="destination")
    _audit(ctx, f"destination {shown['name']!r}: {args.action}")
    return {"action": args.action, "name": shown["name"], "destination": shown}


@call("notify/delivery_list", permission="admin", request=DeliveryListRequest, reply=dict[str, Any],
      summary="The notification outbox: deliveries newest first (pending, sent, failed) and counts.")
def delivery_list(ctx: CallContext, args: DeliveryListRequest) -> dict[str, Any]:
    rows, counts = ctx.services.alerting.deliveries(args.status, args.limit, args.before)
    return {"deliveries": rows, "counts": counts}


@call("notify/resend", permission="admin", request=ResendRequest, reply=dict[str, Any],
      summary="Send a delivery again (a failed one, retries afresh).")
def resend(ctx: CallContext, args: ResendRequest) -> dict[str, Any]:
    record = ctx.services.alerting.resend(args.id)
    _audit(ctx, f"delivery {args.id}: resend")
    return {"delivery": record}


@call("notify/test", permission="admin", request=TestRequest, reply=dict[str, Any],
      summary="Send a test notification to one destination now.")
def test_destination(ctx: CallContext, args: TestRequest) -> dict[str, Any]:
    outcome = ctx.services.alerting.test(args.name)
    _audit(ctx, f"destination {args.name!r}: test " + ("sent" if outcome["sent"] else "failed"))
    return outcome


def endpoint_of(d: dict[str, Any]) -> dict[str, Any]:
    """A destination in the Go clients' ``EndpointConfig`` shape."""
    out: dict[str, Any] = {"name": d["name"], "integration": INTEGRATIONS.get(d.get("kind", ""), d.get("kind", "")),
                           "action": d.get("action") or ""}
    if d.get("kind") == "email":
        out["email"] = {"to": d.get("to") or [], "cc": d.get("cc") or []}
    if d.get("kind") == "slack":
        out["slack"] = {k: d[k] for k in ("channel", "channels", "integrationName") if d.get(k)}
    return out


def _destination_of(entry: EndpointEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"name": entry.name, "kind": entry.integration.lower(), "action": entry.action or None}
    if entry.integration == "Email":
        email = entry.email or EndpointEmail()
        out["to"], out["cc"] = email.to or [], email.cc or []
    else:
        slack = entry.slack or EndpointSlack()
        out.update({k: v for k, v in (("channel", slack.channel), ("channels", slack.channels),
                                      ("integrationName", slack.integrationName)) if v})
    return {k: v for k, v in out.items() if v is not None}


@call("ds/platform_notification_endpoint_dao", permission="admin", request=EndpointDaoRequest, reply=dict[str, Any],
      summary="The clients' notification endpoints (email and Slack destinations).")
def endpoint_dao(ctx: CallContext, args: EndpointDaoRequest) -> dict[str, Any]:
    alerting = ctx.services.alerting
    a = args.args or EndpointArgs()
    if args.action == "list":
        return {"entries": [endpoint_of(d) for d in alerting.destinations()]}
    if args.action in ("get", "delete"):
        name = a.id or (a.entry.name if a.entry is not None else None)
        if name is None:
            raise ValidationFailed("args.id", "is required: the endpoint's name")
        if args.action == "get":
            return {"entry": endpoint_of(alerting.destination(name))}
        alerting.delete_destination(name)
        _audit(ctx, f"destination {name!r}: delete")
        return {}
    if a.entry is None:
        raise ValidationFailed("args.entry", "is required: the endpoint {name, integration, action, email | slack}")
    shown = alerting.put_destination(_destination_of(a.entry), create=args.action == "add", where="args.entry")
    _audit(ctx, f"destination {shown['name']!r}: {args.action}")
    return {"id": shown["name"]}
