"""Rule calls over HTTP: bucket search, bucket dao, rule test; permissions and named errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from seclake.db.models import StoredRule
from seclake.detect.rulebook import starter_pack

SEARCH = "ds/eventwatch_bucket_search"
DAO = "ds/eventwatch_bucket_dao"
TEST = "ds/eventwatch_rule_test"

SSHD_FAIL = "<38>Nov 21 14:07:54 acme-bastion-01 sshd[20311]: Failed password for admin from 203.0.113.7 port 40000 ssh2"


def stored(srv, name: str) -> dict[str, Any] | None:
    """The rule's document in the database, or None."""
    with srv.services.db.session() as s:
        row = s.get(StoredRule, name)
        return None if row is None else row.document


def err(srv, name: str, kargs: Any, token: str, status: int = 400) -> str:
    """The error message without the call name the envelope starts it with."""
    return srv.fail(name, kargs, token, status=status).removeprefix(f"{name}: ")


def bucket(name: str, **over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": name, "behavior": "Test Behavior", "description": "a test rule about lateral movement",
        "query": "EventID:4625", "keyField": "IpAddress", "keyType": "ip", "risks": ["T1110"], "riskScore": 100,
    }
    d.update(over)
    return d


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory):
    # Its own server: these tests add and delete rules, which the shared server's detector would run.
    from tests.conftest import running_server  # noqa: PLC0415

    with running_server(tmp_path_factory.mktemp("rules")) as s:
        yield s


@pytest.fixture(scope="module")
def admin(srv) -> str:
    return srv.login()


@pytest.fixture(scope="module")
def analyst(srv, admin: str) -> str:
    return srv.add_user(admin, "ana", ["analyst"])


def test_starter_pack_is_installed_and_listed(srv, admin: str) -> None:
    listed = srv.call(DAO, {"action": "list"}, admin)
    names = {b["name"] for b in listed["buckets"]}
    assert {p.stem for p in starter_pack()} <= names and listed["total"] == len(listed["buckets"])
    got = srv.call(DAO, {"action": "get", "name": "brute-force-source"}, admin)["bucket"]
    assert got["threshold"] == {"function": "count", "window": "5m", "value": 10} and got["keyType"] == "ip"


def test_search_with_query_facets_paging(srv, admin: str, analyst: str) -> None:
    everything = srv.call(SEARCH, {"options": {"fetchLimit": 100}}, analyst)
    names = [b["name"] for b in everything["buckets"]]
    assert names == sorted(names) and everything["total"] == len(names)
    brute = srv.call(SEARCH, {"options": {"searchStr": "brute", "fetchLimit": 50}}, analyst)
    assert brute["total"] >= 3 and all("brute" in (b["name"] + b["description"]).lower() for b in brute["buckets"])
    facets = {"facets": [{"field": "risks", "size": 5}, {"field": "keyType", "size": 10}, {"field": "enabled"},
                         {"field": "dataset"}],
              "mustFilters": [{"field": "dataset", "terms": ["flow"]}]}
    flows = srv.call(SEARCH, {"options": {"facets": facets, "fetchLimit": 10,
                                          "range_from": 0, "range_to": 1, "range_field": "timestamp"}}, analyst)
    assert flows["total"] == 2 and {b["name"] for b in flows["buckets"]} == {"port-scan-flow", "large-outbound-transfer-flow"}
    aggs = flows["aggregations"]
    assert aggs["dataset"]["buckets"] == [{"key": "flow", "doc_count": 2}]
    assert aggs["enabled"]["buckets"] == [{"key": "true", "doc_count": 2}]
    assert {"key": "ip", "doc_count": 2} in aggs["keyType"]["buckets"]
    assert aggs["risks"]["doc_count_error_upper_bound"] == 0
    page1 = srv.call(SEARCH, {"options": {"fetchLimit": 3, "fetchOffset": 0}}, analyst)["buckets"]
    page2 = srv.call(SEARCH, {"options": {"fetchLimit": 3, "fetchOffset": 3}}, analyst)["buckets"]
    assert [b["name"] for b in page1 + page2] == names[:6]
    high = srv.call(SEARCH, {"options": {"searchStr": "riskScore:>=4000", "sortField": "riskScore",
                                         "sortOrder": "desc", "fetchLimit": 50}}, analyst)
    scores = [b["riskScore"] for b in high["buckets"]]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 4000
    by_text = srv.call(SEARCH, {"options": {"searchStr": 'description:"encoded command"'}}, analyst)
    assert [b["name"] for b in by_text["buckets"]] == ["encoded-powershell"]


