"""A behavior rule ("bucket" on the wire): which records make a behavior, keyed by what.

A rule selects records of one dataset with a Lucene ``query`` plus facet-style
``mustFilters`` / ``mustNotFilters``, names the field whose value is the
behavior's key (``keyField``), the fields shown with it (``attributes``), the
risk labels and score, and optionally a threshold signal (fire only when the
count / sum / distinct count per key within a window reaches a value).

Rules come from files an admin edits and from API calls, so ``rule_from_dict``
checks every field as hostile input; an error names the field
(``bucket.threshold.window``), and ``load_rule_file`` adds file and line.

Logs often keep the interesting value inside the message only (sshd:
``Failed password for admin from 203.0.113.7 port 40000``). ``keyPattern``
(and an attribute's ``pattern``) picks it out with a template: words around
one ``{}``, which stands for one blank-separated word (see ``Template``).
Templates rather than regular expressions: matching one costs linear time on
a hostile message, and it reads like the log line it is copied from.

A rule's query is parsed with the default operator AND whatever the
deployment's search setting says: a rule file means the same everywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from seclake.errors import LimitExceeded, QueryError, SeclakeError, ValidationFailed
from seclake.model import Closed, Flag, Integer, Number, Text, validated
from seclake.query import ast
from seclake.query.limits import QueryLimits
from seclake.query.matcher import compile_matcher
from seclake.query.parser import parse, parse_filters
from seclake.record.dataset import EVENTS, FLOWS, Dataset
from seclake.record.flatten import values_at
from seclake.record.value import as_number, keyword, scalar_text
from seclake.record.jsontype import json_kind as _kind

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
KEY_TYPE_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,31}$")
RULE_DATASETS: dict[str, Dataset] = {"event": EVENTS, "flow": FLOWS}
FUNCTIONS = ("count", "sum", "distinct")

MAX_BEHAVIOR = 200
MAX_DESCRIPTION = 4000
MAX_QUERY = QueryLimits().max_query_length
MAX_FIELD = 512
MAX_ALIASE = 100
MAX_ATTRIBUTES = 50
MAX_RISKS = 50
MAX_RISK = 100
MAX_SCOPE = 100
MAX_RISK_SCORE = 100_000
MAX_PATTERNS = 8
MAX_PATTERN = 200
# A window holds at most this many observations (count, distinct): bounded state.
MAX_THRESHOLD_COUNT = 10_000
MAX_THRESHOLD_SUM = 1e18
MAX_WINDOW_MS = 24 * 3600 * 1000
MIN_WINDOW_MS = 1000
# Only this much of a value is searched by a template, and an attribute value
# is cut to this length: a 64 KB message must not become a 64 KB attribute.
MAX_EXTRACT_INPUT = 8192
MAX_ATTRIBUTE_VALUE = 1000
MAX_FILE_BYTES = 1 << 20

FIELDS = (
    "name", "behavior", "description", "dataset", "query", "mustFilters", "mustNotFilters", "keyField",
    "keyPattern", "keyType", "attributes", "risks", "riskScore", "scope", "enabled", "threshold",
    "generate", "correlation", "firstSeen",
    "sigma", "sigmaId", "level", "status", "tags", "references", "falsePositives", "author",
)
# Correlation rules (Sigma's, docs/rules.md): what they count, how they compare.
CORRELATION_TYPES = ("event_count", "value_count", "temporal", "temporal_ordered")
OPERATORS = ("gte", "gt", "lte", "lt", "eq", "neq")
MAX_CORRELATED = 32  # rules one correlation refers to
MAX_GROUP_BY = 8
# A correlation's timespan may be longer than a threshold's window (Sigma
# rules use days), its state per group is bounded all the same (detect/correlation.py).
MAX_TIMESPAN_MS = 7 * 86_400_000
MAX_CORRELATION_COUNT = 10_000
_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_WINDOW = re.compile(r"^\s*(\d{1,9})\s*(ms|s|m|h|d)?\s*$")


class RuleFileError(SeclakeError):
    """A rule file that cannot be read or holds an invalid rule; says file and line."""

    code = "invalid"

    def __init__(self, display: str, line: int | None, problem: str):
        where = f"{display} line {line}" if line is not None else display
        super().__init__(f"{where}: {problem}")
        self.display = display
        self.line = line


# -- templates -----------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """Words around one ``{}``: ``from {} port``, ``user={}``.

    The value is split into blank-separated words; the template's words must
    appear in a row, the one holding ``{}`` matching a word that starts and
    ends with the text around ``{}``. Plain word comparison, so the work is
    linear in the value whatever the template.
    """

    text: str
    words: tuple[str, ...] = field(compare=False, repr=False)
    hole: int = field(compare=False, repr=False)

    @staticmethod
    def of(text: str) -> Template:
        words = tuple(text.split())
        hole = next(i for i, w in enumerate(words) if "{}" in w)
        return Template(text, words, hole)

    def extract(self, value: str) -> str | None:
        have = value[:MAX_EXTRACT_INPUT].split()
        words, hole = self.words, self.hole
        before, _, after = words[hole].partition("{}")
        for start in range(len(have) - len(words) + 1):
            word = have[start + hole]
            if len(word) <= len(before) + len(after) or not word.startswith(before) or not word.endswith(after):
                continue
            if all(have[start + i] == w for i, w in enumerate(words) if i != hole):
                return word[len(before) : len(word) - len(after)]
        return None


def _extract(values: list, templates: tuple[Template, ...]) -> list[str]:
    """Values as text; with templates, what the first matching template picks out of each."""
    out = []
    for v in values:
        text = scalar_text(v)
        if not templates:
            out.append(text)
            continue
        for t in templates:
            got = t.extract(text)
            if got is not None:
                out.append(got)
                break
    return out


# -- the rule --------------------------------------------------------------------


@dataclass(frozen=True)
class Attribute:
    field: str
    aliase: str
    pattern: tuple[Template, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"field": self.field, "aliase": self.aliase}
        if self.pattern:
            d["pattern"] = _templates_out(self.pattern)
        return d


@dataclass(frozen=True)
class Threshold:
    function: str  # count | sum | distinct
    field: str | None  # as written; None for count
    window_ms: int
    value: float
    # The record path of ``field`` in the rule's dataset.
    path: str | None = None
    # Windows are kept per key and per the values of these fields (all present).
    group_by: tuple[str, ...] = ()
    group_paths: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"function": self.function}
        if self.field is not None:
            d["field"] = self.field
        d["window"] = window_text(self.window_ms)
        d["value"] = int(self.value) if float(self.value).is_integer() else self.value
        if self.group_by:
            d["groupBy"] = list(self.group_by)
        return d


@dataclass(frozen=True)
class Correlation:
    """A rule made of other rules' matches (Sigma's correlation rules): per group of
    ``group_by`` values within ``timespan_ms``, the referenced rules' matches
    (event_count), the distinct values of ``field`` among them (value_count),
    which referenced rules matched (temporal) or whether they matched in
    their listed order (temporal_ordered), compared to ``count`` by ``op``."""

    type: str
    rules: tuple[str, ...]
    group_by: tuple[str, ...]
    timespan_ms: int
    op: str
    count: int
    field: str | None = None
    # alias -> ((rule name, that rule's field), ...): a group-by name read
    # under another field name in each referenced rule (Sigma's ``aliases``).
    aliases: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()

    def field_of(self, name: str, rule: str) -> str | None:
        """The field ``rule``'s records hold group-by ``name`` at (an alias resolved); None: not in that rule."""
        for alias, fields_ in self.aliases:
            if alias == name:
                return dict(fields_).get(rule)
        return name

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, "rules": list(self.rules), "groupBy": list(self.group_by),
                             "timespan": window_text(self.timespan_ms),
                             "condition": {self.op: self.count, **({"field": self.field} if self.field else {})}}
        if self.aliases:
            d["aliases"] = {alias: dict(fields_) for alias, fields_ in self.aliases}
        return d


