"""Hostile types in every field of every call never cause a 5xx (docs/security.md).

For each call, a valid request is taken apart: hypothesis picks one place in
it (any key at any depth, or kargs itself) and puts a hostile value there (a
wrong type, a huge or non-finite number, a deep nesting, a long or control
string). The server must answer every such request with OK or an ERROR that
stands for a 4xx, never an EXCEPTION. Bounded: a fixed number of examples per
call, against one real server: the whole grid of places and hostile values,
then random JSON values from hypothesis.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seclake.api.registry import REGISTRY
from tests.conftest import running_server, status_of

T = 1_763_712_000_000
SEARCH_OPTIONS = {
    "searchStr": "action:deny", "range_from": T, "range_to": T + 86_400_000, "fetchOffset": 0, "fetchLimit": 5,
    "sortField": "@timestamp", "sortOrder": "desc", "dateFacetField": "@timestamp",
    "facets": {"facets": [{"field": "@sender", "size": 5, "order": "count", "title": "Sender"}],
               "mustFilters": [{"field": "action", "terms": ["deny"]}],
               "mustNotFilters": [{"field": "dport", "terms": [443]}],
               "dateFacets": [{"name": "dateHistogram", "key": "@timestamp", "interval": "hour"}]},
}
RULE = {"name": "fuzz-rule", "behavior": "Fuzz", "description": "a rule the fuzz test makes",
        "query": "EventID:4625", "keyField": "IpAddress", "keyType": "ip", "risks": ["T1110"], "riskScore": 100,
        "threshold": {"function": "count", "window": "5m", "value": 3},
        "attributes": [{"field": "TargetUserName", "aliase": "user"}]}
POLICY = {"name": "fuzz-policy", "description": "d", "filters": {"event": "@customer:acme"}}
ROLE = {"name": "fuzz-role", "permissions": ["search"], "dataPolicies": [], "APIPolicies": ["ds/*"]}
USER = {"username": "fuzz-target", "password": "fuzz-password-1", "email": "f@example.com", "roles": ["analyst"],
        "dataPolicies": None, "APIPolicies": None, "preference": {"timezone": {"value": "UTC", "policy": "Server"}},
        "profile": {"a": 1}, "oauthProvider": "", "oauthFlag": False}

# One valid request per call (the fuzz mutates one place of it at a time).
EXAMPLES: dict[str, dict[str, Any]] = {
    "auth/login": {"username": "fuzz-target", "password": "not-the-password"},
    "auth/userList": {},
    "auth/ssoProviders": {},
    "auth/ssoSession": {"code": "fuzz-one-time-code"},
    "ds/collector_list": {},
    "ds/field_catalog": {"dataType": "event", "options": {"searchStr": "a:1", "range_from": 0, "range_to": 1, "sources": 5}},
    "auth/logout": {},
    "auth/userUnlock": {"username": "fuzz-target"},
    "auth/addressUnlock": {"address": "192.0.2.1"},
    "auth/getUser": {"username": "fuzz-target"},
    "auth/userAdd": {"user": {**USER, "username": "fuzz-added"}},
    "auth/userUpdate": {"user": {"username": "fuzz-target", "firstName": "F", "disabled": False}},
    "auth/userDelete": {"username": "fuzz-nobody"},
    "auth/api_token": {"action": "add", "name": "fuzz", "expiresInDays": 1, "revoked": False,
                       "args": {"entry": {"name": "f", "roles": ["analyst"]}}},
    "auth/dataPolicyAdd": {"policy": POLICY},
    "auth/dataPolicyUpdate": {"policy": POLICY},
    "auth/dataPolicyDelete": {"name": "fuzz-nothing"},
    "auth/dataPolicyList": {},
    "auth/roleAdd": {"role": ROLE},
    "auth/roleUpdate": {"role": ROLE},
    "auth/roleDelete": {"name": "fuzz-nothing"},
    "auth/roleList": {},
    "ds/get_index_zoom_histogram_lv3": {"partition": "default", "dataType": "event", "options": SEARCH_OPTIONS},
    "ds/behavior_summary_search": {"options": {**SEARCH_OPTIONS, "range_field": "from", "sortField": "to"}},
    "ds/fsm_behavior_search": {"options": {**SEARCH_OPTIONS, "range_field": "timestamp", "sortField": "timestamp"}},
    "ds/audit_search": {"options": {**SEARCH_OPTIONS, "range_field": "createdOn", "sortField": "createdOn"}},
    "ds/behavior_incident_update": {"id": "0" * 16, "status": "acknowledged", "comment": "c", "incident": True,
                                    "scoreAdjust": 10},
    "ds/eventwatch_bucket_search": {"options": {**SEARCH_OPTIONS, "sortField": "name"}},
    "ds/eventwatch_bucket_dao": {"action": "add", "bucket": RULE},
    "ds/eventwatch_rule_test": {"bucket": RULE, "input": {"@fields": {"EventID": 4625, "IpAddress": "1.2.3.4"}}},
    "ds/query": {"query": "event.outcome:failure | STATS n = COUNT(*) BY user.name | SORT n DESC | LIMIT 5",
                 "dataType": "event", "range_from": T, "range_to": T + 86_400_000},
    "ds/query_async": {"query": "* | STATS n = COUNT(*) BY BUCKET(@timestamp, 1 hour)", "dataType": "event",
                       "range_from": T, "range_to": T + 86_400_000},
    "ds/query_async_get": {"id": "0" * 24},
    "ds/query_async_cancel": {"id": "0" * 24},
    "notify/destination_dao": {"action": "add", "destination": {
        "name": "fuzz-hook", "kind": "webhook", "url": "http://127.0.0.1:9/hook", "secret": "s" * 16,
        "headers": {"X-A": "b"}}},
    "notify/rule_dao": {"action": "add", "rule": {
        "name": "fuzz-notify", "on": "behavior", "rules": ["fuzz-rule"], "techniques": ["T1110"], "minScore": 1,
        "keyTypes": ["ip"], "customers": ["acme"], "destinations": ["fuzz-hook"], "throttleSeconds": 60,
        "template": "{{ title }}"}},
    "notify/delivery_list": {"status": "failed", "limit": 10, "before": 5},
    "notify/resend": {"id": 1},
    "notify/test": {"name": "fuzz-hook"},
    "ds/platform_notification_endpoint_dao": {"action": "add", "args": {"entry": {
        "name": "fuzz-mail", "integration": "Email", "action": "mail", "email": {"to": ["a@example.org"], "cc": []},
        "slack": {"channel": "#c", "channels": ["#d"], "integrationName": "i"}}}},
}

HOSTILE: list[Any] = [
    None, True, False, 0, -1, 2**63, 2**70, -(2**70), 1e308, -1e308, 1.5, "", "x" * 5000, "\x00", "a\nb",
    "\u202e\u0301", [], {}, [None], [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]], {"a": {"b": {"c": {"d": [1, {}]}}}},
    ["x"] * 2000, [1, "a", None, {}], {"$where": "1"}, "*a*a*a*a*a*a*b", "/(a|a)*b/", "../../etc/passwd",
]


def _places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a request: the path to it (keys and indexes)."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _places(v, (*path, i))
    return out


def _put(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _put(value[head], rest, new)}
    copy = list(value)
    copy[head] = _put(copy[head], rest, new)
    return copy


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("fuzz")) as s:
        # An API token: auth/logout, fuzzed too, leaves it working (it ends sessions only).
        s.token = s.call("auth/api_token", {"action": "add", "name": "fuzz"}, s.login())["token"]
        s.call("auth/userAdd", {"user": USER}, s.token)
        yield s


def test_every_call_has_an_example():
    assert set(EXAMPLES) == set(REGISTRY.calls), set(REGISTRY.calls) ^ set(EXAMPLES)


def _answer(srv, name: str, kargs: Any) -> None:
    r = srv.post(name, kargs, srv.token)
    body = r.json()
    assert status_of(r) < 500 and body["verdict"] in ("OK", "ERROR"), (name, kargs, body)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_hostile_value_in_every_field_is_answered_without_a_5xx(srv, name: str) -> None:
    """The whole grid: each place of the example times each hostile value."""
    example = EXAMPLES[name]
    for path in _places(example):
        for hostile in HOSTILE:
            _answer(srv, name, _put(example, path, hostile))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_random_json_in_any_field_is_answered_without_a_5xx(srv, name: str) -> None:
    example = EXAMPLES[name]

    @settings(max_examples=25, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.sampled_from(_places(example)), JSON)
    def run(path: tuple, value: Any) -> None:
        _answer(srv, name, _put(example, path, value))

    run()


@pytest.mark.parametrize(("name", "path", "value"), [
    # The report's two 500s: a facet order that is not a string, a window past any float.
    ("ds/get_index_zoom_histogram_lv3", ("options", "facets", "facets", 0, "order"), ["count"]),
    ("ds/behavior_summary_search", ("options", "facets", "facets", 0, "order"), {"count": 1}),
    ("ds/eventwatch_bucket_dao", ("bucket", "threshold", "window"), 1e308),
    ("ds/eventwatch_rule_test", ("bucket", "threshold", "window"), 1e308),
])
def test_the_reported_type_confusions_are_clear_errors(srv, name: str, path: tuple, value: Any) -> None:
    r = srv.post(name, _put(EXAMPLES[name], path, value), srv.token)
    assert status_of(r) == 400 and r.json()["verdict"] == "ERROR", r.json()
    assert ".".join(str(p) for p in path if isinstance(p, str))[-10:] in r.json()["error"].replace("[0]", "")


STRINGS = ["", "x" * 5000, "\x00", "a\nb", "..", "../../etc/passwd", "%00", "\u202e", "*a*a*a*b", "event\x00", "1e308"]


@pytest.mark.parametrize("param", ["type", "format", "customer"])
def test_hostile_import_parameters_are_answered_without_a_5xx(srv, param: str) -> None:
    for value in STRINGS:
        r = srv.http.post("/api/import/fuzz", params={param: value}, content=b'{"a": 1}\n',
                          headers={"Servicetoken": srv.token})
        assert status_of(r) < 500 and r.json()["verdict"] in ("OK", "ERROR"), (param, value, r.text)


def test_hostile_import_vendors_and_keys_are_answered_without_a_5xx(srv) -> None:
    for value in STRINGS[1:]:
        replies = [srv.http.post(f"/api/import/{quote(value, safe='')}", content=b"a=1\n",
                                 headers={"Servicetoken": srv.token})]
        if value.isprintable():  # an HTTP client cannot send the others in a header
            replies.append(srv.http.post("/api/import/fuzz", content=b"a=1\n",
                                         headers={"Servicetoken": srv.token, "Idempotency-Key": value.encode()}))
        for r in replies:
            assert status_of(r) < 500, (value, r.text)