def test_search_and_dao_in_the_clients_shapes(srv, admin: str, analyst: str) -> None:
    """RuleSearch reads the search-hit wrapper (one rule per hits.hits[]._source);
    the DAO is sent {action, args: {id, entry}} and read as entry/entries."""
    res = srv.call(SEARCH, {"options": {"searchStr": "brute", "fetchLimit": 100, "sortField": "name",
                                        "sortOrder": "asc", "facets": {"facets": [], "mustFilters": [],
                                                                       "mustNotFilters": []}}}, analyst)
    hits = res["hits"]["hits"]
    assert res["hits"]["total"] == len(hits) >= 3 and res["_shards"]["failed"] == 0
    assert all(h["_id"] == h["_source"]["name"] and h["_index"] == "eventwatch_bucket" for h in hits)
    assert [h["_source"] for h in hits] == res["buckets"]
    listed = srv.call(DAO, {"action": "list"}, analyst)
    assert listed["entries"] == listed["buckets"] and listed["tags"] == [] and listed["groups"] == []
    got = srv.call(DAO, {"action": "get", "args": {"id": "brute-force-source"}}, analyst)
    assert got["entry"]["name"] == "brute-force-source" and got["entry"] == got["bucket"]
    name = "client-form"
    srv.call(DAO, {"action": "add", "args": {"entry": bucket(name)}}, admin)
    assert srv.call(DAO, {"action": "toggle", "args": {"id": name}}, admin)["bucket"]["enabled"] is False
    assert srv.call(DAO, {"action": "toggle", "args": {"id": name}}, admin)["bucket"]["enabled"] is True
    srv.call(DAO, {"action": "delete", "args": {"id": name}}, admin)
    assert stored(srv, name) is None


def test_search_errors_name_the_option(srv, analyst: str) -> None:
    assert "position" in srv.fail(SEARCH, {"options": {"searchStr": "a AND ("}}, analyst)
    assert err(srv, SEARCH, {"options": {"fetchLimit": -1}}, analyst).startswith("kargs.options.fetchLimit")


def test_add_update_toggle_delete(srv, admin: str, new_name: Callable[[str], str]) -> None:
    name = new_name("r-")
    added = srv.call(DAO, {"action": "add", "bucket": bucket(name)}, admin)
    assert added["action"] == "add" and added["name"] == name and added["bucket"]["enabled"] is True
    assert stored(srv, name) == added["bucket"]  # a row of the database, as the wire shows it
    assert srv.services.rules.get(name).risk_score == 100
    assert "exists already" in srv.fail(DAO, {"action": "add", "bucket": bucket(name)}, admin, status=409)
    updated = srv.call(DAO, {"action": "update", "bucket": bucket(name, riskScore=250)}, admin)
    assert updated["bucket"]["riskScore"] == 250
    toggled = srv.call(DAO, {"action": "toggle", "name": name, "enabled": False}, admin)
    assert toggled["bucket"]["enabled"] is False and name not in {r.name for r in srv.services.rules.enabled()}
    found = srv.call(SEARCH, {"options": {"searchStr": f'name:"{name}"'}}, admin)
    assert found["total"] == 1 and found["buckets"][0]["enabled"] is False
    deleted = srv.call(DAO, {"action": "delete", "name": name}, admin)
    assert deleted["action"] == "delete" and deleted["name"] == name
    assert stored(srv, name) is None
    assert "no rule named" in srv.fail(DAO, {"action": "get", "name": name}, admin, status=404)
    assert "no rule named" in srv.fail(DAO, {"action": "update", "bucket": bucket(name)}, admin, status=404)
    # The audit log holds who changed rules, with which call and how it ended.
    audit = srv.services.audit.recent(50)
    mine = [e for e in audit if e["call"] == DAO and e["username"] == "admin" and e["outcome"] == "OK"]
    assert len(mine) >= 4
    details = {e["detail"] for e in mine}
    assert {f"rule {name!r}: add", f"rule {name!r}: update", f"rule {name!r}: toggle enabled=False",
            f"rule {name!r}: delete"} <= details