@dataclass(frozen=True)
class SigmaSource:
    """A rule imported from Sigma (seclake/sigma/, docs/detections.md): the
    rule's text, which its selector is converted from whenever it is read,
    and what the rule says of itself, kept and shown."""

    text: str
    sigma_id: str
    level: str | None = None
    status: str | None = None
    tags: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    false_positives: tuple[str, ...] = ()
    author: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"sigma": self.text, "sigmaId": self.sigma_id, "level": self.level, "status": self.status,
                "tags": list(self.tags), "references": list(self.references),
                "falsePositives": list(self.false_positives), "author": self.author}


@dataclass(frozen=True)
class Rule:
    name: str
    behavior: str
    description: str
    dataset: str
    query: str
    must_filters: tuple[tuple[str, tuple[Any, ...]], ...]
    must_not_filters: tuple[tuple[str, tuple[Any, ...]], ...]
    key_field: str
    key_type: str
    attributes: tuple[Attribute, ...]
    risks: tuple[str, ...]
    risk_score: int
    scope: str = "global"
    enabled: bool = True
    threshold: Threshold | None = None
    key_pattern: tuple[Template, ...] = ()
    # False: its matches only feed correlation rules, they make no behavior of their own.
    generate: bool = True
    correlation: Correlation | None = None
    sigma: SigmaSource | None = None
    # Fire only the first time the key comes with these fields' values (per customer, kept across restarts).
    first_seen: tuple[str, ...] = ()
    # The parsed selector (query AND filters); not part of a rule's identity.
    selector: ast.Node = field(default_factory=ast.MatchAll, compare=False, repr=False)

    @property
    def data(self) -> Dataset:
        return RULE_DATASETS[self.dataset]

    def __getstate__(self) -> dict[str, Any]:
        # Its fields only: what is compiled from them (the matcher's closures,
        # resolved paths) is compiled again where it is unpickled (a parse worker).
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @cached_property
    def key_path(self) -> str:
        return self.data.resolve(self.key_field)

    @cached_property
    def _attribute_paths(self) -> tuple[str, ...]:
        return tuple(self.data.resolve(a.field) for a in self.attributes)

    def matcher(self) -> Callable[[dict], bool]:
        """record -> whether the rule's selector matches it (compiled once, cached)."""
        return self._matcher

    @cached_property
    def _matcher(self) -> Callable[[dict], bool]:
        return compile_matcher(self.selector, self.data)

    def key_of(self, record: dict[str, Any]) -> str | None:
        """The behavior's key in ``record``: the first value at keyField, as text; None when absent or empty."""
        for text in _extract(values_at(record, self.key_path), self.key_pattern):
            if text != "":
                return text
        return None

    def attribute_values(self, record: dict[str, Any]) -> list[dict[str, str]]:
        """``[{key, aliase, value}]`` (spec 2.7) of the attributes the record holds.

        Several values at one field are joined with ", ". Absent attributes are
        left out rather than shown empty.
        """
        out = []
        for attr, path in zip(self.attributes, self._attribute_paths):
            texts = _extract(values_at(record, path), attr.pattern)
            if texts:
                out.append({"key": attr.field, "aliase": attr.aliase, "value": ", ".join(texts)[:MAX_ATTRIBUTE_VALUE]})
        return out

    def group_of(self, record: dict[str, Any]) -> str | None:
        """The threshold window's group within the key: ``groupBy`` values joined; None when one is absent."""
        t = self.threshold
        if t is None or not t.group_paths:
            return ""
        return _joined_values(record, t.group_paths)

    @cached_property
    def _first_seen_paths(self) -> tuple[str, ...]:
        return tuple(self.data.resolve(f) for f in self.first_seen)

    def first_seen_value(self, record: dict[str, Any]) -> str | None:
        """What a ``firstSeen`` rule remembers with the key: its fields' values joined; None when one is absent."""
        return _joined_values(record, self._first_seen_paths)

    def signal_value(self, record: dict[str, Any]) -> float | str | None:
        """What the record adds to the threshold window: 1 for count, the number
        at the field for sum, its keyword for distinct; None when it adds nothing."""
        t = self.threshold
        if t is None or t.function == "count":
            return 1
        assert t.path is not None
        for v in values_at(record, t.path):
            if t.function == "sum":
                n = as_number(v)
                if n is not None:
                    return n
            else:
                return keyword(v)
        return None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "behavior": self.behavior,
            "description": self.description,
            "dataset": self.dataset,
            "query": self.query,
            "mustFilters": [{"field": f, "terms": list(terms)} for f, terms in self.must_filters],
            "mustNotFilters": [{"field": f, "terms": list(terms)} for f, terms in self.must_not_filters],
            "keyField": self.key_field,
            "keyType": self.key_type,
            "attributes": [a.to_dict() for a in self.attributes],
            "risks": list(self.risks),
            "riskScore": self.risk_score,
            "scope": self.scope,
            "enabled": self.enabled,
            "threshold": self.threshold.to_dict() if self.threshold else None,
        }
        if self.key_pattern:
            d["keyPattern"] = _templates_out(self.key_pattern)
        if not self.generate:
            d["generate"] = False
        if self.first_seen:
            d["firstSeen"] = list(self.first_seen)
        if self.correlation is not None:
            d["correlation"] = self.correlation.to_dict()
            for name in ("query", "mustFilters", "mustNotFilters", "keyField", "threshold"):
                del d[name]
        if self.sigma is not None:
            d.update(self.sigma.to_dict())
        return d

    def with_enabled(self, enabled: bool) -> Rule:
        return rule_from_dict({**self.to_dict(), "enabled": enabled})


