"""One Sigma rule (its YAML text) -> what seclake stores and runs.

``selector(text)`` is the query tree the rule's detection and log source
mean in seclake's records; ``rule_dict(text)`` the seclake rule (the shape
``detect/rule.py`` reads) made of it:

* name = the Sigma ``id``; behavior = its ``title``;
* risks = its ATT&CK technique tags (``attack.t1059.001`` -> ``T1059.001``);
* riskScore from ``level`` (``LEVEL_SCORES``);
* key chosen by the log source (host for endpoint logs, user for cloud and
  identity logs), unless the import names another;
* the Sigma text itself is kept (``sigma``): the rule is converted again
  from it when it is read back, so what runs is always what pySigma makes of
  the rule as written, and an export gives the rule back unmodified.

Converting takes pySigma a few milliseconds; ``selector`` keeps the trees of
the texts it converted last, so reloading a rule book converts only the rules
that changed.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import yaml
from sigma.collection import SigmaCollection
from sigma.correlations import SigmaCorrelationRule
from sigma.exceptions import SigmaError
from sigma.rule import SigmaRule

from seclake.query import ast
from seclake.sigma.backend import SeclakeBackend
from seclake.sigma.logsource import resolve
from seclake.sigma.pipeline import pipeline
from seclake.sigma.unsupported import Unsupported

# riskScore by Sigma level; the default bands (docs/rules.md: 2000 medium,
# 3500 high, 4500 serious, 6000 critical) put one critical Sigma hit at
# critical and one high at serious; the risk model makes two high hits on one
# key and day critical (5000 + 5000/2^1.5).
LEVEL_SCORES = {"informational": 500, "low": 1000, "medium": 3000, "high": 5000, "critical": 9000}
DEFAULT_LEVEL = "medium"
# LibYAML's safe loader where PyYAML has it (the same documents as yaml.safe_load_all, ~5x faster).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TECHNIQUE = re.compile(r"^attack\.(t\d{4}(?:\.\d{3})?)$", re.IGNORECASE)
MAX_TEXT = 4000
# What a behavior shows of the record, when it has them (docs/detections.md).
ATTRIBUTES = (
    ("host.name", "host"), ("user.name", "user"), ("process.executable", "process"),
    ("process.command_line", "command line"), ("process.parent.executable", "parent"),
    ("source.ip", "source"), ("event.code", "event id"),
)


def parse(text: str) -> SigmaRule | SigmaCorrelationRule:
    """The one Sigma rule in ``text``; ``Unsupported`` for text that is not exactly one valid rule."""
    rules = parse_all(text)
    if len(rules) != 1:
        raise Unsupported("invalid Sigma", f"holds {len(rules)} rules where one is expected")
    return rules[0]


def parse_all(text: str) -> list[SigmaRule | SigmaCorrelationRule]:
    """Every Sigma rule of ``text`` (YAML documents); ``Unsupported`` for text that is not valid Sigma."""
    try:
        # A correlation's rules are resolved by the caller (correlation.py), in its file or among known rules.
        # SigmaCollection.from_yaml with LibYAML's parser (pySigma reads one rule's file with it too):
        # pure-Python YAML was ~85% of converting a rule, and every start converts every stored rule.
        collection = SigmaCollection.from_dicts(list(yaml.load_all(text, Loader=_LOADER)),
                                                resolve_references=False)
    except SigmaError as e:
        raise Unsupported("invalid Sigma", str(e)) from None
    except Exception as e:  # YAML errors and hostile shapes pySigma does not anticipate
        raise Unsupported("invalid Sigma", f"{type(e).__name__}: {e}") from None
    if collection.errors:
        raise Unsupported("invalid Sigma", str(collection.errors[0]))
    return list(collection.rules)


@lru_cache(maxsize=8192)
def selector(text: str) -> ast.Node:
    """The records the Sigma rule in ``text`` fires on, as a seclake query tree."""
    rule = parse(text)
    if isinstance(rule, SigmaCorrelationRule):
        # Made of other rules' matches, no query of its own: correlation.py maps it onto seclake's correlation.
        raise Unsupported("correlation rule", "a correlation rule has no query of its own")
    source = resolve(rule.logsource)
    backend = SeclakeBackend(pipeline(source.family, source.category, source.service))
    try:
        conditions = backend.convert_rule(rule)
    except Unsupported:
        raise
    except SigmaError as e:
        raise Unsupported("invalid Sigma", str(e)) from None
    except RecursionError:
        raise Unsupported("invalid Sigma", "its condition is nested too deeply") from None
    detection = ast.or_(*conditions)
    if isinstance(detection, ast.MatchNone):
        raise Unsupported("invalid Sigma", "the condition selects nothing")
    return ast.and_(source.selector, detection)


def techniques(tags: list[str]) -> list[str]:
    """ATT&CK technique ids of Sigma tags: ``attack.t1059.001`` -> ``T1059.001`` (tactics left out)."""
    out = []
    for tag in tags:
        m = _TECHNIQUE.match(tag)
        if m and m.group(1).upper() not in out:
            out.append(m.group(1).upper())
    return out


def metadata(rule: SigmaRule | SigmaCorrelationRule, text: str, name: str, level: str,
             tags: list[str]) -> dict[str, Any]:
    """What a seclake rule keeps of its Sigma rule, shown on the rules page."""
    return {
        "sigma": text,
        "sigmaId": name,
        "level": level,
        "status": rule.status.name.lower() if rule.status else None,
        "tags": tags,
        "references": [str(r) for r in rule.references][:50],
        "falsePositives": [str(f) for f in rule.falsepositives][:50],
        "author": (rule.author or "")[:200] or None,
    }


def rule_dict(text: str, *, key_field: str | None = None, key_type: str | None = None,
              enabled: bool = True, name: str | None = None) -> dict[str, Any]:
    """The seclake rule (``detect/rule.py``'s shape) for the Sigma rule in ``text``; ``name``: its seclake
    name when not its ``id`` (a rule of a correlation's file may have only a Sigma ``name``)."""
    rule = parse(text)
    if isinstance(rule, SigmaCorrelationRule):
        raise Unsupported("correlation rule", "converted with the rules it names (seclake.sigma.correlation)")
    selector(text)  # converts (cached), or says why it cannot be
    if rule.id is None and name is None:
        raise Unsupported("no id", "a Sigma rule needs an id: it becomes the seclake rule's name")
    name = name or str(rule.id)
    source = resolve(rule.logsource)
    tags = [str(t) for t in rule.tags]
    level = rule.level.name.lower() if rule.level else DEFAULT_LEVEL
    return {
        "name": name,
        "behavior": (rule.title or name)[:200],
        "description": (rule.description or "")[:MAX_TEXT],
        "dataset": "event",
        "keyField": key_field or source.key_field,
        "keyType": key_type or (source.key_type if not key_field else "key"),
        "attributes": [{"field": f, "aliase": a} for f, a in ATTRIBUTES if f != (key_field or source.key_field)],
        "risks": techniques(tags),
        "riskScore": LEVEL_SCORES[level],
        "enabled": enabled,
        **metadata(rule, text, name, level, tags),
    }