def test_many_rules_toggle_in_one_call_and_one_version(srv, admin: str, analyst: str,
                                                         new_name: Callable[[str], str]) -> None:
    """Enabling a whole Sigma import one call per rule rebuilt the rule index per call; `names`
    changes them together, all or nothing, as one new version of the rule book."""
    names = [new_name("bulk-") for _ in range(3)]
    for name in names:
        srv.call(DAO, {"action": "add", "bucket": bucket(name)}, admin)
    version = srv.services.rules.version
    off = srv.call(DAO, {"action": "toggle", "names": names, "enabled": False}, admin)
    assert off["names"] == names and off["changed"] == 3 and off["version"] == version + 1
    assert not set(names) & {r.name for r in srv.services.rules.enabled()}
    assert [stored(srv, n)["enabled"] for n in names] == [False] * 3
    # Already as asked: nothing changes, no new version.
    again = srv.call(DAO, {"action": "toggle", "names": names[:2], "enabled": False}, admin)
    assert again["changed"] == 0 and again["version"] == version + 1
    # One unknown name refuses them all.
    assert "no rule named 'nope-1'" in srv.fail(
        DAO, {"action": "toggle", "names": [names[0], "nope-1", "nope-2"], "enabled": True}, admin, status=404)
    assert stored(srv, names[0])["enabled"] is False
    assert "admin permission" in srv.fail(DAO, {"action": "toggle", "names": names, "enabled": True}, analyst,
                                          status=403)
    on = srv.call(DAO, {"action": "toggle", "names": names, "enabled": True}, admin)
    assert on["changed"] == 3 and set(names) <= {r.name for r in srv.services.rules.enabled()}
    assert err(srv, DAO, {"action": "toggle", "names": names}, admin).startswith("kargs.enabled: is required")
    assert err(srv, DAO, {"action": "toggle", "names": names, "name": names[0], "enabled": True},
               admin).startswith("kargs.names: goes alone")
    assert err(srv, DAO, {"action": "toggle", "names": ["x"] * 10_001, "enabled": True},
               admin).startswith("kargs.names: ")


def test_analyst_may_read_but_not_write(srv, admin: str, analyst: str) -> None:
    assert srv.call(DAO, {"action": "list"}, analyst)["total"] > 0
    assert srv.call(DAO, {"action": "get", "name": "credential-dumping"}, analyst)["bucket"]["riskScore"] == 4500
    for kargs in (
        {"action": "add", "bucket": bucket("by-analyst")},
        {"action": "update", "bucket": bucket("credential-dumping")},
        {"action": "toggle", "name": "credential-dumping", "enabled": False},
        {"action": "delete", "name": "credential-dumping"},
    ):
        message = srv.fail(DAO, kargs, analyst, status=403)
        assert "ana" in message and "admin permission" in message
    assert srv.services.rules.get("credential-dumping").enabled is True
    assert srv.services.rules.get_or_none("by-analyst") is None


@pytest.mark.parametrize(
    ("kargs", "starts"),
    [
        ({"action": "explode"}, "kargs.action: must be one of"),
        ({}, "kargs.action: is required"),
        ({"action": "list", "enable": True}, "kargs.enable: unknown field; use action, bucket"),
        ({"action": "add"}, "kargs.bucket: is required"),
        ({"action": "add", "bucket": "x"}, "kargs.bucket: must be an object"),
        ({"action": "add", "bucket": bucket("../../etc/x")}, "kargs.bucket.name: "),
        ({"action": "add", "bucket": bucket("t1", threshold={"function": "count", "window": "5y", "value": 3})},
         "kargs.bucket.threshold.window: "),
        ({"action": "add", "bucket": bucket("t1", riskScore="high")}, "kargs.bucket.riskScore: must be an integer"),
        ({"action": "add", "bucket": bucket("t1", attributes=[{"field": "a"}] * 51)},
         "kargs.bucket.attributes: must hold at most 50 entries, not 51"),
        ({"action": "add", "bucket": bucket("t1", query="EventID:(4625")}, "bucket.query: query error at position"),
        ({"action": "toggle", "name": "credential-dumping"}, "kargs.enabled: is required: true or false"),
        ({"action": "delete", "name": "../secrets"}, "kargs.name: "),
        ({"action": "get"}, "kargs.name: is required"),
        ({"action": "get", "name": ["a"]}, "kargs.name: "),
    ],
)
def test_bad_dao_requests_name_the_field(srv, admin: str, kargs: dict[str, Any], starts: str) -> None:
    assert err(srv, DAO, kargs, admin).startswith(starts)


