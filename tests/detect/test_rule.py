"""Rules: validation names the field, files name file and line, selectors and keys work on records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seclake.detect.rule import (
    MAX_ATTRIBUTES,
    MAX_RISKS,
    RuleFileError,
    Template,
    load_rule_file,
    rule_from_dict,
)
from seclake.errors import LimitExceeded, QueryError, ValidationFailed


def base(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": "ssh-brute",
        "behavior": "Brute Force Login",
        "description": "many failures",
        "query": '@source:sshd AND @message:"Failed password"',
        "keyField": "@message",
        "keyPattern": "from {} port",
        "keyType": "ip",
        "attributes": [{"field": "@sender", "aliase": "host"}],
        "risks": ["T1110"],
        "riskScore": 4000,
        "threshold": {"function": "count", "window": "5m", "value": 10},
    }
    d.update(over)
    return {k: v for k, v in d.items() if v is not ...}


SSHD = {
    "@message": "<38>Nov 21 14:07:54 bastion sshd[1]: Failed password for invalid user admin from 203.0.113.7 port 40000 ssh2",
    "@source": "sshd",
    "@sender": "acme-bastion-01",
    "@timestamp": 1_700_000_000_000,
    "@fields": {"program": "sshd"},
    "@type": "event",
}


def test_round_trip_dict_rule_dict() -> None:
    rule = rule_from_dict(base())
    d = rule.to_dict()
    assert d["keyField"] == "@message" and d["riskScore"] == 4000 and d["scope"] == "global" and d["enabled"] is True
    assert d["threshold"] == {"function": "count", "window": "5m", "value": 10}
    assert d["dataset"] == "event" and d["mustFilters"] == [] and d["mustNotFilters"] == []
    assert rule_from_dict(d) == rule
    assert rule_from_dict(d).to_dict() == d


def test_round_trip_keeps_every_field() -> None:
    d = base(
        dataset="flow", query="_exists_:dp", keyField="sip", keyPattern=...,
        mustFilters=[{"field": "prot", "terms": ["6", 17]}], mustNotFilters=[{"field": "dip", "terms": ["10.0.0.1"]}],
        attributes=[{"field": "dip", "aliase": "target"}, {"field": "@message", "aliase": "u", "pattern": ["a {} b", "c {}"]}],
        risks=["T1046", "recon"], scope="acme", enabled=False,
        threshold={"function": "distinct", "field": "dp", "window": 60, "value": 100},
    )
    rule = rule_from_dict(d)
    out = rule.to_dict()
    assert out["threshold"] == {"function": "distinct", "field": "dp", "window": "1m", "value": 100}
    assert rule.threshold is not None and rule.threshold.path == "@fields.dp" and rule.threshold.window_ms == 60_000
    assert out["mustFilters"] == [{"field": "prot", "terms": ["6", 17]}]
    assert out["attributes"][1] == {"field": "@message", "aliase": "u", "pattern": ["a {} b", "c {}"]}
    assert rule_from_dict(out) == rule


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "../etc/passwd"}, "bucket.name"),
        ({"name": ".hidden"}, "bucket.name"),
        ({"name": "a/b"}, "bucket.name"),
        ({"name": "x" * 101}, "bucket.name"),
        ({"name": 7}, "bucket.name"),
        ({"behavior": ""}, "bucket.behavior"),
        ({"behavior": ...}, "bucket.behavior"),
        ({"description": "d" * 5000}, "bucket.description"),
        ({"dataset": "behavior"}, "bucket.dataset"),
        ({"query": ["a"]}, "bucket.query"),
        ({"query": "", "mustFilters": ...}, "bucket.query"),
        ({"mustFilters": {"field": "a"}}, "bucket.mustFilters"),
        ({"mustFilters": [{"field": "a", "terms": "x"}]}, "bucket.mustFilters[0].terms"),
        ({"mustNotFilters": [{"field": "", "terms": []}]}, "bucket.mustNotFilters[0].field"),
        ({"mustFilters": [{"field": "a", "terms": [], "x": 1}]}, "bucket.mustFilters[0].x"),
        ({"keyField": ...}, "bucket.keyField"),
        ({"keyField": "two words"}, "bucket.keyField"),
        ({"keyPattern": "no hole"}, "bucket.keyPattern[0]"),
        ({"keyPattern": ["{} {}"]}, "bucket.keyPattern[0]"),
        ({"keyPattern": [1]}, "bucket.keyPattern[0]"),
        ({"keyType": "ip address"}, "bucket.keyType"),
        ({"attributes": "host"}, "bucket.attributes"),
        ({"attributes": [{"field": "a"}] * (MAX_ATTRIBUTES + 1)}, "bucket.attributes"),
        ({"attributes": [{"field": "a"}, {"aliase": "b"}]}, "bucket.attributes[1].field"),
        ({"attributes": [{"field": "a", "aliase": 3}]}, "bucket.attributes[0].aliase"),
        ({"attributes": [{"field": "a", "color": "red"}]}, "bucket.attributes[0].color"),
        ({"risks": ["T1"] * (MAX_RISKS + 1)}, "bucket.risks"),
        ({"risks": ["T1", 5]}, "bucket.risks[1]"),
        ({"riskScore": "4000"}, "bucket.riskScore"),
        ({"riskScore": -1}, "bucket.riskScore"),
        ({"riskScore": True}, "bucket.riskScore"),
        ({"riskScore": 10**9}, "bucket.riskScore"),
        ({"enabled": "yes"}, "bucket.enabled"),
        ({"scope": 1}, "bucket.scope"),
        ({"threshold": 5}, "bucket.threshold"),
        ({"threshold": {"function": "avg", "window": "5m", "value": 1}}, "bucket.threshold.function"),
        ({"threshold": {"function": "count", "window": "5y", "value": 1}}, "bucket.threshold.window"),
        ({"threshold": {"function": "count", "window": "0s", "value": 1}}, "bucket.threshold.window"),
        ({"threshold": {"function": "count", "window": "2d", "value": 1}}, "bucket.threshold.window"),
        ({"threshold": {"function": "count", "window": True, "value": 1}}, "bucket.threshold.window"),
        ({"threshold": {"function": "count", "window": "5m", "value": 0}}, "bucket.threshold.value"),
        ({"threshold": {"function": "count", "window": "5m", "value": 2.5}}, "bucket.threshold.value"),
        ({"threshold": {"function": "count", "window": "5m", "value": 10**6}}, "bucket.threshold.value"),
        ({"threshold": {"function": "count", "field": "x", "window": "5m", "value": 3}}, "bucket.threshold.field"),
        ({"threshold": {"function": "sum", "window": "5m", "value": 3}}, "bucket.threshold.field"),
        ({"threshold": {"function": "sum", "field": "b", "window": "5m", "value": float("inf")}}, "bucket.threshold.value"),
        ({"threshold": {"function": "count", "window": "5m", "value": 3, "every": 1}}, "bucket.threshold.every"),
        ({"keyfield": "typo"}, "bucket.keyfield"),
    ],
)
def test_validation_names_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        rule_from_dict(base(**change))
    assert info.value.field == field, info.value.message
    assert info.value.message.startswith(field + ": ")


def test_not_an_object() -> None:
    with pytest.raises(ValidationFailed, match="^bucket: must be an object"):
        rule_from_dict(["a"])
    with pytest.raises(ValidationFailed, match="^bucket: has a key that is not a string"):
        rule_from_dict({**base(), 1: "x"})


def test_bad_query_is_a_query_error_naming_the_field() -> None:
    with pytest.raises(QueryError) as info:
        rule_from_dict(base(query="a AND ("))
    assert info.value.message.startswith("bucket.query: query error at position 7")
    with pytest.raises(LimitExceeded, match="^bucket.query: "):
        rule_from_dict(base(query=" OR ".join(["a"] * 1100)))
    with pytest.raises(ValidationFailed, match="^bucket.query: must be at most 8192 characters long, not 9000"):
        rule_from_dict(base(query="a" * 9000))


def test_selector_key_attributes_and_signal() -> None:
    rule = rule_from_dict(base(attributes=[
        {"field": "@sender", "aliase": "host"},
        {"field": "@message", "aliase": "user", "pattern": ["invalid user {} from", "for {} from"]},
        {"field": "missing", "aliase": "absent"},
        {"field": "@tags"},
    ]))
    record = {**SSHD, "@tags": ["sshd", "auth"]}
    assert rule.matcher()(record) is True
    assert rule.matcher() is rule.matcher()  # compiled once
    assert rule.key_of(record) == "203.0.113.7"
    assert rule.attribute_values(record) == [
        {"key": "@sender", "aliase": "host", "value": "acme-bastion-01"},
        {"key": "@message", "aliase": "user", "value": "admin"},
        {"key": "@tags", "aliase": "@tags", "value": "sshd, auth"},
    ]
    assert rule.signal_value(record) == 1
    assert not rule.matcher()({**SSHD, "@message": "Accepted password for admin from 203.0.113.7 port 1"})
    # No key, no behavior.
    assert rule.key_of({**SSHD, "@message": "Failed password for admin"}) is None


def test_key_of_plain_fields_as_text() -> None:
    rule = rule_from_dict(base(query="EventID:4625", keyField="IpAddress", keyPattern=...))
    assert rule.key_of({"@fields": {"IpAddress": "10.1.2.3"}}) == "10.1.2.3"
    assert rule.key_of({"@fields": {"IpAddress": ["", 17]}}) == "17"
    assert rule.key_of({"@fields": {"IpAddress": True}}) == "true"
    assert rule.key_of({"@fields": {"IpAddress": 1.0}}) == "1"
    assert rule.key_of({"@fields": {}}) is None
    assert rule.key_of({"@fields": {"IpAddress": ""}}) is None
    assert rule.matcher()({"@fields": {"EventID": "4625"}})


def test_filters_are_part_of_the_selector() -> None:
    rule = rule_from_dict(base(
        query="EventID:4625", keyField="IpAddress", keyPattern=...,
        mustFilters=[{"field": "LogonType", "terms": [3, "10"]}],
        mustNotFilters=[{"field": "TargetUserName", "terms": ["svc_backup"]}],
    ))
    ok = {"@fields": {"EventID": 4625, "LogonType": "3", "TargetUserName": "bob", "IpAddress": "1.2.3.4"}}
    assert rule.matcher()(ok)
    assert not rule.matcher()({"@fields": {**ok["@fields"], "LogonType": 2}})
    assert not rule.matcher()({"@fields": {**ok["@fields"], "TargetUserName": "SVC_Backup"}})


def test_signal_values_for_sum_and_distinct() -> None:
    s = rule_from_dict(base(dataset="flow", query="_exists_:txB", keyField="sip", keyPattern=...,
                            threshold={"function": "sum", "field": "txB", "window": "1h", "value": 1e9}))
    assert s.signal_value({"@fields": {"txB": "1500"}}) == 1500
    assert s.signal_value({"@fields": {"txB": "lots"}}) is None
    assert s.signal_value({"@fields": {}}) is None
    d = rule_from_dict(base(dataset="flow", query="_exists_:dp", keyField="sip", keyPattern=...,
                            threshold={"function": "distinct", "field": "@metaflow.flow.dp", "window": "1m", "value": 100}))
    assert d.threshold is not None and d.threshold.path == "@fields.dp"
    assert d.signal_value({"@fields": {"dp": 443}}) == d.signal_value({"@fields": {"dp": "443"}}) == "443"
    assert d.signal_value({"@fields": {"dp": "HTTP"}}) == "http"


def test_templates_pick_one_word() -> None:
    t = Template.of("from {} port")
    assert t.extract("Failed password for x from 203.0.113.7 port 22") == "203.0.113.7"
    assert t.extract("from  203.0.113.7\tport") == "203.0.113.7"
    assert t.extract("from 203.0.113.7") is None
    assert Template.of("user={}").extract("a user=bob b") == "bob"
    assert Template.of("user={};").extract("user=; user=ann;") == "ann"
    assert Template.of("{}").extract("  first second") == "first"
    assert Template.of("x {}").extract("x") is None
    # Linear: a hostile value of one repeated word does not blow up.
    assert Template.of("a a a a {} b").extract("a " * 100_000) is None


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "rules" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


GOOD_YAML = """\
name: brute
behavior: Brute Force Login
description: failures
keyField: IpAddress
query: EventID:4625
keyType: ip
risks: [T1110]
riskScore: 4000
threshold: {function: count, window: 5m, value: 10}
"""


def test_load_one_rule_and_a_list(tmp_path: Path) -> None:
    [rule] = load_rule_file(write(tmp_path, "brute.yaml", GOOD_YAML))
    assert rule.name == "brute" and rule.threshold is not None and rule.threshold.window_ms == 300_000
    listed = "- " + GOOD_YAML.replace("\n", "\n  ").rstrip() + "\n- " + GOOD_YAML.replace("brute", "b2").replace("\n", "\n  ")
    rules = load_rule_file(write(tmp_path, "both.yaml", listed))
    assert [r.name for r in rules] == ["brute", "b2"]


def test_bad_query_names_file_and_line(tmp_path: Path) -> None:
    text = GOOD_YAML.replace("query: EventID:4625", "query: 'EventID:(4625'")
    assert text.splitlines()[4].startswith("query:")  # line 5
    with pytest.raises(RuleFileError) as info:
        load_rule_file(write(tmp_path, "brute.yaml", text))
    assert info.value.message.startswith("rules/brute.yaml line 5: query: query error at position")
    assert info.value.code == "invalid" and info.value.line == 5


@pytest.mark.parametrize(
    ("old", "new", "line", "says"),
    [
        ("keyField: IpAddress", "keyField: [IpAddress]", 4, "keyField: must be a string"),
        ("threshold: {function: count, window: 5m, value: 10}", "threshold:\n  function: count\n  window: 5y\n  value: 10",
         11, "threshold.window: '5y' is not a duration"),
        ("risks: [T1110]", "risks:\n  - T1110\n  - 12", 9, "risks[1]: must be a string, not a number"),
        ("riskScore: 4000", "riskScore: 4000\ncolour: red", 9, "colour: unknown field; use name, behavior"),
        ("keyType: ip", "keyType: ip\n  bad: indent", 7, "YAML: mapping values are not allowed"),
        ("name: brute", "name: 'brute", 10, "YAML: found unexpected end of stream"),
        # The offending character is named (libyaml's own message leaves it out).
        ("keyType: ip", "keyType: ip\n\tbad: tab", 7, "YAML: found character '\\t' that cannot start any token"),
    ],
)
def test_file_errors_name_the_line(tmp_path: Path, old: str, new: str, line: int, says: str) -> None:
    with pytest.raises(RuleFileError) as info:
        load_rule_file(write(tmp_path, "r.yaml", GOOD_YAML.replace(old, new)))
    assert info.value.message.startswith(f"rules/r.yaml line {line}: "), info.value.message
    assert says in info.value.message


def test_list_file_errors_name_the_item(tmp_path: Path) -> None:
    text = "- " + GOOD_YAML.replace("\n", "\n  ").rstrip() + "\n- " + GOOD_YAML.replace("riskScore: 4000", "riskScore: -4").replace("\n", "\n  ")
    with pytest.raises(RuleFileError) as info:
        load_rule_file(write(tmp_path, "two.yaml", text))
    assert info.value.message.startswith("rules/two.yaml line 17: [1].riskScore: must be at least 0")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "is empty"),
        ("just a string", "rule: must be an object"),
        ("a: &x [1]\nb: *x\n", "anchors and aliases are not allowed"),
        ("--- {}\n--- {}\n", "YAML: "),
        ("name: !!python/object:os.system x\n", "YAML: "),
        ("when: 2024-01-01\n", "when: unknown field"),
    ],
)
def test_hostile_files(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(RuleFileError, match=says):
        load_rule_file(write(tmp_path, "h.yaml", text))


def test_unreadable_and_oversized_files(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError, match="^rules/none.yaml: cannot be read"):
        load_rule_file(tmp_path / "rules" / "none.yaml")
    big = write(tmp_path, "big.yaml", "# " + "x" * (1 << 20) + "\n")
    with pytest.raises(RuleFileError, match="is larger than"):
        load_rule_file(big)
    latin = write(tmp_path, "latin.yaml", "")
    latin.write_bytes(b"name: a\nbehavior: caf\xe9\n")
    with pytest.raises(RuleFileError, match="^rules/latin.yaml line 2: is not UTF-8"):
        load_rule_file(latin)


def test_with_enabled_changes_only_enabled() -> None:
    rule = rule_from_dict(base())
    off = rule.with_enabled(False)
    assert off.enabled is False and {**off.to_dict(), "enabled": True} == rule.to_dict()
