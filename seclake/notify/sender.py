"""The sender: a thread outside the detection path that delivers the outbox.

Each round takes the due pending deliveries (oldest first), claims each
(``outbox.claim``: from then on the notifier folds nothing more into it, as
the message may already be on its way), renders it with its destination's
settings and sends it. A 2xx (or an SMTP server's
acceptance, a written syslog line) is marked sent at once in its own
transaction; a failure is tried again after an exponential backoff with
jitter (``backoff``: 2 s doubling up to ``notify_backoff_max_seconds``,
each wait drawn between half and all of it, so deliveries of one outage do
not return in lockstep), until ``notify_retry_seconds`` after the
notification was made; then it is marked failed and stays listed
(resendable). A refusal that a retry cannot change (an HTTP 4xx other than
408/425/429, an SMTP 5xx, a destination missing its URL) fails at once.
After a destination fails in a round, its other due deliveries wait with it
(moved to the same next attempt, their attempts unchanged), so one dead
receiver costs one timeout per backoff, not one per notification, and the
others still go. A restart reads the outbox again: pending deliveries go
out then; one that was accepted but not yet marked (a crash between the
two) is sent a second time: the at-least-once window, closed where the
destination dedups (PagerDuty's dedup_key, the webhook's Seclake-Delivery
id, the mail's Message-ID).
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import update

from seclake import __version__
from seclake.db.database import Database
from seclake.notify import chat, mail, outbox, pagerduty, syslogcef, template, throttle, webhook
from seclake.notify.destination import Target
from seclake.notify.webhook import DeliveryError

log = logging.getLogger("seclake.notify")

BATCH = 100
FIRST_BACKOFF = 2.0
IDLE_POLL = 1.0
PRUNE_EVERY = 3600.0


class NotifyMetrics:
    def __init__(self, registry) -> None:
        self.sent = Counter("seclake_notifications_sent", "Notifications delivered, by destination kind.",
                            ("kind",), registry=registry)
        self.failed = Counter("seclake_notifications_failed", "Notifications given up (kept as failed: resend "
                              "them from the alerts page or notify/resend), by destination kind.",
                              ("kind",), registry=registry)
        self.retried = Counter("seclake_notifications_retried", "Delivery attempts that failed and will be tried "
                               "again, by destination kind.", ("kind",), registry=registry)
        self.throttled = Counter("seclake_notifications_throttled", "Notifications folded into another by a "
                                 "rule's throttle, by notification rule.", ("rule",), registry=registry)


class OutboxCollector(Collector):
    """The outbox by status, read at scrape time."""

    def __init__(self, db: Database):
        self.db = db

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Any]:
        gauge = GaugeMetricFamily("seclake_notifications", "Deliveries in the outbox, by status "
                                  "(pending, sent, failed).", labels=["status"])
        try:
            for status, n in outbox.counts(self.db).items():
                gauge.add_metric([status], n)
        except Exception:  # noqa: BLE001 - a scrape must not fail on the database
            log.warning("the outbox could not be counted for /metrics", exc_info=True)
        yield gauge


def backoff(attempts: int, maximum: float, rng: random.Random) -> float:
    """Seconds before attempt ``attempts + 1``: exponential, capped, with jitter (half to all of it)."""
    delay = min(maximum, FIRST_BACKOFF * 2 ** min(attempts - 1, 30))
    return delay * rng.uniform(0.5, 1.0)


def link_for(public_url: str | None, event: dict[str, Any]) -> str:
    """Where the web interface shows the summary a notification is about."""
    if not public_url:
        return ""
    sid = event.get("summaryId") or ""
    doc = event.get("summary") or {}
    day = str(doc.get("dayIndex") or "")
    base = public_url.rstrip("/")
    query = f"q={quote(f'id:{sid}')}&open={quote(str(sid))}&from=now-30d"
    if day:
        query = f"q={quote(f'id:{sid}')}&open={quote(str(sid))}&from={quote(day)}"
    return f"{base}/summaries?{query}"


def redacted(error: str, target: Target | None) -> str:
    """An error as stored and shown: no secret of the destination in it (a library's message may quote
    a Slack URL or a header)."""
    if target is None:
        return error
    values: list[str] = []
    for value in target.secrets.values():
        values += [v for v in (value.values() if isinstance(value, dict) else [value]) if isinstance(v, str)]
    for value in sorted(values, key=len, reverse=True):
        if len(value) >= 4:
            error = error.replace(value, "***")
    return error


class Sender:
    def __init__(self, db: Database, targets: Callable[[], dict[str, Target]], settings: Any,
                 metrics: NotifyMetrics | None = None, clock: Callable[[], float] = time.time):
        self.db = db
        self.targets = targets
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        self.rng = random.Random()
        self.client = httpx.Client(timeout=settings.notify_timeout_seconds, follow_redirects=False,
                                   headers={"User-Agent": f"seclake/{__version__}"})
        self.hostname = socket.gethostname()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pruned = 0.0

    # -- the thread ------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            released = outbox.release(self.db)
            if released:
                log.warning("%d deliveries were being sent when seclake stopped: sending them again", released)
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="seclake-notify", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.client.close()

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if time.monotonic() - self._pruned >= PRUNE_EVERY:
                    self._pruned = time.monotonic()
                    self.prune()
                worked = self.round()
            except Exception:  # noqa: BLE001 - logged; the next round is the retry
                log.exception("a round of notification deliveries failed; will retry")
                worked = 0
            if not worked:
                self._wake.wait(self._idle())
                self._wake.clear()

    def _idle(self) -> float:
        """Seconds until the next delivery is due (a retry on time), at most ``IDLE_POLL``."""
        try:
            due = outbox.next_due(self.db)
        except Exception:  # noqa: BLE001 - the next round says what is wrong
            return IDLE_POLL
        if due is None:
            return IDLE_POLL
        return min(IDLE_POLL, max(0.01, due / 1000 - self.clock()))

    def prune(self) -> None:
        """The outbox's old history and the throttle's dead windows (hourly)."""
        now_ms = int(self.clock() * 1000)
        deliveries, windows = outbox.prune(self.db, now_ms), throttle.prune(self.db, now_ms)
        if deliveries or windows:
            log.info("deleted %d deliveries older than %d days and %d old throttle windows",
                     deliveries, outbox.KEEP_DAYS, windows)

    # -- one round -------------------------------------------------------

    def round(self) -> int:
        """Deliver what is due now; how many were tried."""
        now_ms = int(self.clock() * 1000)
        rows = outbox.due(self.db, now_ms, BATCH)
        if not rows:
            return 0
        targets = self.targets()
        held: dict[str, int] = {}  # destination -> next attempt, after a failure this round
        tried = 0
        for row in rows:
            if self._stop.is_set():
                break
            if row.destination in held:
                self._hold(row, held[row.destination])
                continue
            claimed = outbox.claim(self.db, row.id)
            if claimed is None:
                continue  # resent, or no longer pending
            tried += 1
            later = self.deliver(claimed, targets.get(row.destination))
            if later is not None:
                held[row.destination] = later
        return tried

    def _hold(self, row: outbox.Delivery, next_ms: int) -> None:
        with self.db.session(write=True) as s:
            s.execute(update(outbox.Delivery).where(outbox.Delivery.id == row.id,
                                                    outbox.Delivery.status == outbox.PENDING).values(next_ms=next_ms))

    def deliver(self, row: outbox.Delivery, target: Target | None) -> int | None:
        """Send one delivery and record the outcome; the next attempt's time when it will be retried."""
        kind = target.kind if target is not None else "unknown"
        attempts = row.attempts + 1
        try:
            if target is None:
                raise DeliveryError(f"no destination named {row.destination!r} (add it, then resend)")
            if not target.config.get("enabled", True):
                raise DeliveryError(f"destination {row.destination!r} is disabled", retry=False)
            self.send(row, target)
        except Exception as e:  # noqa: BLE001 - every failure is recorded on the delivery
            retry = e.retry if isinstance(e, DeliveryError) else True
            if not isinstance(e, DeliveryError):
                log.exception("delivery %d to %s failed unexpectedly", row.id, row.destination)
            error = redacted(str(e) or type(e).__name__, target)
            now_ms = int(self.clock() * 1000)
            deadline = row.created_ms + int(self.settings.notify_retry_seconds * 1000)
            if retry and now_ms < deadline:
                wait = backoff(attempts, self.settings.notify_backoff_max_seconds, self.rng)
                next_ms = min(deadline, now_ms + int(wait * 1000))
                outbox.settle(self.db, row.id, status=outbox.PENDING, attempts=attempts, now_ms=now_ms,
                              next_ms=next_ms, error=error)
                if self.metrics is not None:
                    self.metrics.retried.labels(kind).inc()
                log.warning("delivery %d (rule %s) to %s failed, attempt %d, again in %.1f s: %s",
                            row.id, row.rule, row.destination, attempts, (next_ms - now_ms) / 1000, error)
                return next_ms
            outbox.settle(self.db, row.id, status=outbox.FAILED, attempts=attempts, now_ms=now_ms, error=error)
            if self.metrics is not None:
                self.metrics.failed.labels(kind).inc()
            log.error("delivery %d (rule %s) to %s failed for good after %d attempts: %s",
                      row.id, row.rule, row.destination, attempts, error)
            return None
        # Marked sent at once: a crash between the destination's 2xx and this commit is the
        # only way a notification goes twice (module docstring).
        outbox.settle(self.db, row.id, status=outbox.SENT, attempts=attempts, now_ms=int(self.clock() * 1000))
        if self.metrics is not None:
            self.metrics.sent.labels(kind).inc()
        log.info("delivery %d (rule %s) sent to %s (%s)", row.id, row.rule, row.destination, kind)
        return None

    def _workspace(self, target: Target) -> Target:
        """A Slack endpoint of the Go clients names its integration (``integrationName``), not a URL:
        the Slack destination of that name lends its webhook URL, the endpoint keeps its channel."""
        name = target.get("integrationName")
        if target.kind != "slack" or target.get("url") or not name:
            return target
        workspace = self.targets().get(name)
        if workspace is None or workspace.kind != "slack" or not workspace.get("url"):
            return target
        return Target(target.name, target.kind, target.config, {**target.secrets, "url": workspace.get("url")})

    def send(self, row: outbox.Delivery, target: Target) -> None:
        event = row.event
        link = link_for(self.settings.public_url, event)
        message = template.message(event, folded=row.folded, rule=row.rule, destination=row.destination,
                                   link=link, template=event.get("template"))
        kind = target.kind
        if kind == "webhook":
            payload = {"id": row.id, "type": row.subject, "rule": row.rule, "title": message["title"],
                       "text": message["text"], "link": link, "folded": row.folded, "createdOn": row.created_ms,
                       "summaryId": event.get("summaryId")}
            for part in ("behavior", "summary"):
                if event.get(part) is not None:
                    payload[part] = event[part]
            webhook.send(self.client, target, payload, row.id, int(self.clock()))
        elif kind in ("slack", "teams"):
            chat.send(self.client, self._workspace(target), message, link)
        elif kind == "pagerduty":
            pagerduty.send(self.client, target, {**event, "ref": row.ref}, message, link)
        elif kind == "email":
            s = self.settings
            mail.send(target, message, row.id, default_url=s.smtp_url,
                      default_password=s.smtp_password.get_secret_value() if s.smtp_password else None,
                      default_sender=s.smtp_from, timeout=s.notify_timeout_seconds)
        elif kind == "syslog":
            cef = syslogcef.line(event, message, delivery_id=row.id, rule=row.rule, link=link,
                                 version=__version__, folded=row.folded)
            syslogcef.send(target, syslogcef.framed(cef, self.hostname, datetime.now(UTC)),
                           self.settings.notify_timeout_seconds)
        else:
            raise DeliveryError(f"unknown destination kind {kind!r}", retry=False)
