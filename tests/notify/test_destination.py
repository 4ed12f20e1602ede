"""Destinations read from requests: what each kind needs, named clearly when missing or wrong."""

from __future__ import annotations

import pytest

from seclake.errors import ValidationFailed
from seclake.model import validated
from seclake.notify.destination import DestinationInput, split


@pytest.mark.parametrize(("doc", "problem"), [
    ({"name": "d", "kind": "webhook"}, "needs url"),
    ({"name": "d", "kind": "webhook", "url": "file:///etc/passwd"}, "http"),
    ({"name": "d", "kind": "syslog", "url": "tcp://host"}, "host:port"),
    ({"name": "d", "kind": "syslog", "url": "http://host:514"}, "udp://"),
    ({"name": "d", "kind": "email"}, "at least one address"),
    ({"name": "d", "kind": "email", "to": ["not an address"]}, "to"),
    ({"name": "d", "kind": "email", "to": ["a@b.c"], "smtpUrl": "ftp://x"}, "smtpUrl"),
    ({"name": "d", "kind": "webhook", "url": "http://h/", "secret": "short"}, "secret"),
    ({"name": "d", "kind": "sms"}, "kind"),
    ({"name": "d", "kind": "webhook", "url": "http://h/", "headers": {"X-A": "a\r\nInjected: 1"}}, "control"),
    ({"name": "d", "kind": "webhook", "url": "http://h/", "headers": {"Bad Name": "v"}}, "letters, digits"),
    ({"name": "d", "kind": "webhook", "url": "http://h/", "headers": {"Seclake-Signature": "forged"}}, "not one"),
    ({"name": "d", "kind": "webhook", "url": "http://h/", "headers": {f"h{i}": "v" for i in range(21)}}, "headers"),
])
def test_a_bad_destination_says_what(doc, problem) -> None:
    with pytest.raises(ValidationFailed, match=problem):
        validated(DestinationInput, doc, "destination")


def test_secrets_are_split_off() -> None:
    d = validated(DestinationInput, {"name": "s", "kind": "slack", "url": "https://hooks.example/T/B/x",
                                     "channel": "#soc"})
    shown, sealed = split(d)
    assert sealed == {"url": "https://hooks.example/T/B/x"} and "url" not in shown and shown["channel"] == "#soc"
    w = validated(DestinationInput, {"name": "w", "kind": "webhook", "url": "https://x/", "secret": "s" * 16,
                                     "headers": {"Authorization": "Bearer t"}})
    shown, sealed = split(w)
    assert shown["url"] == "https://x/" and set(sealed) == {"secret", "headers"}
