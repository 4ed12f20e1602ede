"""The seclake backend's query trees against pySigma's own rule model, evaluated directly (property).

pySigma parses a rule (its detections, modifiers applied: SigmaString with
wildcards, SigmaCasedString, SigmaRegularExpression, SigmaNumber, SigmaNull,
SigmaExists, SigmaCIDRExpression, SigmaCompareExpression,
SigmaFieldReference; and its condition's parse tree) but has no evaluator.
``sigma_matches`` below is one, written from the Sigma specification, as
plainly as can be, over that parsed model; hypothesis writes random rules
(from a grammar of detection items and conditions) and random records
(fields drawn from the values the rules use, so they sometimes match), and
the tree the backend builds must give the same answer in seclake's rule
matcher and, for a sample, in the tantivy engine through a split.

The field names go through an identity pipeline: field mapping has its own
tests (tests/sigma/test_regression.py); this one is about what the values,
modifiers and conditions mean.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import math
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sigma.conditions import ConditionAND, ConditionIdentifier, ConditionNOT, ConditionOR, ConditionSelector
from sigma.processing.pipeline import ProcessingItem, ProcessingPipeline
from sigma.processing.transformations import FieldFunctionTransformation
from sigma.rule import SigmaDetection, SigmaDetectionItem, SigmaRule
from sigma.types import (SigmaBool, SigmaCasedString, SigmaCIDRExpression, SigmaCompareExpression, SigmaExists,
                         SigmaFieldReference, SigmaNull, SigmaNumber, SigmaRegularExpression,
                         SigmaRegularExpressionFlag, SigmaString, SpecialChars, CompareOperators)

from seclake.query import ast
from seclake.query.matcher import matches
from seclake.record.dataset import EVENTS
from seclake.sigma.backend import SeclakeBackend
from seclake.sigma.conversion import parse

# -- pySigma's rule model, evaluated -------------------------------------------------------


def _values(record: dict[str, Any], field: str) -> list[Any]:
    value = record["@fields"].get(field)
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _every_value(record: dict[str, Any]) -> list[Any]:
    return [v for f in record["@fields"] for v in _values(record, f)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _number(value: Any) -> float | None:
    try:
        n = float(value)
    except (TypeError, ValueError):
        return None
    return n if math.isfinite(n) else None


def _string_matches(value: SigmaString, text: str) -> bool:
    """A Sigma string covers the whole value: ``*`` any characters, ``?`` one; case ignored unless cased."""
    cased = isinstance(value, SigmaCasedString)
    pattern = "".join("*" if p is SpecialChars.WILDCARD_MULTI else "?" if p is SpecialChars.WILDCARD_SINGLE
                      else "".join(f"[{c}]" if c in "*?[]" else c for c in (p if cased else p.lower()))
                      for p in value.s)
    return fnmatch.fnmatchcase(text if cased else text.lower(), pattern)


def _one(value: Any, item: SigmaDetectionItem, record: dict[str, Any]) -> bool:
    """Whether the event holds ``value`` as detection item ``item`` means it."""
    if item.field is None:  # a keyword: a substring of any of the event's values
        assert isinstance(value, SigmaString) and not value.contains_special()
        return any(str(value).lower() in _text(v).lower() for v in _every_value(record))
    have = _values(record, item.field)
    if isinstance(value, SigmaNull):
        return not have
    if isinstance(value, SigmaExists):
        return bool(have) == value.exists
    if isinstance(value, SigmaFieldReference):
        others = _values(record, value.field)
        return any(_text(a).lower() == _text(b).lower() for a in have for b in others)
    for v in have:
        if isinstance(value, SigmaString) and _string_matches(value, _text(v)):
            return True
        if isinstance(value, SigmaNumber) and _number(v) == value.number:
            return True
        if isinstance(value, SigmaBool) and v is value.boolean:
            return True
        if isinstance(value, SigmaRegularExpression):
            flags = {SigmaRegularExpressionFlag.IGNORECASE: re.I, SigmaRegularExpressionFlag.MULTILINE: re.M,
                     SigmaRegularExpressionFlag.DOTALL: re.S}
            if re.search(str(value.regexp), _text(v), sum(flags[f] for f in value.flags)):
                return True
        if isinstance(value, SigmaCIDRExpression):
            try:
                if ipaddress.ip_address(_text(v)) in ipaddress.ip_network(value.network, strict=False):
                    return True
            except ValueError:
                pass
        if isinstance(value, SigmaCompareExpression) and (n := _number(v)) is not None:
            limit = value.number.number
            if {CompareOperators.LT: n < limit, CompareOperators.LTE: n <= limit,
                    CompareOperators.GT: n > limit, CompareOperators.GTE: n >= limit}[value.op]:
                return True
    return False


def _detection(detection: SigmaDetection | SigmaDetectionItem, record: dict[str, Any]) -> bool:
    if isinstance(detection, SigmaDetectionItem):
        each = (_one(v, detection, record) for v in detection.value)
        return all(each) if detection.value_linking is ConditionAND else any(each)
    each = (_detection(d, record) for d in detection.detection_items)
    return any(each) if detection.item_linking is ConditionOR else all(each)


def _condition(node: Any, rule: SigmaRule, record: dict[str, Any]) -> bool:
    if isinstance(node, ConditionAND):
        return all(_condition(a, rule, record) for a in node.args)
    if isinstance(node, ConditionOR):
        return any(_condition(a, rule, record) for a in node.args)
    if isinstance(node, ConditionNOT):
        return not _condition(node.args[0], rule, record)
    if isinstance(node, ConditionIdentifier):
        return _detection(rule.detection.detections[node.identifier], record)
    if isinstance(node, ConditionSelector):
        names = [n for n in rule.detection.detections if node.pattern == "them" or fnmatch.fnmatchcase(n, node.pattern)]
        each = (_detection(rule.detection.detections[n], record) for n in names)
        return all(each) if node.cond_class is ConditionAND else any(each)
    raise AssertionError(f"unexpected condition node {node!r}")


def sigma_matches(rule: SigmaRule, record: dict[str, Any]) -> bool:
    """Whether Sigma's rule fires on the event: any of its conditions holds."""
    return any(_condition(c.parse(postprocess=False), rule, record) for c in rule.detection.parsed_condition)


