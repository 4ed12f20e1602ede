"""Destinations: where notifications go (webhook, Slack, Teams, PagerDuty, email, syslog CEF).

One model for every kind (``DestinationInput``: the fields a kind needs are
checked by ``_complete``), read from requests, the Go clients' endpoint
entries and YAML files alike. What is secret (signing secrets, chat webhook
URLs, the PagerDuty routing key, header values, the SMTP password) is sealed
with the deployment's key (``cipher.py``) in ``notify_destinations.secret``
and never shown: a view names which secrets are set, not their values. An
update that leaves a secret out keeps the stored one.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError
from sqlalchemy import JSON, BigInteger, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from seclake.db.base import Base
from seclake.model import Closed, Flag, Text
from seclake.notify.alertrule import Name

KINDS = ("webhook", "slack", "teams", "pagerduty", "email", "syslog")
SECRET_FIELDS = ("secret", "routingKey", "headers", "smtpPassword")
# Slack's and Teams' incoming-webhook URL is the credential itself.
SECRET_URL_KINDS = ("slack", "teams")
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
MAX_URL = 2048
MAX_HEADERS = 20
HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
RESERVED_HEADERS = frozenset({"content-type", "content-length", "host", "seclake-signature", "seclake-delivery",
                              "transfer-encoding", "connection"})
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
Address = Annotated[Text, Field(min_length=3, max_length=320, pattern=r"^[^@\s<>,;\"]+@[^@\s<>,;\"]+$")]
Short = Annotated[Text, Field(max_length=256)]


class DestinationInput(Closed):
    """A destination (docs/alerting.md, "Destinations")."""

    name: Name = Field(description="The destination's name (its key).")
    kind: Literal[KINDS] = Field(description="webhook, slack, teams, pagerduty, email or syslog.")  # type: ignore[valid-type]
    description: Annotated[Text, Field(max_length=1000)] = Field("", description="What it is for.")
    enabled: Flag = Field(True, description="A disabled destination fails its deliveries (resendable).")
    url: Annotated[Text, Field(max_length=MAX_URL)] | None = Field(None, description=(
        "webhook: the URL POSTed to; slack/teams: the incoming webhook URL (secret); pagerduty: the Events API "
        "v2 URL (default PagerDuty's); syslog: udp://, tcp:// or tls://host:port."))
    headers: Annotated[dict[Short, Short], Field(max_length=MAX_HEADERS)] | None = Field(
        None, description="webhook: extra headers (their values are secret).")
    secret: Annotated[Text, Field(min_length=16, max_length=256)] | None = Field(
        None, description="webhook: the signing secret of the Seclake-Signature header.")
    routingKey: Annotated[Text, Field(min_length=1, max_length=256)] | None = Field(
        None, description="pagerduty: the integration's routing key (secret).")
    to: Annotated[list[Address], Field(max_length=50)] = Field(default_factory=list, description="email: recipients.")
    cc: Annotated[list[Address], Field(max_length=50)] = Field(default_factory=list, description="email: copies.")
    smtpUrl: Annotated[Text, Field(max_length=MAX_URL)] | None = Field(None, description=(
        "email: smtp://, smtp+starttls:// or smtps://[user@]host[:port] (default: the smtp_url setting)."))
    smtpPassword: Annotated[Text, Field(max_length=256)] | None = Field(None, description="email: SMTP password (secret).")
    sender: Address | None = Field(None, description="email: From (default: the smtp_from setting).")
    channel: Short | None = Field(None, description="slack: the channel (the webhook's own when unset).")
    caPem: Annotated[Text, Field(max_length=64_000)] | None = Field(
        None, description="syslog over tls: the PEM of the CA to trust (the system's when unset).")
    # The Go clients' endpoint fields, kept as they sent them (api/calls/notifications.py).
    action: Short | None = Field(None, description="The Go clients' endpoint action name, kept as sent.")
    integrationName: Short | None = Field(None, description="The Go clients' Slack integration name, kept as sent.")
    channels: Annotated[list[Short], Field(max_length=50)] = Field(
        default_factory=list, description="The Go clients' Slack channels, kept as sent.")

    @model_validator(mode="after")
    def _complete(self) -> DestinationInput:
        kind = self.kind
        if kind in ("webhook", "teams", "syslog") and self.url is None:
            raise PydanticCustomError("url", "a {kind} destination needs url", {"kind": kind})
        for name, value in (self.headers or {}).items():
            if not HEADER_NAME.fullmatch(name) or name.lower() in RESERVED_HEADERS or CONTROL.search(value):
                raise PydanticCustomError("header", "header {name!r}: a name of letters, digits and -, not one "
                                          "seclake sets, and a value without control characters", {"name": name[:64]})
        if self.url is not None:
            _check_url(kind, self.url)
        if kind == "email" and not self.to:
            raise PydanticCustomError("to", "an email destination needs at least one address in to")
        if self.smtpUrl is not None:
            _check_smtp(self.smtpUrl)
        return self


def _check_url(kind: str, url: str) -> None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise PydanticCustomError("url", "url is not a URL") from None
    if kind == "syslog":
        if parts.scheme not in ("udp", "tcp", "tls") or not parts.hostname or port is None:
            raise PydanticCustomError("url", "a syslog url is udp://, tcp:// or tls://host:port")
    elif parts.scheme not in ("http", "https") or not parts.hostname:
        raise PydanticCustomError("url", "url must be an http:// or https:// URL")


def _check_smtp(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise PydanticCustomError("smtp", "smtpUrl is not a URL") from None
    if parts.scheme not in ("smtp", "smtp+starttls", "smtps") or not parts.hostname:
        raise PydanticCustomError("smtp", "smtpUrl is smtp://, smtp+starttls:// or smtps://[user@]host[:port]")


class DestinationRow(Base):
    __tablename__ = "notify_destinations"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    secret: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    updated_on: Mapped[int] = mapped_column(BigInteger)


@dataclasses.dataclass(frozen=True)
class Target:
    """A destination as the sender uses it: its settings with its secrets opened."""

    name: str
    kind: str
    config: dict[str, Any]
    secrets: dict[str, Any]

    def get(self, field: str, default: Any = None) -> Any:
        if field in self.secrets:
            return self.secrets[field]
        value = self.config.get(field)
        return default if value is None else value


def split(d: DestinationInput) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what is shown, what is sealed) of a destination."""
    data = d.model_dump(exclude_none=True)
    secrets = {f: data.pop(f) for f in SECRET_FIELDS if f in data}
    if d.kind in SECRET_URL_KINDS and "url" in data:
        secrets["url"] = data.pop("url")
    return data, secrets


def view(config: dict[str, Any], secret_names: list[str]) -> dict[str, Any]:
    """A destination as shown: never a secret's value, only that it is set."""
    return {**config, "secretsSet": sorted(secret_names)}
