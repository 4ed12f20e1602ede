"""What the notification tests share: a behavior rule that fires on every
imported line, lines of distinct or equal keys, and the calls that set up a
destination and a notification rule, all through a real server's API."""

from __future__ import annotations

import time
from typing import Any

import orjson

SECRET = "whsec-test-secret-0123456789"
BEHAVIOR_RULE = {"name": "notify-failed-logon", "behavior": "Failed logon", "description": "a failed logon",
                 "query": "EventID:4625", "keyField": "IpAddress", "keyType": "ip", "risks": ["T1110"],
                 "riskScore": 5000}


def setup(srv, token: str, destination: dict[str, Any], **rule: Any) -> None:
    srv.call("ds/eventwatch_bucket_dao", {"action": "add", "bucket": BEHAVIOR_RULE}, token)
    srv.call("notify/destination_dao", {"action": "add", "destination": destination}, token)
    srv.call("notify/rule_dao", {"action": "add", "rule": {
        "name": "notify-on-logon", "on": "behavior", "rules": [BEHAVIOR_RULE["name"]],
        "destinations": [destination["name"]], "throttleSeconds": 0, **rule}}, token)


def lines(ips: list[str]) -> bytes:
    now = int(time.time() * 1000)
    return b"\n".join(orjson.dumps({"@timestamp": now + i, "EventID": 4625, "IpAddress": ip, "TargetUserName": "bob"})
                      for i, ip in enumerate(ips))


def ingest(srv, token: str, ips: list[str]) -> None:
    r = srv.http.post("/api/import/json", content=lines(ips), headers={"Servicetoken": token})
    assert r.status_code == 200 and r.json()["verdict"] == "OK", r.text