# -- the backend's tree --------------------------------------------------------------------


def seclake_tree(text: str) -> ast.Node:
    identity = ProcessingPipeline(name="identity", priority=20, items=[ProcessingItem(
        identifier="identity", transformation=FieldFunctionTransformation(mapping={}, transform_func=lambda n: n))])
    return ast.or_(*SeclakeBackend(identity).convert_rule(parse(text)))


# -- random rules and records --------------------------------------------------------------

FIELDS = ["Image", "CommandLine", "User"]
STRINGS = ["cmd.exe", "CMD.EXE", "C:\\Windows\\System32\\cmd.exe", "c:\\windows\\system32\\CMD.exe",
           "powershell -enc AAA", "Admin", "admin", "failed password", "", "a*b", "x?y", "443", "Sys32"]
SUBSTRINGS = ["cmd", "EXE", "Admin", "\\System32\\", "pass", "a*b", "?", "d p"]
PATTERNS = ["cmd*", "*.EXE", "c?d.exe", "*\\cmd.exe", "Adm*", "*", "a\\*b"]
REGEXES = ["^cmd", "(?i)^cmd", "exe$", "\\d+", "Sys.*32", "^$", "a\\*b", "(?:ad|Ad)min", "[A-Z]{3}\\.", "^CMD",
           "system32\\\\cmd"]
ADDRESSES = ["10.1.2.3", "192.168.0.5", "2001:db8::1", "not-an-ip", "10.256.0.1"]
NUMBERS = [7, 443, -5, "443", "7", "1e3", "x"]

string_value = st.sampled_from(STRINGS)


@st.composite
def records(draw) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in FIELDS:
        if draw(st.integers(0, 3)):
            fields[name] = draw(st.one_of(string_value, st.lists(string_value, min_size=1, max_size=2)))
    if draw(st.booleans()):
        fields["SourceIp"] = draw(st.sampled_from(ADDRESSES))
    if draw(st.booleans()):
        fields["Port"] = draw(st.sampled_from(NUMBERS))
    return {"@timestamp": 1_700_000_000_000, "@fields": fields}


