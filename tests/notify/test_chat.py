"""Slack, Microsoft Teams and PagerDuty destinations: their message shapes,
POSTed to a local HTTP receiver standing in for hooks.slack.com, the Teams
webhook and events.pagerduty.com (the real services cannot be reached from
where the tests run). PagerDuty: a trigger per summary (its id the dedup
key), and a resolve when the summary is resolved by triage."""

from __future__ import annotations

import time

from tests.notify.helpers import ingest, setup
from tests.notify.receiver import Receiver


def test_slack_blocks_and_teams_adaptive_card(start_server) -> None:
    slack, teams = Receiver(), Receiver()
    srv = start_server(commit_interval_seconds=0.2, public_url="https://seclake.example.org")
    token = srv.login()
    setup(srv, token, {"name": "slack", "kind": "slack", "url": slack.url, "channel": "#soc"})
    srv.call("notify/destination_dao", {"action": "add", "destination": {"name": "teams", "kind": "teams",
                                                                         "url": teams.url}}, token)
    srv.call("notify/rule_dao", {"action": "update", "rule": {"name": "notify-on-logon", "destinations": ["slack", "teams"],
                                                              "throttleSeconds": 0}}, token)
    ingest(srv, token, ["10.3.0.1"])
    [s] = slack.wait_for(1)
    [t] = teams.wait_for(1)
    assert s["channel"] == "#soc" and "Failed logon" in s["text"]
    assert [b["type"] for b in s["blocks"]] == ["header", "section", "actions"]
    assert s["blocks"][2]["elements"][0]["url"].startswith("https://seclake.example.org/summaries?")
    card = t["attachments"][0]
    assert t["type"] == "message" and card["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert card["content"]["type"] == "AdaptiveCard" and "Failed logon" in card["content"]["body"][0]["text"]
    assert card["content"]["actions"][0]["type"] == "Action.OpenUrl"
    # The incoming-webhook URLs are the credentials: never shown.
    listed = srv.call("notify/destination_dao", {"action": "list"}, token)["destinations"]
    assert slack.url not in str(listed) and teams.url not in str(listed)
    assert {d["name"]: d["secretsSet"] for d in listed} == {"slack": ["url"], "teams": ["url"]}
    # A Go client's Slack endpoint names its integration: the Slack destination of that name lends its URL.
    srv.call("ds/platform_notification_endpoint_dao", {"action": "add", "args": {"entry": {
        "name": "ops-endpoint", "integration": "Slack", "action": "notify",
        "slack": {"channel": "#ops", "integrationName": "slack"}}}}, token)
    assert srv.call("notify/test", {"name": "ops-endpoint"}, token) == {"sent": True, "error": None}
    assert slack.wait_for(2)[1]["channel"] == "#ops"
    slack.stop()
    teams.stop()


def test_pagerduty_triggers_per_summary_and_resolves_with_it(start_server) -> None:
    pd = Receiver()
    srv = start_server(commit_interval_seconds=0.2)
    token = srv.login()
    setup(srv, token, {"name": "pager", "kind": "pagerduty", "url": pd.url, "routingKey": "R0UT1NGKEY"},
          on="summary_level", level="serious", rules=[])
    ingest(srv, token, ["10.4.0.1"])  # one behavior of score 5000: the summary reaches serious
    [trigger] = pd.wait_for(1)
    assert trigger["event_action"] == "trigger" and trigger["routing_key"] == "R0UT1NGKEY"
    assert trigger["payload"]["severity"] == "error" and trigger["payload"]["summary"].startswith("seclake: ip 10.4.0.1")
    sid = trigger["dedup_key"]
    ingest(srv, token, ["10.4.0.1"])  # still serious: no second trigger
    time.sleep(1.0)
    assert len(pd.requests) == 1
    srv.call("ds/behavior_incident_update", {"id": sid, "status": "resolved"}, token)
    resolve = pd.wait_for(2)[1]
    assert resolve == {"routing_key": "R0UT1NGKEY", "event_action": "resolve", "dedup_key": sid}
    assert "R0UT1NGKEY" not in str(srv.call("notify/destination_dao", {"action": "list"}, token))
    pd.stop()
