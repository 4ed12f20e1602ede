"""Notification rules: *when* (a behavior made, a summary reaching a score
level, a summary's status changing) and *send to* (destination names).

A rule is read from a request or a YAML file alike (``AlertRule``), stored as
its JSON in ``notify_rules`` (migration 0015), and tested against what the
detector saved (``matches_behavior``, ``matches_summary``). "Alert rule" keeps
it apart from the behavior rules of ``detect/rule.py``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError
from sqlalchemy import JSON, BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from seclake.db.base import Base
from seclake.detect.summary import STATUSES
from seclake.model import Closed, Flag, Text, Whole

MAX_NAME = 100
MAX_LIST = 100
MAX_TEMPLATE = 10_000
MAX_THROTTLE = 7 * 86_400
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.:@+-]*")
EVENTS = ("behavior", "summary_level", "summary_status")


def check_name(value: str) -> str:
    if not NAME.fullmatch(value):
        raise PydanticCustomError(
            "name", "must start with a letter or digit and hold only letters, digits, space and _ . : @ + -")
    return value


Name = Annotated[Text, Field(min_length=1, max_length=MAX_NAME), AfterValidator(check_name)]
Item = Annotated[Text, Field(min_length=1, max_length=512)]


class AlertRule(Closed):
    """A notification rule (docs/alerting.md). Empty lists mean "any"."""

    name: Name = Field(description="The rule's name (its key).")
    enabled: Flag = Field(True, description="A disabled rule notifies nothing.")
    description: Annotated[Text, Field(max_length=1000)] = Field("", description="What the rule is for.")
    on: Literal[EVENTS] = Field("behavior", description=(  # type: ignore[valid-type]
        "behavior: a behavior is made; summary_level: a daily summary reaches `level` (or higher); "
        "summary_status: a summary's status changes (to one of `statuses`)."))
    rules: Annotated[list[Item], Field(max_length=MAX_LIST)] = Field(
        default_factory=list, description="Behavior rule names (behaviors and summaries holding one of them).")
    techniques: Annotated[list[Item], Field(max_length=MAX_LIST)] = Field(
        default_factory=list, description="ATT&CK technique ids (a behavior's or summary's risks holding one).")
    minScore: Annotated[Whole, Field(ge=0, le=10**9)] | None = Field(None, description="Risk score at least this.")
    keyTypes: Annotated[list[Item], Field(max_length=MAX_LIST)] = Field(
        default_factory=list, description="Key types (ip, username, host...).")
    customers: Annotated[list[Item], Field(max_length=MAX_LIST)] = Field(
        default_factory=list, description="Customers (@customer values).")
    level: Annotated[Text, Field(min_length=1, max_length=64)] | None = Field(
        None, description="summary_level: a score level's label (critical, serious, high...).")
    statuses: Annotated[list[Literal[STATUSES]], Field(max_length=3)] = Field(  # type: ignore[valid-type]
        default_factory=list, description="summary_status: the new statuses that notify (empty: any change).")
    destinations: Annotated[list[Name], Field(min_length=1, max_length=20)] = Field(
        description="The destinations' names: one delivery to each.")
    throttleSeconds: Annotated[Whole, Field(ge=0, le=MAX_THROTTLE)] = Field(
        3600, description="At most one notification per rule and key (or summary) in this window; 0: no throttle.")
    template: Annotated[Text, Field(max_length=MAX_TEMPLATE)] | None = Field(
        None, description="Jinja2 text of the message body (sandboxed); the default otherwise.")


class AlertRuleRow(Base):
    __tablename__ = "notify_rules"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    doc: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_on: Mapped[int] = mapped_column(BigInteger)


def _common(rule: AlertRule, doc: dict[str, Any]) -> bool:
    if rule.customers and doc.get("customer") not in rule.customers:
        return False
    if rule.keyTypes and doc.get("keyType") not in rule.keyTypes:
        return False
    if rule.minScore is not None and _int(doc.get("riskScore")) < rule.minScore:
        return False
    risks = doc.get("risks") if isinstance(doc.get("risks"), list) else []
    return not rule.techniques or any(t in risks for t in rule.techniques)


def matches_behavior(rule: AlertRule, behavior: dict[str, Any]) -> bool:
    if rule.on != "behavior" or not rule.enabled:
        return False
    if rule.rules and behavior.get("behaviorRule") not in rule.rules:
        return False
    return _common(rule, behavior)


def matches_summary(rule: AlertRule, before: dict[str, Any] | None, after: dict[str, Any],
                    bands: tuple[tuple[int, str], ...]) -> bool:
    """A summary changed from ``before`` (None: new) to ``after``."""
    if not rule.enabled or rule.on == "behavior":
        return False
    if rule.rules:
        names = after.get("behaviorRules") if isinstance(after.get("behaviorRules"), list) else []
        if not any(r in names for r in rule.rules):
            return False
    if not _common(rule, after):
        return False
    if rule.on == "summary_level":
        minimum = level_minimum(rule.level, bands)
        was = _int(before.get("riskScore")) if before is not None else 0
        return minimum is not None and was < minimum <= _int(after.get("riskScore"))
    old = before.get("status") if before is not None else None
    new = after.get("status")
    return old != new and before is not None and (not rule.statuses or new in rule.statuses)


def level_minimum(level: str | None, bands: tuple[tuple[int, str], ...]) -> int | None:
    for minimum, label in bands:
        if label == level:
            return minimum
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