@st.composite
def items(draw) -> tuple[str, Any]:
    """One detection item: (field|modifiers, value or list of values)."""
    field = draw(st.sampled_from(FIELDS))
    kind = draw(st.sampled_from([0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 9, 10, 11]))
    many = draw(st.booleans())

    def some(pool):
        return draw(st.lists(st.sampled_from(pool), min_size=2, max_size=3, unique=True)) if many \
            else draw(st.sampled_from(pool))

    if kind == 0:
        return field, some(STRINGS)
    if kind == 1:
        return f"{field}|{draw(st.sampled_from(['contains', 'startswith', 'endswith']))}", some(SUBSTRINGS)
    if kind == 2:
        return f"{field}|contains|all", draw(st.lists(st.sampled_from(SUBSTRINGS), min_size=2, max_size=3, unique=True))
    if kind == 3:
        return f"{field}{draw(st.sampled_from(['|cased', '|contains|cased', '|endswith|cased']))}", some(SUBSTRINGS + STRINGS)
    if kind == 4:
        return f"{field}|re{draw(st.sampled_from(['', '|i']))}", some(REGEXES)
    if kind == 5:
        return "SourceIp|cidr", some(["10.0.0.0/8", "2001:db8::/32", "192.168.0.0/24"])
    if kind == 6:
        return f"Port|{draw(st.sampled_from(['gt', 'gte', 'lt', 'lte']))}", draw(st.sampled_from([7, 443, 100, -5]))
    if kind == 7:
        return "Port", some([443, 7, 1000])
    if kind == 8:
        return f"{field}|exists", draw(st.booleans())
    if kind == 9:
        return field, None
    if kind == 10:
        return f"{field}|fieldref", draw(st.sampled_from([f for f in FIELDS if f != field]))
    return field, some(PATTERNS)


@st.composite
def detections(draw) -> Any:
    shape = draw(st.integers(0, 5))
    if shape == 0:  # keywords: substrings of the event
        return draw(st.lists(st.sampled_from(["cmd", "Admin", "password", "System32", "enc A"]), min_size=1,
                             max_size=2, unique=True))
    if shape == 1:  # a list of maps: any of them
        return [dict([draw(items())]) for _ in range(draw(st.integers(1, 2)))]
    chosen = draw(st.lists(items(), min_size=1, max_size=3, unique_by=lambda kv: kv[0].split("|")[0]))
    return dict(chosen)


def conditions(names: list[str]) -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(names), st.sampled_from(["1 of sel*", "all of sel*", "1 of them", "all of them"]))
    return st.recursive(leaf, lambda c: st.one_of(
        st.builds(lambda a, b: f"({a} and {b})", c, c), st.builds(lambda a, b: f"({a} or {b})", c, c),
        st.builds(lambda a: f"not {a}", c)), max_leaves=4)


@st.composite
def rules(draw) -> str:
    count = draw(st.integers(1, 3))
    detection: dict[str, Any] = {f"sel{i}": draw(detections()) for i in range(count)}
    detection["condition"] = draw(conditions(list(detection)))
    return yaml.safe_dump({"title": "random", "id": "00000000-0000-4000-8000-000000000001",
                           "logsource": {"product": "test"}, "detection": detection}, sort_keys=False)


# -- the properties ---------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(text=rules(), recs=st.lists(records(), min_size=1, max_size=12))
def test_the_backend_tree_matches_what_the_sigma_rule_means(text, recs):
    rule, tree = parse(text), seclake_tree(text)
    for record in recs:
        assert matches(tree, record, EVENTS) == sigma_matches(rule, record), (text, record, tree)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(texts=st.lists(rules(), min_size=4, max_size=8), recs=st.lists(records(), min_size=4, max_size=25))
def test_the_engine_finds_what_the_sigma_rule_means(tmp_path_factory, texts, recs):
    """A sample through the lake: records in a split, each rule's tree searched by tantivy (and the leaf)."""
    from seclake.db.database import Database
    from seclake.search.plan import SearchPlan
    from seclake.search.root import Root
    from seclake.storage.lake import Lake

    base = tmp_path_factory.mktemp("sigmaprop")
    db = Database(f"sqlite:///{base / 'meta.db'}")
    db.migrate()
    lake = Lake(base / "data", db)
    lake.start(background=False)
    try:
        first, _ = lake.append([("event", r) for r in recs])
        lake.flush()
        with ThreadPoolExecutor(2) as pool:
            root = Root(lake.splits, pool)
            for text in texts:
                rule, tree = parse(text), seclake_tree(text)
                found = root.search(SearchPlan(dataset="event", query=tree, limit=len(recs)))
                want = sorted(first + i for i, r in enumerate(recs) if sigma_matches(rule, r))
                assert sorted(h.docid for h in found.hits) == want, text
    finally:
        lake.stop()
        db.dispose()
