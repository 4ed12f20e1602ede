"""Messages: Jinja2 templates rendered in its sandbox.

A rule may bring its own body template (``AlertRule.template``); a record's
fields reach every message. Jinja2's ``ImmutableSandboxedEnvironment``
refuses attribute tricks and changing what it is given; the output is cut at
``MAX_OUTPUT`` characters (the template is a stream, so a huge loop stops
there). What the sandbox leaves open is time: ``range`` here gives at most
``MAX_RANGE`` numbers and stops a render past ``MAX_SECONDS`` (nested loops
that write nothing), and ``*`` and ``**`` refuse results past the output's
size, so no template holds the sender thread. The HTML part of an email is
rendered with autoescaping.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import time
from itertools import islice
from typing import Any

from jinja2 import ChainableUndefined, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from seclake.errors import ValidationFailed

MAX_OUTPUT = 20_000
MAX_RANGE = 10_000
MAX_SECONDS = 2.0
_deadline = threading.local()

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

WIDE = re.compile(r"%[-+ #0]*(\*|\d{5,}|\d*\.(\*|\d{5,}))")


def _bounded_filter(f):
    @functools.wraps(f)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_time()
        for a in (*args, *kwargs.values()):
            if isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_OUTPUT:
                raise SecurityError(f"a filter given a number past {MAX_OUTPUT}")
        return f(*args, **kwargs)

    return bounded


class TimeLimitExceeded(SecurityError):
    pass


def _check_time() -> None:
    if time.monotonic() > getattr(_deadline, "at", float("inf")):
        raise TimeLimitExceeded(f"the template ran past {MAX_SECONDS} s")


def _range(*args: int):
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise SecurityError(f"range() of more than {MAX_RANGE} numbers")
    for i, n in enumerate(numbers):
        if i % 256 == 0:
            _check_time()
        yield n


class Sandbox(ImmutableSandboxedEnvironment):
    """Jinja2's sandbox, bounded in time and size as well."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.globals["range"] = _range
        # A filter given a huge number (center(10000000000), indent, wordwrap...) would build a huge string.
        self.filters = {name: _bounded_filter(f) for name, f in self.filters.items()}

    def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
        _check_time()
        if operator == "**" and isinstance(right, (int, float)) and (abs(right) > 64 or (
                isinstance(left, (int, float)) and abs(left) > 1 and right * math.log10(abs(left)) > 9)):
            raise SecurityError("** past 10**9")
        if operator == "%" and isinstance(left, str) and WIDE.search(left):
            raise SecurityError("a % format wider than the output")
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_OUTPUT:
                    raise SecurityError(f"* making more than {MAX_OUTPUT} items")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context, __obj, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja2's signature
        _check_time()
        return super().call(__context, __obj, *args, **kwargs)


# A missing field renders empty: a record without it must not fail a delivery.
_plain = Sandbox(undefined=ChainableUndefined, autoescape=False)
_html = Sandbox(undefined=ChainableUndefined, autoescape=True)


def check(text: str, field: str = "template") -> str:
    """A template's syntax, checked when a rule is stored."""
    try:
        _plain.parse(text)
    except TemplateSyntaxError as e:
        raise ValidationFailed(field, f"line {e.lineno}: {e.message}") from None
    return text


def render(text: str, context: dict[str, Any], *, html: bool = False) -> str:
    env = _html if html else _plain
    _deadline.at = time.monotonic() + MAX_SECONDS
    try:
        parts = env.from_string(text).generate(**context)
        out = "".join(islice(_bounded(parts), MAX_OUTPUT))
    except SecurityError as e:
        return f"(template refused by the sandbox: {e})"
    except Exception as e:  # noqa: BLE001 - a template error must not lose the notification
        return f"(template failed: {type(e).__name__}: {e})"[:1000]
    finally:
        _deadline.at = float("inf")
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
