"""Slack and Microsoft Teams incoming webhooks: their own message shapes.

Slack: ``text`` (the fallback shown in notifications) plus Block Kit blocks
(a header, the body as mrkdwn, a button to seclake). Teams: an Adaptive
Card in a ``message`` attachment, the shape Teams' incoming webhooks and
Workflows accept. Both answer 2xx when they took the message.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from seclake.notify.destination import Target
from seclake.notify.webhook import DeliveryError, post


def slack_payload(message: dict[str, str], link: str, channel: str | None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": message["title"][:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _mrkdwn(message["text"])[:3000]}},
    ]
    if link:
        blocks.append({"type": "actions", "elements": [
            {"type": "button", "text": {"type": "plain_text", "text": "Open in seclake"}, "url": link}]})
    out: dict[str, Any] = {"text": message["title"], "blocks": blocks}
    if channel:
        out["channel"] = channel
    return out


def teams_payload(message: dict[str, str], link: str) -> dict[str, Any]:
    card: dict[str, Any] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "text": message["title"], "weight": "Bolder", "size": "Medium", "wrap": True},
            {"type": "TextBlock", "text": message["text"], "wrap": True},
        ],
    }
    if link:
        card["actions"] = [{"type": "Action.OpenUrl", "title": "Open in seclake", "url": link}]
    return {"type": "message", "attachments": [
        {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}]}


def _mrkdwn(text: str) -> str:
    # Slack reads &, < and > as markup: escaped as its docs say.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def send(client: httpx.Client, target: Target, message: dict[str, str], link: str) -> None:
    url = target.get("url")
    if not url:
        raise DeliveryError(f"{target.kind} destination {target.name!r} has no webhook URL (set url)", retry=False)
    if target.kind == "slack":
        payload = slack_payload(message, link, target.get("channel"))
    else:
        payload = teams_payload(message, link)
    post(client, url, orjson.dumps(payload), {"Content-Type": "application/json"})
