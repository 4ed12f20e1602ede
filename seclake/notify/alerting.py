"""Alerting as a service: the rules, the destinations, the outbox, for the API and the CLI.

It wires the parts (``Services`` builds one): the notifier watches the
summary store, the sender runs on the node that ingests (not in one-shot
commands: what they decide is sent by the server). Every change is one
transaction; names are the keys.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from sqlalchemy import delete, select

from seclake.db.database import Database
from seclake.errors import Conflict, NotFound, ValidationFailed
from seclake.model import validated
from seclake.notify import outbox, template
from seclake.notify.alertrule import AlertRule, AlertRuleRow
from seclake.notify.cipher import SecretBox, box_in
from seclake.notify.destination import DestinationInput, DestinationRow, Target, split, view
from seclake.notify.notifier import Notifier
from seclake.notify.sender import NotifyMetrics, OutboxCollector, Sender, redacted

log = logging.getLogger("seclake.notify")

MAX_RULES = 1000
MAX_DESTINATIONS = 1000


class Alerting:
    def __init__(self, db: Database, settings: Any, summaries: Any, metrics: Any, *, send: bool):
        self.db = db
        self.settings = settings
        self._box: SecretBox | None = None
        self.metrics = NotifyMetrics(metrics.registry)
        metrics.watch(OutboxCollector(db))
        self.sender = Sender(db, self.targets, settings, self.metrics) if send else None
        self.notifier = Notifier(settings.score_bands, wake=self.sender.wake if self.sender else None,
                                 throttled=self.metrics.throttled)
        summaries.observers.append(self.notifier)

    # -- component ------------------------------------------------------

    def start(self) -> None:
        if self.sender is not None:
            self.sender.start()

    def stop(self) -> None:
        if self.sender is not None:
            self.sender.stop()

    @property
    def box(self) -> SecretBox:
        if self._box is None:  # read after the migrations made the key
            self._box = box_in(self.db)
        return self._box

    def _now(self) -> int:
        return int(time.time() * 1000)

    # -- rules ----------------------------------------------------------

    def rules(self) -> list[AlertRule]:
        with self.db.session() as s:
            return [AlertRule.model_validate(d) for d in s.scalars(select(AlertRuleRow.doc).order_by(AlertRuleRow.name))]

    def rule(self, name: str) -> AlertRule:
        with self.db.session() as s:
            row = s.get(AlertRuleRow, name)
            if row is None:
                raise NotFound(f"no notification rule named {name!r}")
            return AlertRule.model_validate(row.doc)

    def put_rule(self, rule: AlertRule, *, create: bool | None = None) -> AlertRule:
        """Add (``create`` True), update (False) or either (None) one rule."""
        if rule.template is not None:
            template.check(rule.template, "rule.template")
        with self.db.session(write=True) as s:
            self._check_destinations(s, rule)
            row = s.get(AlertRuleRow, rule.name, with_for_update=True)
            if row is not None and create:
                raise Conflict(f"a notification rule named {rule.name!r} exists")
            if row is None and create is False:
                raise NotFound(f"no notification rule named {rule.name!r}")
            if row is None:
                if (s.query(AlertRuleRow).count()) >= MAX_RULES:
                    raise ValidationFailed("rule", f"at most {MAX_RULES} notification rules")
                s.add(AlertRuleRow(name=rule.name, doc=rule.model_dump(), updated_on=self._now()))
            else:
                row.doc, row.updated_on = rule.model_dump(), self._now()
        log.info("notification rule %r stored", rule.name)
        return rule

    def _check_destinations(self, s, rule: AlertRule) -> None:
        known = set(s.scalars(select(DestinationRow.name).where(DestinationRow.name.in_(rule.destinations))))
        missing = [d for d in rule.destinations if d not in known]
        if missing:
            raise ValidationFailed("rule.destinations", f"no destination named {missing[0]!r}")

    def delete_rule(self, name: str) -> None:
        with self.db.session(write=True) as s:
            if s.execute(delete(AlertRuleRow).where(AlertRuleRow.name == name)).rowcount == 0:
                raise NotFound(f"no notification rule named {name!r}")

    # -- destinations ---------------------------------------------------

    def destinations(self) -> list[dict[str, Any]]:
        with self.db.session() as s:
            rows = s.scalars(select(DestinationRow).order_by(DestinationRow.name)).all()
            return [view(r.config, list(self.box.open(r.name, r.secret))) for r in rows]

    def destination(self, name: str) -> dict[str, Any]:
        with self.db.session() as s:
            row = s.get(DestinationRow, name)
            if row is None:
                raise NotFound(f"no destination named {name!r}")
            return view(row.config, list(self.box.open(row.name, row.secret)))

    def put_destination(self, given: dict[str, Any], *, create: bool | None = None,
                        where: str = "destination") -> dict[str, Any]:
        """Add or update a destination from what a request gave; on update, fields left out
        (the secrets especially) keep their stored values."""
        name = given.get("name") if isinstance(given, dict) else None
        with self.db.session(write=True) as s:
            row = s.get(DestinationRow, name, with_for_update=True) if isinstance(name, str) else None
            if row is not None and create:
                raise Conflict(f"a destination named {name!r} exists")
            if row is None and create is False:
                raise NotFound(f"no destination named {name!r}")
            merged = {**row.config, **self.box.open(row.name, row.secret), **given} if row is not None else given
            d = validated(DestinationInput, merged, where)
            config, secrets = split(d)
            sealed = self.box.seal(d.name, secrets) if secrets else None
            if row is None:
                if s.query(DestinationRow).count() >= MAX_DESTINATIONS:
                    raise ValidationFailed(where, f"at most {MAX_DESTINATIONS} destinations")
                s.add(DestinationRow(name=d.name, kind=d.kind, config=config, secret=sealed, updated_on=self._now()))
            else:
                row.kind, row.config, row.secret, row.updated_on = d.kind, config, sealed, self._now()
        log.info("notification destination %r (%s) stored", d.name, d.kind)
        return view(config, list(secrets))

    def delete_destination(self, name: str) -> None:
        with self.db.session(write=True) as s:
            for doc in s.scalars(select(AlertRuleRow.doc)):
                if name in (doc.get("destinations") or []):
                    raise Conflict(f"destination {name!r} is used by notification rule {doc.get('name')!r}")
            if s.execute(delete(DestinationRow).where(DestinationRow.name == name)).rowcount == 0:
                raise NotFound(f"no destination named {name!r}")

    def targets(self) -> dict[str, Target]:
        """Every destination with its secrets open: for the sender only."""
        with self.db.session() as s:
            rows = s.scalars(select(DestinationRow)).all()
            out = {}
            for r in rows:
                try:
                    out[r.name] = Target(r.name, r.kind, r.config, self.box.open(r.name, r.secret))
                except ValueError as e:
                    log.error("%s", e)
            return out

    # -- deliveries -----------------------------------------------------

    def deliveries(self, status: str | None, limit: int, before: int | None = None) -> tuple[list[dict], dict]:
        return outbox.listing(self.db, status, limit, before)

    def resend(self, delivery_id: int) -> dict[str, Any]:
        record = outbox.resend(self.db, delivery_id, self._now())
        if self.sender is not None:
            self.sender.wake()
        return record

    def test(self, name: str) -> dict[str, Any]:
        """Send a test notification to one destination now; what happened."""
        target = self.targets().get(name)
        if target is None:
            raise NotFound(f"no destination named {name!r}")
        sender = self.sender or Sender(self.db, self.targets, self.settings)
        row = outbox.Delivery(id=0, rule="(test)", destination=name, subject="test", ref="test", window_start=0,
                              event={"kind": "test", "at": self._now(), "summaryId": "test"}, status=outbox.PENDING,
                              attempts=0, folded=0, created_ms=self._now(), next_ms=0)
        try:
            sender.send(row, target)
        except Exception as e:  # noqa: BLE001 - the answer says what went wrong
            error = redacted(str(e) or type(e).__name__, target)
            log.info("test notification to %r failed: %s", name, error)
            return {"sent": False, "error": error}
        finally:
            if sender is not self.sender:
                sender.client.close()
        return {"sent": True, "error": None}
