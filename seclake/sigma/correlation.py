"""Sigma correlation rules -> seclake's own correlation rules (docs/rules.md, "Correlation rules").

A Sigma correlation (``correlation:`` with ``type``, ``rules``, ``group-by``,
``timespan``, ``condition``, ``aliases``, ``generate``) names other Sigma
rules, by ``id`` or by ``name``, usually in the same file as further YAML
documents (the Sigma specification's own examples are written so). Such a
file is one *unit*: every document in it becomes a seclake rule, or none
does (``unit_dicts`` raises ``Unsupported`` for the whole file).

What changes on the way:

* ``rules``: a referenced Sigma rule becomes the seclake rule named by its
  ``id`` (its ``name`` when it has no id); a reference not in the file is
  looked up among the rules already known (the rule book, the other files of
  the import: ``lookup``). One found nowhere is refused, named.
* ``group-by`` and the value_count ``field`` are Sigma field names of the
  referenced rules' events: each is mapped through *that rule's* field
  pipeline (pipeline.py), so ``TargetUserName`` reads NXLog's
  ``TargetUserName`` or Winlogbeat's ``winlog.event_data.TargetUserName``,
  whichever the record has. The places are joined with ``|`` and read by
  the rule set as "the first of these the record has a value at"
  (detect/ruleset.py). Per referenced rule, so a correlation over a Windows
  rule and a Linux rule groups each by its own field: these become seclake
  ``aliases``, as do Sigma's own ``aliases`` (a group-by name read at
  another field per rule).
* Windows rules also read Sigma's generic names the Sigma specification's
  examples group by: ``ComputerName`` (the event's computer, ``host.name``
  where the event data has none) and ``User`` (``user.name``, the account
  the parsers name: 4624/4625's TargetUserName, Sysmon's User without its
  domain), after the event data's own field of that name.
* ``generate`` (default false): the referenced rules of the file make no
  behavior of their own (seclake ``generate: false``), only the correlation
  does; ``generate: true`` keeps theirs. A correlation referenced by another
  is the same: only the outermost one makes behaviors. A rule outside the
  file keeps what it has.
* ``timespan``, the condition (one of gte/gt/lte/lt/eq/neq), title, level,
  tags... as for detection rules (conversion.py).

Refused, with the reason (``Unsupported``): value_sum, value_avg,
value_percentile, value_median (seclake does not aggregate values),
extended (string) conditions of temporal rules, a ``field`` list, a
fractional count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml
from sigma.correlations import SigmaCorrelationCondition, SigmaCorrelationRule, SigmaCorrelationType
from sigma.rule import SigmaRule

from seclake.sigma.conversion import (
    DEFAULT_LEVEL, LEVEL_SCORES, MAX_TEXT, metadata, parse, parse_all, rule_dict, techniques,
)
from seclake.sigma.logsource import Source, resolve
from seclake.sigma.pipeline import PLACES, pipeline
from seclake.sigma.unsupported import Unsupported

SUPPORTED = {
    SigmaCorrelationType.EVENT_COUNT: "event_count",
    SigmaCorrelationType.VALUE_COUNT: "value_count",
    SigmaCorrelationType.TEMPORAL: "temporal",
    SigmaCorrelationType.TEMPORAL_ORDERED: "temporal_ordered",
}
MAX_DOCUMENTS = 64  # a unit is a correlation and its rules, not a rule repository
# Sigma's generic names a correlation groups Windows events by (the specification's examples).
WINDOWS_GENERIC = {"ComputerName": "Hostname|winlog.computer_name|host.name", "User": "user.name"}


@dataclass(frozen=True)
class Known:
    """A rule a correlation may name that is not in its own file (the rule book, another imported file)."""

    name: str  # its seclake name
    source: Source | None = None  # its Sigma log source; None: seclake's own format (fields named as stored)
    group_by: tuple[str, ...] | None = None  # a correlation's group-by names (what it passes on when it fires)


Lookup = Callable[[str], "Known | None"]


def has_correlation(text: str) -> bool:
    """Whether a rule file holds a Sigma correlation (it must then be converted as a unit)."""
    return any(isinstance(d, SigmaCorrelationRule) for d in parse_all(text))


def documents(text: str) -> list[str]:
    """The text of each YAML document in ``text`` (``---`` separated), as written."""
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise Unsupported("invalid Sigma", f"not YAML: {e}") from None
    except RecursionError:
        raise Unsupported("invalid Sigma", "nested too deeply") from None
    out = [text[n.start_mark.index:n.end_mark.index].strip() + "\n" for n in nodes if n is not None]
    if len(out) > MAX_DOCUMENTS:
        raise Unsupported("invalid Sigma", f"holds {len(out)} YAML documents; at most {MAX_DOCUMENTS}")
    return out



@lru_cache(maxsize=8192)
def known(name: str, sigma_text: str | None, group_by: tuple[str, ...] | None) -> Known:
    """What a stored rule is to a correlation naming it: its seclake name, its Sigma log source."""
    source = None
    if sigma_text is not None and group_by is None:
        try:
            source = resolve(parse(sigma_text).logsource)
        except Unsupported:
            pass
    return Known(name, source, group_by)


def references(name: str, sigma_text: str | None) -> tuple[str, ...]:
    """The references a rule answers to: its seclake name, and its Sigma ``id`` and ``name``."""
    out = [name]
    if sigma_text is not None:
        out.extend(_sigma_names(sigma_text))
    return tuple(dict.fromkeys(out))


@lru_cache(maxsize=8192)
def _sigma_names(text: str) -> tuple[str, ...]:
    try:
        rule = parse(text)
    except Unsupported:
        return ()
    return tuple(str(x) for x in (rule.id, rule.name) if x is not None)


def unit_dicts(text: str, *, key_field: str | None = None, key_type: str | None = None, enabled: bool = True,
               lookup: Lookup = lambda ref: None) -> list[dict[str, Any]]:
    """Every seclake rule (``detect/rule.py``'s shape) of the Sigma file ``text``: all of them, or ``Unsupported``."""
    texts = documents(text)
    rules = [parse(t) for t in texts]
    if len(rules) == 1 and isinstance(rules[0], SigmaRule):
        return [rule_dict(text, key_field=key_field, key_type=key_type, enabled=enabled)]
    names = [_name(r) for r in rules]
    if len(set(names)) != len(names):
        raise Unsupported("invalid Sigma", "two documents have the same id or name")
    local: dict[str, int] = {}
    for i, r in enumerate(rules):
        for ref in (r.id, r.name):
            if ref is not None:
                local[str(ref)] = i
    # generate: a rule of the file that a correlation of the file names makes behaviors only if one
    # naming it says generate: true (Sigma's default is false: only the correlation's query).
    generate = [True] * len(rules)
    named = [False] * len(rules)
    for r in rules:
        if isinstance(r, SigmaCorrelationRule):
            for ref in _rule_refs(r):
                if ref in local:
                    i = local[ref]
                    generate[i] = (generate[i] if named[i] else False) or r.generate
                    named[i] = True
    out: list[dict[str, Any]] = []
    resolved: dict[str, Known] = {}
    for i, r in enumerate(rules):
        if isinstance(r, SigmaRule):
            d = rule_dict(texts[i], key_field=key_field, key_type=key_type, enabled=enabled, name=names[i])
            resolved[names[i]] = Known(names[i], resolve(r.logsource))
        else:
            continue
        d["generate"] = generate[i]
        out.append(d)
    # Correlations in an order where each one's correlations come first (they are looked up).
    waiting = [i for i, r in enumerate(rules) if isinstance(r, SigmaCorrelationRule)]
    while waiting:
        ready = [i for i in waiting if all(not (ref in local and isinstance(rules[local[ref]], SigmaCorrelationRule)
                                                and names[local[ref]] not in resolved)
                                           for ref in _rule_refs(rules[i]))]
        if not ready:
            raise Unsupported("invalid Sigma", "its correlations name each other in a cycle")
        for i in ready:
            waiting.remove(i)

            def find(ref: str) -> Known | None:
                return resolved.get(names[local[ref]]) if ref in local else lookup(ref)

            d = correlation_dict(rules[i], texts[i], names[i], find, key_type=key_type, enabled=enabled)
            d["generate"] = generate[i]
            resolved[names[i]] = Known(names[i], None, tuple(d["correlation"]["groupBy"]))
            out.append(d)
    return out


def _name(rule: SigmaRule | SigmaCorrelationRule) -> str:
    if rule.id is not None:
        return str(rule.id)
    if rule.name:
        return rule.name
    raise Unsupported("no id", "a Sigma rule needs an id (or, in a correlation's file, a name): it becomes "
                               "the seclake rule's name")


def _rule_refs(rule: SigmaCorrelationRule) -> list[str]:
    return [ref.reference for ref in rule.rules or []]


def correlation_dict(rule: SigmaCorrelationRule, text: str, name: str, find: Lookup, *,
                     key_type: str | None = None, enabled: bool = True) -> dict[str, Any]:
    """The seclake correlation rule of one Sigma correlation; ``find`` gives each rule it names."""
    kind = SUPPORTED.get(rule.type)
    if kind is None:
        raise Unsupported("correlation type", f"{rule.type.name.lower()}: seclake counts matches and "
                                              "distinct values, it does not aggregate them")
    condition = rule.condition
    if not isinstance(condition, SigmaCorrelationCondition):
        raise Unsupported("correlation condition", f"an extended {kind} condition ({condition.expression!r})")
    if isinstance(condition.count, float):
        raise Unsupported("correlation condition", f"a count of {condition.count} (whole numbers only)")
    if isinstance(condition.fieldref, list):
        raise Unsupported("correlation condition", "value_count over several fields")
    refs = _rule_refs(rule)
    found = {ref: find(ref) for ref in refs}
    missing = [ref for ref, k in found.items() if k is None]
    if missing:
        raise Unsupported("rule not found", "names " + ", ".join(missing)
                          + ": neither in its file nor among the rules already imported")
    targets = [k for k in found.values() if k is not None]
    group_by = list(rule.group_by or [])
    # Sigma's aliases: a group-by name -> (the seclake name of a rule it names -> that rule's Sigma field).
    sigma_aliases: dict[str, dict[str, str]] = {}
    for alias in rule.aliases:
        if alias.alias not in group_by:
            raise Unsupported("invalid Sigma", f"alias {alias.alias} is not one of group-by")
        per: dict[str, str] = {}
        for ref, f in alias.mapping.items():
            k = found.get(ref.reference) or find(ref.reference)
            if k is None:
                raise Unsupported("rule not found", f"alias {alias.alias} names {ref.reference}, which is not a rule "
                                                    "the correlation names")
            per[k.name] = str(f)
        sigma_aliases[alias.alias] = per
    aliases: dict[str, dict[str, str]] = {}
    for g in group_by:
        per_rule = {}
        for k in targets:
            sigma_field = sigma_aliases[g].get(k.name) if g in sigma_aliases else g
            if sigma_field is None:
                raise Unsupported("invalid Sigma", f"alias {g} names no field for rule {k.name}")
            per_rule[k.name] = _field(k, sigma_field, g)
        if any(f != g for f in per_rule.values()):
            aliases[g] = per_rule
    op = condition.op.name.lower()
    cond: dict[str, Any] = {op: condition.count}
    if kind == "value_count":
        places: list[str] = []
        for k in targets:
            for p in _field(k, condition.fieldref, condition.fieldref).split(PLACES):
                if p not in places:
                    places.append(p)
        cond["field"] = PLACES.join(places)
    tags = [str(t) for t in rule.tags]
    level = rule.level.name.lower() if rule.level else DEFAULT_LEVEL
    d: dict[str, Any] = {
        "name": name,
        "behavior": (rule.title or name)[:200],
        "description": (rule.description or "")[:MAX_TEXT],
        "risks": techniques(tags),
        "riskScore": LEVEL_SCORES[level],
        "enabled": enabled,
        "correlation": {
            "type": kind, "rules": [k.name for k in targets], "groupBy": group_by,
            "timespan": f"{rule.timespan.seconds}s", "condition": cond,
            **({"aliases": aliases} if aliases else {}),
        },
        **metadata(rule, text, name, level, tags),
    }
    if key_type is not None:
        d["keyType"] = key_type
    return d


def _field(target: Known, sigma_field: str, group: str) -> str:
    """Where ``target``'s records hold Sigma field ``sigma_field`` (places joined by ``|``)."""
    if target.group_by is not None:  # a correlation passes on its own group-by values, under their names
        if sigma_field not in target.group_by:
            raise Unsupported("correlation group-by", f"{group}: the correlation {target.name} it names does "
                                                      f"not group by {sigma_field}")
        return sigma_field
    if target.source is None:  # seclake's own rule: its records' field names
        return sigma_field
    return places(target.source, sigma_field)


def places(source: Source, field: str) -> str:
    """Sigma field ``field`` of a rule of ``source``, mapped by that source's field pipeline."""
    names: list[str] = [field]
    for item in pipeline(source.family, source.category, source.service).items:
        apply = getattr(item.transformation, "apply_field_name", None)
        if apply is None:
            continue
        mapped: list[str] = []
        for n in names:
            got = apply(n)
            got = [got] if isinstance(got, str) else list(got or [n])
            mapped.extend(p for g in got for p in g.split(PLACES))
        names = mapped
    if source.family == "windows" and field in WINDOWS_GENERIC:
        names.extend(WINDOWS_GENERIC[field].split(PLACES))
    return PLACES.join(dict.fromkeys(names))

