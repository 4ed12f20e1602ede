"""Typed input (seclake/model.py): what a request that does not fit is told.

Each case is a request a client could send and the message it must get:
the path to the field, in the wire's own names, and what to send instead.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from seclake.api.request import EventSearchRequest, RuleDaoRequest, TokenRequest
from seclake.errors import ValidationFailed
from seclake.model import Closed, Flag, Line, Number, Open, Text, Whole, validated
from seclake.service.users import UserInput


class Inner(Closed):
    size: Annotated[Whole, Field(ge=1)] = 10
    name: Text = ""


class Outer(Open):
    count: Whole | None = None
    ratio: Number | None = None
    flag: Flag = False
    line: Line = ""
    order: Literal["asc", "desc"] | None = None
    inner: Inner | None = None
    inners: list[Inner] = []


@pytest.mark.parametrize(("sent", "path", "says"), [
    ({"count": True}, "kargs.count", "must be an integer, not a boolean"),
    ({"count": "ten"}, "kargs.count", "must be an integer, not 'ten'"),
    ({"count": 1.5}, "kargs.count", "must be an integer, not 1.5"),
    ({"count": 2**70}, "kargs.count", "1180591620717411303424 is out of range"),
    ({"count": [1]}, "kargs.count", "must be an integer, not an array"),
    ({"ratio": "1"}, "kargs.ratio", "must be a number"),
    ({"ratio": float("nan")}, "kargs.ratio", "nan is out of range"),
    ({"flag": "true"}, "kargs.flag", "must be true or false, not 'true'"),
    ({"flag": 1}, "kargs.flag", "must be true or false, not 1"),
    ({"flag": None}, "kargs.flag", "must be true or false, not None"),
    ({"line": 7}, "kargs.line", "must be a string, not a number"),
    ({"line": "a\nb"}, "kargs.line", "must not contain control characters"),
    ({"order": "up"}, "kargs.order", "must be one of 'asc' or 'desc', not 'up'"),
    ({"inner": []}, "kargs.inner", "must be an object, not an array"),
    ({"inner": {"size": 0}}, "kargs.inner.size", "must be at least 1, not 0"),
    ({"inner": {"sise": 3}}, "kargs.inner.sise", "unknown field; use size, name"),
    ({"inners": [{}, {"size": -1}]}, "kargs.inners[1].size", "must be at least 1, not -1"),
    ({"inners": {"size": 1}}, "kargs.inners", "must be an array, not an object"),
])
def test_a_bad_field_is_named_with_its_path_and_what_to_send(sent, path, says):
    with pytest.raises(ValidationFailed) as e:
        validated(Outer, sent, "kargs")
    assert e.value.field == path
    assert e.value.message.startswith(f"{path}: {says}")


def test_integers_come_as_clients_send_them():
    assert validated(Outer, {"count": "12"}).count == 12
    assert validated(Outer, {"count": 12.0}).count == 12
    assert validated(Outer, {"count": "-3"}).count == -3
    # Members beyond those named are kept in an open model, refused in a closed one.
    assert validated(Outer, {"extra": 1}).model_extra == {"extra": 1}


def test_the_request_models_name_nested_wire_paths():
    with pytest.raises(ValidationFailed, match=r"^kargs\.options\.facets\.facets\[2\]\.size: must be at least 1, not 0$"):
        validated(EventSearchRequest, {"options": {"facets": {"facets": [{"field": "a"}, {"field": "b"},
                                                                         {"field": "c", "size": 0}]}}}, "kargs")
    with pytest.raises(ValidationFailed, match=r"^kargs\.options\.facets\.mustFilters\[0\]\.terms\[1\]: must be a string, number"):
        validated(EventSearchRequest, {"options": {"facets": {"mustFilters": [{"field": "a", "terms": [1, {}]}]}}},
                  "kargs")
    with pytest.raises(ValidationFailed, match=r"^kargs\.user\.oauthFlag: must be true or false"):
        validated(UserInput, {"username": "ann", "oauthFlag": "yes"}, "kargs.user")
    with pytest.raises(ValidationFailed, match=r"^kargs\.enable: unknown field; use action, bucket, name, enabled, names, args, sigma, keyField, keyType$"):
        validated(RuleDaoRequest, {"action": "toggle", "enable": True}, "kargs")
    with pytest.raises(ValidationFailed, match=r"^kargs\.args\.id: must be the id of a token"):
        validated(TokenRequest, {"action": "delete", "args": {"id": True}}, "kargs")
    # The computed fields of a user record sent back are accepted, and not changes.
    user = validated(UserInput, {"username": "ann", "rights": "x", "lastLogin": None, "email": "a@example.com"})
    assert user.changes() == {"email": "a@example.com"}


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12))
def test_any_json_is_read_or_refused_with_a_validation_error(value):
    # Never another exception: whatever a client sends, it learns what is wrong.
    for model in (EventSearchRequest, UserInput, TokenRequest, RuleDaoRequest):
        for sent in (value, {"options": value}, {"user": value, "username": value, "action": "add", "args": value}):
            try:
                validated(model, sent, "kargs")
            except ValidationFailed as e:
                assert e.field.startswith("kargs") and e.message.startswith(e.field)