# Between the values of several group-by fields in a key: a unit separator, which log values do not hold.
GROUP_SEPARATOR = "\x1f"


def _joined_values(record: dict[str, Any], paths: tuple[str, ...]) -> str | None:
    """The first non-empty value at each path, joined; None when a path has none."""
    out = []
    for path in paths:
        texts = [x for x in _extract(values_at(record, path), ()) if x != ""]
        if not texts:
            return None
        out.append(texts[0])
    return GROUP_SEPARATOR.join(out)


def window_text(ms: int) -> str:
    for unit in ("d", "h", "m", "s"):
        if ms % _UNITS[unit] == 0:
            return f"{ms // _UNITS[unit]}{unit}"
    return f"{ms}ms"


def _templates_out(templates: tuple[Template, ...]) -> str | list[str]:
    return templates[0].text if len(templates) == 1 else [t.text for t in templates]


# -- the rule as sent ------------------------------------------------------------------


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise PydanticCustomError("nul", "must not contain NUL characters")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "must not be empty")
    return value


def _matching(pattern: re.Pattern[str]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not pattern.match(value):
            raise PydanticCustomError("pattern", "{value} is not allowed; it must match {pattern}",
                                      {"value": repr(value[:60]), "pattern": pattern.pattern})
        return value
    return check


def _field_name(value: str) -> str:
    if any(c.isspace() for c in value):
        raise PydanticCustomError("field", "{value} is not a field name (it holds blanks)", {"value": repr(value[:60])})
    return value


def _template(value: str) -> str:
    if value.count("{}") != 1:
        raise PydanticCustomError("template", "must hold exactly one {} (the value to pick out), e.g. 'from {} port'")
    return value


def _one_or_more(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _window(value: Any) -> int:
    """A window in milliseconds, from "5m" or a number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PydanticCustomError("window", "must be a duration like \"5m\" or a number of seconds, not {kind}",
                                  {"kind": _kind(value)})
    if isinstance(value, int | float):
        if not math.isfinite(value) or value <= 0:
            raise PydanticCustomError("window", "must be a positive number of seconds, not {value}", {"value": value})
        if value > MAX_WINDOW_MS / 1000:  # before scaling: 1e308 * 1000 is no number
            raise PydanticCustomError("window", "must be between 1s and 1d, not {value} seconds", {"value": value})
        ms = int(round(value * 1000))
    else:
        m = _WINDOW.match(value)
        if not m:
            raise PydanticCustomError("window", "{value} is not a duration; write e.g. 30s, 5m, 1h or 1d",
                                      {"value": repr(value[:40])})
        ms = int(m.group(1)) * _UNITS[m.group(2) or "s"]
    if not MIN_WINDOW_MS <= ms <= MAX_WINDOW_MS:
        raise PydanticCustomError("window", "must be between 1s and 1d, not {value}",
                                  {"value": window_text(ms) if ms > 0 else repr(value)})
    return ms


def _texts(max_len: int, *checks: Callable[[str], str]) -> Any:
    return Annotated[Text, Field(max_length=max_len), AfterValidator(_no_nul), *(AfterValidator(c) for c in checks)]


RecordField = _texts(MAX_FIELD, _not_blank, _field_name)
Templates = Annotated[list[_texts(MAX_PATTERN, _template)], Field(min_length=1, max_length=MAX_PATTERNS),
                      BeforeValidator(_one_or_more)]


class FilterInput(Closed):
    field: Any = None  # shapes of field and terms: parse_filters, as for searches
    terms: Any = None


class AttributeInput(Closed):
    field: RecordField
    aliase: _texts(MAX_ALIASE, _not_blank) | None = None
    pattern: Templates | None = None


class ThresholdInput(Closed):
    """Fire when the count, sum or distinct count per key within ``window`` reaches ``value``."""

    function: Literal[FUNCTIONS]  # type: ignore[valid-type]
    field: RecordField | None = None
    window: Annotated[int, BeforeValidator(_window)] = Field(description='"5m", "1h" or seconds; 1s to 1d.')
    value: Number
    groupBy: Annotated[list[RecordField], Field(min_length=1, max_length=MAX_GROUP_BY)] | None = None

    @field_validator("field")
    @classmethod
    def _field_for_function(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("function") == "count" and value is not None:
            raise PydanticCustomError("field", "count counts records; leave field out (use distinct or sum for a field)")
        return value

    @field_validator("value")
    @classmethod
    def _value_for_function(cls, value: float, info: ValidationInfo) -> float:
        function = info.data.get("function")
        if value <= 0:
            raise PydanticCustomError("value", "must be a positive number, not {value}", {"value": value})
        if function == "sum":
            if value > MAX_THRESHOLD_SUM:
                raise PydanticCustomError("value", "must be at most {limit}", {"limit": f"{MAX_THRESHOLD_SUM:g}"})
            return value
        if not value.is_integer():
            raise PydanticCustomError("value", "a {function} threshold must be a whole number, not {value}",
                                      {"function": function, "value": value})
        if value > MAX_THRESHOLD_COUNT:
            raise PydanticCustomError("value", "must be at most {limit}, not {value}",
                                      {"limit": MAX_THRESHOLD_COUNT, "value": int(value)})
        return value


def _timespan(value: Any) -> int:
    """A correlation's timespan in milliseconds: Sigma's "5m", "1h", "1d", "1w" or seconds; 1s to 7d."""
    if isinstance(value, str) and value.strip().endswith("w") and value.strip()[:-1].isdigit():
        value = f"{int(value.strip()[:-1]) * 7}d"
    if isinstance(value, str) and (m := _WINDOW.match(value)):
        ms = int(m.group(1)) * _UNITS[m.group(2) or "s"]
        if MIN_WINDOW_MS <= ms <= MAX_TIMESPAN_MS:
            return ms
        raise PydanticCustomError("window", "must be between 1s and 7d, not {value}", {"value": repr(value[:40])})
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
            and MIN_WINDOW_MS <= value * 1000 <= MAX_TIMESPAN_MS:
        return int(round(value * 1000))
    raise PydanticCustomError("window", "{value} is not a timespan; write e.g. 30s, 5m, 1h, 1d or 1w (at most 7d)",
                              {"value": repr(value)[:40]})


class CorrelationInput(Closed):
    """A correlation rule's ``correlation`` (docs/rules.md): Sigma's correlation fields."""

    type: Literal[CORRELATION_TYPES]  # type: ignore[valid-type]
    rules: Annotated[list[_texts(100, _matching(NAME_PATTERN))], Field(min_length=1, max_length=MAX_CORRELATED),
                     BeforeValidator(_one_or_more)]
    groupBy: Annotated[list[RecordField], Field(max_length=MAX_GROUP_BY), BeforeValidator(_one_or_more)] | None = None
    timespan: Annotated[int, BeforeValidator(_timespan)]
    condition: dict[str, Any] | None = None
    aliases: dict[_texts(MAX_FIELD, _not_blank, _field_name),
                  dict[_texts(100, _matching(NAME_PATTERN)), RecordField]] | None = None


class RuleInput(Closed):
    """A rule as a request or a file holds it (docs/rules.md): the shapes.
    What the fields mean together (the query, the threshold's field) is
    checked by ``rule_from_dict``."""

    name: _texts(100, _matching(NAME_PATTERN))
    behavior: _texts(MAX_BEHAVIOR, _not_blank)
    description: _texts(MAX_DESCRIPTION) | None = None
    dataset: Literal[tuple(RULE_DATASETS)] | None = None  # type: ignore[valid-type]
    query: _texts(MAX_QUERY) | None = None
    mustFilters: Annotated[list[FilterInput], Field(max_length=256)] | None = None
    mustNotFilters: Annotated[list[FilterInput], Field(max_length=256)] | None = None
    keyField: RecordField | None = None  # required but for a correlation rule (its key: the groupBy values)
    keyPattern: Templates | None = None
    keyType: _texts(32, _matching(KEY_TYPE_PATTERN)) | None = None
    attributes: Annotated[list[AttributeInput], Field(max_length=MAX_ATTRIBUTES)] | None = None
    risks: Annotated[list[_texts(MAX_RISK, _not_blank)], Field(max_length=MAX_RISKS)] | None = None
    riskScore: Annotated[Integer, Field(ge=0, le=MAX_RISK_SCORE)]
    scope: _texts(MAX_SCOPE, _not_blank) | None = None
    enabled: Flag = True
    threshold: ThresholdInput | None = None
    generate: Flag = True
    correlation: CorrelationInput | None = None
    # Fields whose values, with the key, make a pair the rule fires on once (docs/rules.md, "First seen").
    firstSeen: Annotated[list[RecordField], Field(min_length=1, max_length=8)] | None = None
    # A Sigma rule's text (docs/detections.md): the selector is converted from it; query is then unused.
    sigma: _texts(MAX_FILE_BYTES) | None = None
    sigmaId: _texts(100) | None = None
    level: _texts(20) | None = None
    status: _texts(20) | None = None
    tags: Annotated[list[_texts(MAX_RISK)], Field(max_length=MAX_RISKS)] | None = None
    references: Annotated[list[_texts(MAX_BEHAVIOR * 5)], Field(max_length=MAX_RISKS)] | None = None
    falsePositives: Annotated[list[_texts(MAX_BEHAVIOR * 5)], Field(max_length=MAX_RISKS)] | None = None
    author: _texts(MAX_BEHAVIOR) | None = None


def _named(exc: SeclakeError, at: str) -> SeclakeError:
    """The same error, its message prefixed with the rule field it concerns."""
    exc.message = f"{at}: {exc.message}"
    exc.args = (exc.message,)
    return exc


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def rule_from_dict(d: Any, where: str = "bucket", *, limits: QueryLimits | None = None,
                   sigma_trees: Callable[[str], ast.Node] | None = None) -> Rule:
    """A validated Rule from its wire / YAML shape; errors name the field under ``where``. ``sigma_trees``:
    how a Sigma rule's text becomes its tree, if not by converting it (the rule book's ``TreeCache``)."""
    if not isinstance(d, Mapping):
        raise ValidationFailed(where or "rule", f"must be an object, not {_kind(d)}")
    for k in d:  # YAML may hold keys of other types
        if not isinstance(k, str):
            raise ValidationFailed(where or "rule", f"has a key that is not a string: {str(k)[:40]!r}")
    sent = validated(RuleInput, d, where)
    dataset_name = sent.dataset or "event"
    dataset = RULE_DATASETS[dataset_name]
    if sent.correlation is not None:
        return _correlation_rule(sent, dataset_name, where)
    for name in ("keyField", "keyType"):
        if getattr(sent, name) is None:
            raise ValidationFailed(_at(where, name), "is required")

    limits = limits or QueryLimits()
    query = sent.query or ""
    if len(query) > limits.max_query_length:
        raise ValidationFailed(_at(where, "query"), f"is {len(query)} characters long, at most {limits.max_query_length}")
    must = tuple((f.field, tuple(f.terms) if isinstance(f.terms, list) else f.terms) for f in sent.mustFilters or [])
    must_not = tuple((f.field, tuple(f.terms) if isinstance(f.terms, list) else f.terms)
                     for f in sent.mustNotFilters or [])
    try:
        node = _sigma_selector(sent.sigma, where, sigma_trees) if sent.sigma is not None else \
            parse(query, dataset, default_operator="AND", limits=limits)
    except (QueryError, LimitExceeded) as e:
        raise _named(e, _at(where, "query")) from None
    try:
        filters = parse_filters(
            [{"field": f, "terms": t} for f, t in must], [{"field": f, "terms": t} for f, t in must_not],
            dataset, limits=limits, where=where,
        )
    except LimitExceeded as e:
        raise _named(e, _at(where, "mustFilters")) from None
    except ValidationFailed as e:
        if where:
            raise
        # parse_filters always writes "<where>.mustFilters"; a file's rule has no where.
        raise ValidationFailed(e.field.lstrip("."), e.message.removeprefix(f"{e.field}: ")) from None
    if not query.strip() and not must and sent.sigma is None:
        # A rule over every record is almost always a mistake, and costly.
        raise ValidationFailed(_at(where, "query"), "is required: say which records the rule selects")

    t = sent.threshold
    if t is not None and t.function != "count" and t.field is None:
        raise ValidationFailed(_at(where, "threshold.field"), f"is required: the field a {t.function} threshold reads")
    if t is not None and sent.firstSeen:
        # A threshold counts repeats; firstSeen ignores every repeat: together they mean nothing clear.
        raise ValidationFailed(_at(where, "firstSeen"), "cannot be combined with threshold")
    threshold = None if t is None else Threshold(
        t.function, t.field, t.window, t.value if t.function == "sum" else int(t.value),
        dataset.resolve(t.field) if t.field else None,
        tuple(t.groupBy or ()), tuple(dataset.resolve(f) for f in t.groupBy or ()),
    )
    return Rule(
        name=sent.name, behavior=sent.behavior, description=sent.description or "", dataset=dataset_name,
        query=query, must_filters=must, must_not_filters=must_not, key_field=sent.keyField, key_type=sent.keyType,
        attributes=tuple(Attribute(a.field, a.aliase or a.field[:MAX_ALIASE], _templates(a.pattern))
                         for a in sent.attributes or []),
        risks=tuple(sent.risks or ()), risk_score=sent.riskScore, scope=sent.scope or "global",
        enabled=sent.enabled, threshold=threshold, key_pattern=_templates(sent.keyPattern),
        generate=sent.generate, selector=ast.and_(node, filters), sigma=_sigma_source(sent),
        first_seen=tuple(sent.firstSeen or ()),
    )


def _sigma_selector(text: str, where: str, trees: Callable[[str], ast.Node] | None = None) -> ast.Node:
    from seclake.sigma.conversion import selector  # pySigma is loaded only where Sigma rules are
    from seclake.sigma.unsupported import Unsupported

    try:
        return (trees or selector)(text)
    except Unsupported as e:
        raise ValidationFailed(_at(where, "sigma"), f"cannot run as Sigma means it: {e}") from None


def _sigma_source(sent: RuleInput) -> SigmaSource | None:
    if sent.sigma is None:
        return None
    return SigmaSource(sent.sigma, sent.sigmaId or sent.name, sent.level, sent.status, tuple(sent.tags or ()),
                       tuple(sent.references or ()), tuple(sent.falsePositives or ()), sent.author)


# keyType of a correlation's key, from its first group-by field, when the rule names none.
_KEY_TYPES = {"ip": "ip", "address": "ip", "user": "username", "username": "username", "host": "host",
              "hostname": "host", "@sender": "host", "computer": "host", "domain": "domain"}


def _correlation_rule(sent: RuleInput, dataset_name: str, where: str) -> Rule:
    """A correlation rule: no query of its own; keyed by its group-by values."""
    c = sent.correlation
    assert c is not None
    at = _at(where, "correlation")
    for name in ("query", "mustFilters", "mustNotFilters", "keyField", "keyPattern", "threshold", "attributes",
                 "firstSeen"):
        if getattr(sent, name):
            raise ValidationFailed(_at(where, name), "a correlation rule has none: it is made of its rules' matches"
                                   + (" (its attributes are its groupBy values)" if name == "attributes" else ""))
    if sent.name in c.rules:
        raise ValidationFailed(_at(at, "rules"), f"must not name the rule itself ({sent.name})")
    if len(set(c.rules)) != len(c.rules):
        raise ValidationFailed(_at(at, "rules"), "names a rule twice")
    condition = c.condition
    if condition is None:
        if c.type in ("event_count", "value_count"):
            raise ValidationFailed(_at(at, "condition"), f"is required for {c.type}, e.g. {{gte: 10}}")
        condition = {"gte": len(c.rules)}
    ops = [k for k in condition if k in OPERATORS]
    other = [k for k in condition if k not in OPERATORS and k != "field"]
    if len(ops) != 1 or other:
        raise ValidationFailed(_at(at, "condition"),
                               f"must hold exactly one of {', '.join(OPERATORS)} (and field for value_count)"
                               + (f"; unknown: {', '.join(map(str, other))[:80]}" if other else ""))
    op, count = ops[0], condition[ops[0]]
    if isinstance(count, bool) or not isinstance(count, int | float) or not math.isfinite(count) \
            or not float(count).is_integer() or not 0 <= count <= MAX_CORRELATION_COUNT:
        raise ValidationFailed(_at(at, f"condition.{op}"), f"must be a whole number from 0 to {MAX_CORRELATION_COUNT}")
    count = int(count)
    field_ = condition.get("field")
    if c.type == "value_count":
        if not isinstance(field_, str) or not field_.strip() or len(field_) > MAX_FIELD or "\x00" in field_:
            raise ValidationFailed(_at(at, "condition.field"), "is required for value_count: the field whose distinct values count")
    elif field_ is not None:
        raise ValidationFailed(_at(at, "condition.field"), f"is only for value_count, not {c.type}")
    if c.type in ("temporal", "temporal_ordered"):
        if op not in ("gte", "gt") or not (1 <= count + (op == "gt") <= len(c.rules)):
            raise ValidationFailed(_at(at, "condition"),
                                   f"a {c.type} condition counts the rules that matched: gte 1 to {len(c.rules)}")
        if c.type == "temporal_ordered" and count + (op == "gt") != len(c.rules):
            raise ValidationFailed(_at(at, "condition"), "temporal_ordered needs every rule, in order")
    group_by = tuple(c.groupBy or ())
    aliases = tuple((alias, tuple(sorted(fields_.items()))) for alias, fields_ in sorted((c.aliases or {}).items()))
    for alias, fields_ in aliases:
        if alias not in group_by:
            raise ValidationFailed(_at(at, f"aliases.{alias}"), "is not one of groupBy")
        missing = [r for r in c.rules if r not in dict(fields_)]
        if missing:
            raise ValidationFailed(_at(at, f"aliases.{alias}"), f"names no field for rule {missing[0]}")
    first = group_by[0] if group_by else ""
    key_type = sent.keyType or _KEY_TYPES.get(first.rsplit(".", 1)[-1].lower(), "group" if group_by else "rule")
    return Rule(
        name=sent.name, behavior=sent.behavior, description=sent.description or "", dataset=dataset_name,
        query="", must_filters=(), must_not_filters=(), key_field="", key_type=key_type,
        attributes=(),
        risks=tuple(sent.risks or ()), risk_score=sent.riskScore, scope=sent.scope or "global",
        enabled=sent.enabled, generate=sent.generate,
        correlation=Correlation(c.type, tuple(c.rules), group_by, c.timespan, op, count,
                                field_ if isinstance(field_, str) else None, aliases),
        selector=ast.MatchNone(), sigma=_sigma_source(sent),
    )


def _templates(texts: list[str] | None) -> tuple[Template, ...]:
    return tuple(Template.of(t) for t in texts or ())


# -- files -------------------------------------------------------------------------


def load_rule_file(path: Path, display: str | None = None) -> list[Rule]:
    """The rules of one YAML file (one rule mapping, or a list of them).

    Errors are ``RuleFileError`` naming the file (``display``, by default
    ``<dir>/<file>``) and the line of the offending key.
    """
    display = display or f"{path.parent.name}/{path.name}"
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise RuleFileError(display, None, f"cannot be read ({e.strerror or e})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise RuleFileError(display, None, f"is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RuleFileError(display, raw[: e.start].count(b"\n") + 1, "is not UTF-8") from None
    return rules_from_yaml(text, display)


def rules_from_yaml(text: str, display: str) -> list[Rule]:
    try:
        try:
            data, lines = _document(text, _FAST_LOADER)
        except yaml.YAMLError:
            # Read again to say what is wrong: the pure-Python loader names
            # the offending character, where libyaml's message does not.
            data, lines = _document(text, yaml.SafeLoader)
    except _AliasUsed as e:
        raise RuleFileError(display, e.line, "YAML anchors and aliases are not allowed in rule files") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise RuleFileError(display, mark.line + 1 if mark else None, f"YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise RuleFileError(display, None, f"YAML: {e}") from None
    if data is _EMPTY:
        raise RuleFileError(display, None, "is empty; it must hold a rule or a list of rules")

    items = data if isinstance(data, list) else [data]
    rules = []
    for i, item in enumerate(items):
        where = f"[{i}]" if isinstance(data, list) else ""
        try:
            rules.append(rule_from_dict(item, where))
        except ValidationFailed as e:
            raise RuleFileError(display, _line_of(lines, e.field), e.message) from None
        except (QueryError, LimitExceeded) as e:
            at = e.message.split(":", 1)[0]
            raise RuleFileError(display, _line_of(lines, at), e.message) from None
    return rules


# libyaml's loader when PyYAML has it: the pure-Python one took 50 ms of every
# start (the server's and each command's) to read the starter rules; 9 ms now.
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_EMPTY = object()


def _document(text: str, loader_class: type) -> tuple[Any, dict[str, int]]:
    """The document in ``text`` (``_EMPTY`` for none) and the line of each field path."""
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return _EMPTY, {}
        lines: dict[str, int] = {}
        _lines(root, "", lines, set())
        return loader.construct_document(root), lines
    finally:
        loader.dispose()


class _AliasUsed(Exception):
    def __init__(self, line: int):
        self.line = line


def _lines(node: yaml.Node, path: str, out: dict[str, int], seen: set[int]) -> None:
    """Record the line of every key and list item, by the field path errors use."""
    if id(node) in seen:
        # An alias: refused, since a few of them nest into an exponential document.
        raise _AliasUsed(node.start_mark.line + 1)
    seen.add(id(node))
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else "?"
            child = f"{path}.{name}" if path else name
            out[child] = key.start_mark.line + 1
            _lines(value, child, out, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _lines(item, f"{path}[{i}]", out, seen)


def _line_of(lines: dict[str, int], at: str) -> int | None:
    """The line of the longest known prefix of the field path ``at``."""
    while at:
        if at in lines:
            return lines[at]
        cut = max(at.rfind("."), at.rfind("["))
        if cut <= 0:
            break
        at = at[:cut]
    return lines.get(at, lines.get(""))
