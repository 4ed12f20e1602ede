"""Messages: Jinja2 templates rendered in its sandbox.

A rule may bring its own body template (``AlertRule.template``); a record's
fields reach every message. Jinja2's ``ImmutableSandboxedEnvironment``
refuses attribute tricks and changing what it is given; the output is cut at
``MAX_OUTPUT`` characters (the template is a stream, so a huge loop stops
there). The HTML part of an email is rendered with autoescaping.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from jinja2 import ChainableUndefined, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from seclake.errors import ValidationFailed

MAX_OUTPUT = 20_000

TITLE = {
    "behavior": "seclake: {{ behavior.behavior }} on {{ behavior.keyType }} {{ behavior.key }} "
                "(score {{ behavior.riskScore }})",
    "summary": "seclake: {{ summary.keyType }} {{ summary.key }} is {{ summary.scoreLevel }} "
               "(score {{ summary.riskScore }}, {{ summary.dayIndex }})",
    "status": "seclake: {{ summary.keyType }} {{ summary.key }} is {{ summary.status }} ({{ summary.dayIndex }})",
    "resolve": "seclake: {{ summary.keyType }} {{ summary.key }} resolved ({{ summary.dayIndex }})",
    "test": "seclake: a test notification from destination {{ destination }}",
}

TEXT = """{{ title }}
{% if behavior %}
Rule: {{ behavior.behaviorRule }}: {{ behavior.description }}
Customer: {{ behavior.customer or "-" }}
ATT&CK: {{ behavior.risks | join(", ") or "-" }}
{% endif %}{% if summary %}
Behaviors: {{ summary.behaviors | join(", ") }}
Customer: {{ summary.customer or "-" }}
ATT&CK: {{ summary.risks | join(", ") or "-" }}
Status: {{ summary.status }}
{% endif %}{% if folded %}
And {{ folded }} more like it, held back by the throttle ({{ rule }}).
{% endif %}{% if link %}
{{ link }}
{% endif %}"""

HTML = """<p><strong>{{ title }}</strong></p>
{% if behavior %}<p>Rule: {{ behavior.behaviorRule }}: {{ behavior.description }}<br>
Customer: {{ behavior.customer or "-" }}<br>ATT&amp;CK: {{ behavior.risks | join(", ") or "-" }}</p>{% endif %}
{% if summary %}<p>Behaviors: {{ summary.behaviors | join(", ") }}<br>Customer: {{ summary.customer or "-" }}<br>
ATT&amp;CK: {{ summary.risks | join(", ") or "-" }}<br>Status: {{ summary.status }}</p>{% endif %}
{% if folded %}<p>And {{ folded }} more like it, held back by the throttle ({{ rule }}).</p>{% endif %}
{% if link %}<p><a href="{{ link }}">Open in seclake</a></p>{% endif %}"""

# A missing field renders empty: a record without it must not fail a delivery.
_plain = ImmutableSandboxedEnvironment(undefined=ChainableUndefined, autoescape=False)
_html = ImmutableSandboxedEnvironment(undefined=ChainableUndefined, autoescape=True)


def check(text: str, field: str = "template") -> str:
    """A template's syntax, checked when a rule is stored."""
    try:
        _plain.parse(text)
    except TemplateSyntaxError as e:
        raise ValidationFailed(field, f"line {e.lineno}: {e.message}") from None
    return text


def render(text: str, context: dict[str, Any], *, html: bool = False) -> str:
    env = _html if html else _plain
    try:
        parts = env.from_string(text).generate(**context)
        out = "".join(islice(_bounded(parts), MAX_OUTPUT))
    except SecurityError as e:
        return f"(template refused by the sandbox: {e})"
    except Exception as e:  # noqa: BLE001 - a template error must not lose the notification
        return f"(template failed: {type(e).__name__}: {e})"[:1000]
    return out


def _bounded(parts):
    """The output character by character up to the cap (a part may be huge)."""
    total = 0
    for part in parts:
        for ch in part:
            yield ch
            total += 1
            if total >= MAX_OUTPUT:
                return


def message(event: dict[str, Any], *, folded: int, rule: str, destination: str, link: str,
            template: str | None) -> dict[str, str]:
    """Title, plain text and HTML of one delivery."""
    context = {**event, "folded": folded, "rule": rule, "destination": destination, "link": link}
    context.setdefault("behavior", None)
    context.setdefault("summary", None)
    title = render(TITLE.get(event.get("kind", "test"), TITLE["test"]), context).strip()[:500]
    context["title"] = title
    return {"title": title, "text": render(template or TEXT, context).strip(),
            "html": render(HTML, context, html=True).strip()}