def test_rule_test_with_a_log_line_and_a_stored_rule(srv, analyst: str) -> None:
    got = srv.call(TEST, {"bucket": {"name": "brute-force-source"}, "input": SSHD_FAIL}, analyst)
    assert got["matched"] is True and got["key"] == "203.0.113.7" and got["keyType"] == "ip"
    assert {"key": "user.name", "aliase": "user", "value": "admin"} in got["attributes"]
    assert got["risks"] == ["T1110", "T1110.001", "T1110.003"] and got["riskScore"] == 4000 and got["behavior"] == "Brute Force Login"
    assert "adds 1" in got["thresholdNote"] and "would not fire on its own" in got["thresholdNote"]
    assert got["wouldFire"] is False and got["record"]["@source"] == "test"


def test_rule_test_with_a_record_and_an_ad_hoc_rule(srv, analyst: str) -> None:
    record = {"@timestamp": 1, "@fields": {"EventID": 4625, "IpAddress": "198.51.100.9", "TargetUserName": "bob"}}
    adhoc = bucket("adhoc", attributes=[{"field": "TargetUserName", "aliase": "user"}])
    got = srv.call(TEST, {"bucket": adhoc, "input": record}, analyst)
    assert got["matched"] and got["key"] == "198.51.100.9" and got["thresholdNote"] is None and got["wouldFire"]
    assert got["attributes"] == [{"key": "TargetUserName", "aliase": "user", "value": "bob"}]
    # Nothing was stored.
    assert srv.services.rules.get_or_none("adhoc") is None
    # An event hit as search returns it works too; a record the rule does not select does not fire.
    miss = srv.call(TEST, {"bucket": adhoc, "input": {"_source": {"@fields": {"EventID": 4624}}}}, analyst)
    assert miss["matched"] is False and miss["key"] is None and miss["wouldFire"] is False
    one = bucket("adhoc", threshold={"function": "sum", "field": "bytes", "window": "1h", "value": 100})
    big = srv.call(TEST, {"bucket": one, "input": {"@fields": {**record["@fields"], "bytes": 500}}}, analyst)
    assert "would fire on its own" in big["thresholdNote"] and big["wouldFire"] is True


@pytest.mark.parametrize(
    ("kargs", "starts"),
    [
        ({"input": "x"}, "kargs.bucket: is required"),
        ({"bucket": {"name": "brute-force-source"}}, "kargs.input: is required"),
        ({"bucket": {"name": "brute-force-source"}, "input": 5}, "kargs.input: must be a log line"),
        ({"bucket": {"name": "brute-force-source"}, "input": "   "}, "kargs.input: is a blank line"),
        ({"bucket": {"name": "../x"}, "input": "a"}, "kargs.bucket.name: "),
        ({"bucket": bucket("t", keyType=""), "input": "a"}, "kargs.bucket.keyType: "),
        ({"bucket": bucket("t"), "input": "a", "store": True}, "kargs.store: unknown field; use bucket, sigma, input"),
    ],
)
def test_bad_rule_tests_name_the_field(srv, analyst: str, kargs: dict[str, Any], starts: str) -> None:
    assert err(srv, TEST, kargs, analyst).startswith(starts)


def test_rule_test_of_an_unknown_rule(srv, analyst: str) -> None:
    assert "no rule named" in srv.fail(TEST, {"bucket": {"name": "nope"}, "input": "a"}, analyst, status=404)


def test_ingest_role_may_not_read_rules(srv, admin: str) -> None:
    token = srv.add_user(admin, "feeder", ["ingest"])
    srv.fail(SEARCH, {"options": {}}, token, status=403)
    srv.fail(DAO, {"action": "list"}, token, status=403)
