"""Messages: the default templates, and hostile rule templates refused or
bounded in time and size by the sandbox, never holding the sender."""

from __future__ import annotations

import time

import pytest

from seclake.errors import ValidationFailed
from seclake.notify.template import MAX_OUTPUT, check, message, render

EVENT = {"kind": "behavior", "summaryId": "s1", "behavior": {
    "behavior": "Failed logon", "behaviorRule": "r1", "description": "<b>x</b>", "key": "10.0.0.1", "keyType": "ip",
    "customer": "acme", "riskScore": 5000, "risks": ["T1110"]}}


def test_the_default_message_names_what_happened_and_links_back() -> None:
    m = message(EVENT, folded=3, rule="n", destination="d", link="https://s/summaries?q=id:s1", template=None)
    assert m["title"] == "seclake: Failed logon on ip 10.0.0.1 (score 5000)"
    assert "ATT&CK: T1110" in m["text"] and "And 3 more like it" in m["text"] and "https://s/summaries" in m["text"]
    assert "&lt;b&gt;x&lt;/b&gt;" in m["html"] and "<b>x</b>" not in m["html"]  # the HTML part escapes record text


def test_a_missing_field_renders_empty() -> None:
    assert render("[{{ behavior.nothing.deeper }}]", EVENT) == "[]"


@pytest.mark.parametrize("hostile", [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ behavior.update({'key': 1}) }}",
    "{% for i in range(10**9) %}{% endfor %}",
    "{% for i in range(9999) %}{% for j in range(9999) %}{% endfor %}{% endfor %}",
    "{{ 'x' * 100000000 }}",
    "{{ 9 ** 99999999 }}",
    "{{ 'a' | center(10000000000) }}",
    "{{ '%999999999s' % 1 }}",
    "{{ cycler.__init__.__globals__ }}",
])
def test_a_hostile_template_is_refused_or_bounded_quickly(hostile: str) -> None:
    started = time.monotonic()
    out = render(hostile, EVENT)
    assert time.monotonic() - started < 5
    assert len(out) <= MAX_OUTPUT
    assert "refused" in out or "failed" in out or out == "", out


def test_output_is_cut_at_its_bound() -> None:
    assert len(render("{% for i in range(9000) %}0123456789{% endfor %}", EVENT)) == MAX_OUTPUT


def test_a_syntax_error_is_named_with_its_line() -> None:
    with pytest.raises(ValidationFailed, match="rule.template: line 2"):
        check("ok\n{% for %}", "rule.template")
