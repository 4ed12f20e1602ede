"""Webhook destinations: the notification as JSON, POSTed and signed.

The signature is Stripe's and Slack's scheme: header
``Seclake-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``.
A receiver recomputes it over the raw body, compares in constant time and
refuses a ``t`` older than its tolerance (5 minutes, say), so a captured
request cannot be replayed later. ``Seclake-Delivery`` is the delivery's id,
the same on every retry: a receiver that keeps the ids it has seen drops the
rare duplicate (docs/alerting.md, "Delivery guarantees").
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import httpx
import orjson

from seclake.notify.destination import Target

SIGNATURE = "Seclake-Signature"
DELIVERY = "Seclake-Delivery"
# Statuses worth trying again: the receiver is busy or down, not refusing.
RETRY_STATUSES = frozenset({408, 425, 429})


class DeliveryError(Exception):
    """A delivery that did not go: ``retry`` False when trying again cannot help (a 4xx refusal)."""

    def __init__(self, message: str, retry: bool = True):
        super().__init__(message)
        self.retry = retry


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode("utf-8"), str(timestamp).encode("ascii") + b"." + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def post(client: httpx.Client, url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    """POST and judge the answer: a 2xx returns, anything else raises ``DeliveryError``."""
    try:
        response = client.post(url, content=body, headers=headers)
    except httpx.HTTPError as e:
        raise DeliveryError(f"{type(e).__name__}: {e}"[:500] or type(e).__name__) from None
    if 200 <= response.status_code < 300:
        return response
    retry = response.status_code >= 500 or response.status_code in RETRY_STATUSES
    raise DeliveryError(f"HTTP {response.status_code} from the destination: {response.text[:200]}", retry=retry)


def send(client: httpx.Client, target: Target, payload: dict[str, Any], delivery_id: int, now_s: int) -> None:
    body = orjson.dumps(payload)
    headers = {**(target.get("headers") or {}), "Content-Type": "application/json", DELIVERY: str(delivery_id)}
    secret = target.get("secret")
    if secret:
        headers[SIGNATURE] = signature(secret, now_s, body)
    post(client, target.get("url"), body, headers)
