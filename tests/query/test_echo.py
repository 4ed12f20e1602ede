"""The echoed query and the highlight words a UI receives."""

from __future__ import annotations

import json

from seclake.query.echo import highlight_terms, highlights, to_dict
from seclake.query.parser import parse
from seclake.record.dataset import EVENTS


def test_highlight_terms_are_positive_plain_words():
    node = parse(
        'admin AND NOT bob "failed password" user:root mimikatz.exe adm* dport:[1 TO 5] -(evil OR worse) '
        'sip:"10.0.0.0/8" ADMIN /re.*/',
        EVENTS,
    )
    assert highlight_terms(node) == ["admin", "failed", "password", "root", "mimikatz.exe"]


def test_highlight_keeps_terms_under_or():
    assert highlight_terms(parse("a OR (b AND NOT c)", EVENTS)) == ["a", "b"]


def test_echo_is_json_and_shows_structure():
    node = parse("@message:error (user:admin OR dport:>=1024) -sip:*", EVENTS)
    echoed = to_dict(node, EVENTS)
    json.dumps(echoed)
    assert echoed == {
        "bool": {
            "must": [
                {"match_phrase": {"@message": "error"}},
                {"bool": {"should": [{"term": {"@fields.user": "admin"}},
                                     {"range": {"@fields.dport": {"gte": 1024, "kind": "number"}}}]}},
            ],
            "must_not": [{"exists": {"field": "@fields.sip"}}],
        }
    }


def test_echo_without_dataset_shows_keyword_terms():
    assert to_dict(parse("@message:error", EVENTS)) == {"term": {"@message": "error"}}


def test_highlights_say_what_each_term_matched_and_where():
    node = parse('event.category:authentication "failed password" @message:denied NOT bob adm* '
                 'EventID:4625 AUTHENTICATION event.category:Authentication (x OR "--") dport:[1 TO 5]', EVENTS)
    assert highlights(node, EVENTS) == [
        {"field": "@fields.event.category", "value": "authentication", "text": False},
        {"field": "*", "value": "failed password", "text": True},
        {"field": "@message", "value": "denied", "text": True},
        {"field": "@fields.EventID", "value": "4625", "text": False},
        {"field": "*", "value": "AUTHENTICATION", "text": True},
        {"field": "*", "value": "x", "text": True},
    ]
