"""The notification calls over HTTP (api/calls/notifications.py): admins
only, secrets in no answer, conflicts and unknown names said clearly."""

from __future__ import annotations

import pytest

from tests.conftest import running_server

SECRET = "whsec-calls-secret-0123456789"
KEY = "R0UT1NG-calls-key"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("notify-calls")) as server:
        server.token = server.login()
        server.analyst = server.add_user(server.token, "analyst-n", ["analyst"])
        yield server


CALLS = [("notify/rule_dao", {"action": "list"}), ("notify/destination_dao", {"action": "list"}),
         ("notify/delivery_list", {}), ("notify/resend", {"id": 1}), ("notify/test", {"name": "x"}),
         ("ds/platform_notification_endpoint_dao", {"action": "list"})]


@pytest.mark.parametrize(("name", "kargs"), CALLS)
def test_only_admins_call_them(srv, name, kargs) -> None:
    assert "permission" in srv.fail(name, kargs, srv.analyst, status=403)


def test_secrets_are_in_no_answer(srv) -> None:
    for d in ({"name": "c-hook", "kind": "webhook", "url": "http://127.0.0.1:9/x", "secret": SECRET,
               "headers": {"Authorization": "Bearer tok-123456"}},
              {"name": "c-pager", "kind": "pagerduty", "routingKey": KEY},
              {"name": "c-slack", "kind": "slack", "url": "https://hooks.example/T/B/slack-secret-part"}):
        added = srv.call("notify/destination_dao", {"action": "add", "destination": d}, srv.token)
        assert SECRET not in str(added) and KEY not in str(added) and "slack-secret-part" not in str(added)
    answers = [srv.call("notify/destination_dao", {"action": "list"}, srv.token),
               srv.call("notify/destination_dao", {"action": "get", "name": "c-hook"}, srv.token),
               srv.call("ds/platform_notification_endpoint_dao", {"action": "list"}, srv.token)]
    for answer in answers:
        text = str(answer)
        assert SECRET not in text and KEY not in text and "tok-123456" not in text and "slack-secret-part" not in text
    assert answers[1]["destination"]["secretsSet"] == ["headers", "secret"]


def test_conflicts_and_unknown_names(srv) -> None:
    d = {"name": "c-twice", "kind": "webhook", "url": "http://127.0.0.1:9/x"}
    srv.call("notify/destination_dao", {"action": "add", "destination": d}, srv.token)
    assert "exists" in srv.fail("notify/destination_dao", {"action": "add", "destination": d}, srv.token, status=409)
    rule = {"name": "c-rule", "destinations": ["c-twice"]}
    srv.call("notify/rule_dao", {"action": "add", "rule": rule}, srv.token)
    assert "c-rule" in srv.fail("notify/destination_dao", {"action": "delete", "name": "c-twice"}, srv.token, status=409)
    assert "no destination named 'nobody'" in srv.fail(
        "notify/rule_dao", {"action": "add", "rule": {"name": "c-other", "destinations": ["nobody"]}}, srv.token)
    assert "no notification rule" in srv.fail("notify/rule_dao", {"action": "get", "name": "nope"}, srv.token, status=404)
    assert "no delivery" in srv.fail("notify/resend", {"id": 999}, srv.token, status=404)
    assert "rule.throttleSeconds" in srv.fail(
        "notify/rule_dao", {"action": "add", "rule": {**rule, "name": "c-neg", "throttleSeconds": -5}}, srv.token)
    assert "template" in srv.fail(
        "notify/rule_dao", {"action": "add", "rule": {**rule, "name": "c-tpl", "template": "{% for %}"}}, srv.token)
    srv.call("notify/rule_dao", {"action": "delete", "name": "c-rule"}, srv.token)
    srv.call("notify/destination_dao", {"action": "delete", "name": "c-twice"}, srv.token)
