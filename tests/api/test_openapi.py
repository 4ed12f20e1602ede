"""The calls' models and their OpenAPI document (api/openapi.py): the document
is valid OpenAPI 3.1, served, and covers every call, and what a real server
answers validates against the reply models, so the document cannot drift.
(That every call has its models is the registry's own rule: ``call`` takes
them as required arguments.)"""

from __future__ import annotations

import time
from typing import Any

import pytest
from openapi_spec_validator import validate
from pydantic import TypeAdapter

from seclake.api.openapi import openapi_document
from seclake.api.registry import REGISTRY
from seclake.service.demo import load_demo
from tests.conftest import running_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("schema"), commit_interval_seconds=0.2) as s:
        load_demo(s.services.ingestion, days=1, end_ms=int(time.time() * 1000))
        s.services.lake.flush()
        s.services.detector.save()
        s.token = s.login()
        yield s


def test_the_document_is_served_to_anyone_and_is_valid_openapi(srv):
    r = srv.http.get("/api/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    document = r.json()
    validate(document)
    assert document["openapi"] == "3.1.0"
    assert {p.removeprefix("/api/") for p in document["paths"]} == (
        set(REGISTRY.calls) | {r.pattern for r in REGISTRY.raw_routes})


def _delivery(srv) -> int:
    """A delivery in the outbox (notify/resend needs one): as the detector's save writes it."""
    from seclake.notify import outbox

    with srv.services.db.session(write=True) as s:
        row = outbox.add(s, rule="schema-notify", destination="schema-hook", subject="test", ref="schema",
                         event={"kind": "test"}, now_ms=0)
        s.flush()
        return row.id


def _sso_code(srv) -> str:
    """A one-time code as an identity provider's callback leaves it (the flow itself, against a real
    provider: tests/service/test_oidc.py), for a session opened as the callback opens one."""
    from seclake.service.oidc import Handoff
    from tests.conftest import ADMIN_PASSWORD

    code = "schema-sso-code"
    srv.services.oidc._handoffs[code] = Handoff(srv.services.login.login("admin", ADMIN_PASSWORD))
    return code


def test_what_the_server_answers_fits_the_reply_models(srv):
    now = int(time.time() * 1000)
    options = {"searchStr": "", "range_from": now - 2 * 86_400_000, "range_to": now + 60_000, "fetchLimit": 5,
               "facets": {"facets": [{"field": "status", "size": 5}]}}
    summary_id = srv.call("ds/behavior_summary_search", {"options": {**options, "range_field": "from"}},
                          srv.token)["hits"]["hits"][0]["_id"]
    rule = {"name": "schema-rule", "behavior": "Schema", "description": "a rule of the schema test",
            "query": "EventID:4625", "keyField": "IpAddress", "keyType": "ip", "risks": ["T1110"], "riskScore": 10}
    policy = {"name": "schema-policy", "filters": {"event": "@customer:acme"}}
    role = {"name": "schema-role", "permissions": ["search"]}
    user = {"username": "schema-user", "password": "schema-password-1", "roles": ["analyst"]}
    task_id = srv.call("ds/query_async", {"query": "| STATS n = COUNT(*)"}, srv.token)["id"]
    requests: list[tuple[str, Any]] = [
        ("auth/userList", {}),
        ("auth/ssoProviders", {}),
        ("auth/ssoSession", {"code": _sso_code(srv)}),
        ("auth/userAdd", {"user": user}),
        ("auth/getUser", {"username": "schema-user"}),
        ("auth/userUpdate", {"user": {"username": "schema-user", "firstName": "S"}}),
        ("auth/userUnlock", {"username": "schema-user"}),
        ("auth/addressUnlock", {"address": "192.0.2.1"}),
        ("auth/login", {"username": "schema-user", "password": "schema-password-1"}),
        ("auth/api_token", {"action": "add", "args": {"entry": {"name": "schema", "roles": ["analyst"]}}}),
        ("auth/api_token", {"action": "list"}),
        ("auth/api_token", {"action": "list", "revoked": True}),
        ("auth/api_token", {"action": "delete", "args": {"id": "schema"}}),
        ("auth/dataPolicyAdd", {"policy": policy}),
        ("auth/dataPolicyUpdate", {"policy": {**policy, "description": "d"}}),
        ("auth/dataPolicyList", {}),
        ("auth/roleAdd", {"role": role}),
        ("auth/roleUpdate", {"role": {**role, "description": "d"}}),
        ("auth/roleList", {}),
        ("auth/roleDelete", {"name": "schema-role"}),
        ("auth/dataPolicyDelete", {"name": "schema-policy"}),
        ("auth/userDelete", {"username": "schema-user"}),
        ("ds/get_index_zoom_histogram_lv3", {"partition": "default", "dataType": "event", "options": {
            **options, "dateFacetField": "@timestamp",
            "facets": {"facets": [{"field": "@sender", "size": 5}],
                       "dateFacets": [{"name": "dateHistogram", "key": "@timestamp", "interval": "hour"}]}}}),
        ("ds/get_index_zoom_histogram_lv3", {"partition": "default", "dataType": "flow",
                                             "options": {**options, "dateFacetField": "@timestamp", "facets": {}}}),
        ("ds/behavior_summary_search", {"options": {**options, "range_field": "from"}}),
        ("ds/behavior_incident_update", {"id": summary_id, "status": "acknowledged", "comment": "schema"}),
        ("ds/fsm_behavior_search", {"options": {**options, "range_field": "timestamp", "facets": {}}}),
        ("ds/audit_search", {"options": {**options, "range_field": "createdOn", "facets": {}}}),
        ("ds/eventwatch_bucket_search", {"options": {"searchStr": "brute"}}),
        ("ds/collector_list", {}),
        ("ds/field_catalog", {"dataType": "event", "options": {"searchStr": "*", "sources": 5}}),
        ("ds/eventwatch_bucket_dao", {"action": "add", "bucket": rule}),
        ("ds/eventwatch_bucket_dao", {"action": "list"}),
        ("ds/eventwatch_bucket_dao", {"action": "delete", "name": "schema-rule"}),
        ("ds/eventwatch_rule_test", {"bucket": rule, "input": {"@fields": {"EventID": 4625, "IpAddress": "1.2.3.4"}}}),
        ("notify/destination_dao", {"action": "add", "destination": {
            "name": "schema-hook", "kind": "webhook", "url": "http://127.0.0.1:9/hook", "secret": "s" * 16}}),
        ("notify/destination_dao", {"action": "list"}),
        ("notify/rule_dao", {"action": "add", "rule": {"name": "schema-notify", "destinations": ["schema-hook"]}}),
        ("notify/rule_dao", {"action": "list"}),
        ("notify/test", {"name": "schema-hook"}),
        ("notify/delivery_list", {}),
        ("notify/resend", {"id": _delivery(srv)}),
        ("ds/platform_notification_endpoint_dao", {"action": "add", "args": {"entry": {
            "name": "schema-mail", "integration": "Email", "action": "mail", "email": {"to": ["a@example.org"]}}}}),
        ("ds/platform_notification_endpoint_dao", {"action": "list"}),
        ("ds/query", {"query": "| STATS n = COUNT(*), first = MIN(@timestamp) BY @sender | SORT n DESC | LIMIT 3",
                      "dataType": "event", "range_from": options["range_from"], "range_to": options["range_to"]}),
        ("ds/query_async", {"query": "| STATS n = COUNT(*)"}),
        ("ds/query_async_get", {"id": task_id}),
        ("ds/query_async_cancel", {"id": task_id}),
        ("auth/logout", {}),
    ]
    r = srv.http.post("/api/import/schema", content=b"a=1\n", headers={"Servicetoken": srv.token})
    TypeAdapter(REGISTRY.raw_routes[0].reply).validate_python(r.json()["response"])
    seen = set()
    for name, kargs in requests:  # auth/logout last: it ends this session
        call = REGISTRY.calls[name]
        call.request.model_validate(kargs)  # the examples are what the document says to send
        # strict: a number where the model says string (or the reverse) fails, as it does in Go.
        TypeAdapter(call.reply).validate_python(srv.call(name, kargs, srv.token), strict=True)
        seen.add(name)
    assert seen == set(REGISTRY.calls)


# Models another engineer's area owns, whose fields are not described yet:
# named here so the gap is visible, not silently allowed (issue 42).
UNDESCRIBED: set[str] = set()  # titles of models allowed to lack descriptions (none)


def _undescribed(schema: dict[str, Any], schemas: dict[str, Any], where: str, seen: set[str]) -> list[str]:
    """Every property, reached from ``schema`` through $refs, items and alternatives, without a description."""
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            return []
        seen.add(name)
        return _undescribed(schemas[name], schemas, name, seen)
    if schema.get("title") in UNDESCRIBED:
        return []
    missing = []
    for prop, sub in (schema.get("properties") or {}).items():
        if not sub.get("description"):
            missing.append(f"{where}.{prop}")
        missing += _undescribed(sub, schemas, f"{where}.{prop}", seen)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            missing += _undescribed(schema[key], schemas, where, seen)
    for alternative in schema.get("anyOf", []) + schema.get("oneOf", []) + schema.get("allOf", []):
        missing += _undescribed(alternative, schemas, where, seen)
    return missing


def test_every_field_of_every_call_is_described():
    document = openapi_document()
    schemas = document["components"]["schemas"]
    missing: list[str] = []
    for path, item in document["paths"].items():
        op = item["post"]
        assert op["summary"], f"{path} has no summary"
        body = op["requestBody"]["content"].get("application/json")
        if body:
            missing += _undescribed(body["schema"]["properties"]["kargs"], schemas, f"{path} kargs", set())
        ok = op["responses"]["200"]["content"]["application/json"]["schema"]["oneOf"][0]
        missing += _undescribed(ok["properties"]["response"], schemas, f"{path} response", set())
        missing += [f"{path} parameter {p['name']}" for p in op.get("parameters", []) if not p.get("description")]
        error = op["responses"]["200"]["content"]["application/json"]["schema"]["oneOf"][1]
        missing += _undescribed(error, schemas, f"{path} error", set())
    assert not missing, f"{len(missing)} fields without a description:\n" + "\n".join(missing)
    # The reference page's titles read as English ("Data policys" was one).
    summaries = [item["post"]["summary"] for item in document["paths"].values()]
    assert not [s for s in summaries if "icys" in s], summaries
    assert document["paths"]["/api/auth/dataPolicyList"]["post"]["summary"] == "Every data policy, as {policies}."
