"""Behavior rules, "buckets" in the original service's words (client-compat, "Other calls").

* ``ds/eventwatch_bucket_search {options}``: search the rules with the usual
  search options; answers in the search-hit wrapper (2.9, one rule per
  ``hits.hits[]._source``, ``_id`` its name), as the clients read it, with
  seclake's earlier ``total`` and ``buckets`` beside.
* ``ds/eventwatch_bucket_dao {action, bucket?, name?, enabled?}``: list, get,
  add, update, toggle, delete. Reading needs ``search``, changing ``admin``.
  The clients' form ``{action, args: {id, entry}}`` means ``name`` and
  ``bucket``; their toggle sends no ``enabled`` and flips the rule; ``list``
  also answers ``entries`` (with ``tags`` and ``groups``), ``get`` ``entry``.
* ``ds/eventwatch_rule_test {bucket | sigma, input}``: what one rule makes of
  one event, stored nowhere.
* ``sigma``: a Sigma rule's YAML text, in add/update (with optional
  ``keyField``/``keyType``) and in rule_test, instead of ``bucket``
  (docs/detections.md).

Rules are searched as the records of a small in-memory dataset (their wire
shape, ``description`` as text) by ``seclake.search.memory``, so a query or a
facet means what it means everywhere else. Rules have no time: range options
are accepted and ignored. Sorting defaults to ``name`` ascending.

Changes are audited by the dispatcher's call entry (who, which call, when,
outcome). That entry carries no detail for a successful call, so each
change is also logged, and the response names the action and the rule.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from seclake.api.hitwrapper import wrap
from seclake.api.options import build_plan
from seclake.api.registry import CallContext, call
from seclake.api.reply import RuleSearchReply
from seclake.api.request import RuleDaoRequest, RuleTestRequest, SearchOptions, SearchRequest
from seclake.detect.rule import Rule, rule_from_dict, window_text
from seclake.detect.rulebook import RuleBook, check_name
from seclake.detect.signal import Window
from seclake.errors import Conflict, Forbidden, ValidationFailed
from seclake.ingest import parse_line
from seclake.query.limits import QueryLimits
from seclake.record.dataset import Dataset
from seclake.search.memory import search_records

log = logging.getLogger("seclake.rules")

# The rule records as searched. ``updatedOn`` is named as the time field only
# because a search plan needs one; rules hold no such field and no range is
# ever applied to them.
RULES = Dataset(
    name="rule",
    time_field="updatedOn",
    text_fields=frozenset({"description"}),
    date_fields=frozenset({"updatedOn"}),
    default_sort="name",
)
WRITE_ACTIONS = ("add", "update", "toggle", "delete")
TEST_VENDOR = "test"


def _book(ctx: CallContext) -> RuleBook:
    return ctx.services.rules


@call("ds/eventwatch_bucket_search", permission="search", request=SearchRequest, reply=RuleSearchReply,
      summary="Search behavior rules.")
def bucket_search(ctx: CallContext, args: SearchRequest) -> dict[str, Any]:
    options = (args.options or SearchOptions()).model_copy(update={
        "range_from": None, "range_to": None, "range_field": None,  # rules have no time
    })
    if options.sortOrder is None:
        options.sortOrder = "asc"
    plan, names = build_plan(options, RULES, ctx.settings)
    # The record id is the rule name: ties (and a sort on name, which is not
    # numeric) are ordered by it, so pages are stable.
    records = [(r.name, r.to_dict()) for r in _book(ctx).rules()]
    result = search_records(records, plan, RULES)
    return {
        **wrap(result, index="eventwatch_bucket", facet_names=names, id_of=lambda h: h.record_id),
        "total": result.total,
        "buckets": [h.source for h in result.hits],
    }


def _sigma(text: str, book: RuleBook, key_field: str | None = None,
           key_type: str | None = None) -> list[dict[str, Any]]:
    """The rules a Sigma text makes (docs/detections.md): one, or a correlation's file as a unit (the
    correlation last); why not, named ``sigma``. A correlation may name rules of the book."""
    from seclake.sigma.correlation import unit_dicts
    from seclake.sigma.importer import references_index
    from seclake.sigma.unsupported import Unsupported

    index: dict[str, Any] | None = None

    def lookup(ref: str) -> Any:
        nonlocal index
        if index is None:
            index = references_index(book.rules())
        return index.get(ref)

    try:
        return unit_dicts(text, key_field=key_field, key_type=key_type, lookup=lookup)
    except Unsupported as e:
        raise ValidationFailed("sigma", f"cannot run as Sigma means it: {e}") from None


def _bucket(bucket: dict[str, Any] | None, ctx: CallContext) -> Rule:
    if bucket is None:
        raise ValidationFailed("bucket", "is required: the rule, as an object (or sigma: a Sigma rule's text)")
    return rule_from_dict(bucket, "bucket", limits=QueryLimits.from_settings(ctx.settings))


def _name(name: str | None, bucket: dict[str, Any] | None) -> str:
    if name is None and bucket is not None:
        return check_name(bucket.get("name"), "bucket.name")  # clients that send the whole bucket
    if name is None:
        raise ValidationFailed("name", "is required: the name of the rule")
    return check_name(name, "name")


@call("ds/eventwatch_bucket_dao", permission="search", request=RuleDaoRequest, reply=dict[str, Any],
      summary="List, get, add, update, toggle, delete rules.")
def bucket_dao(ctx: CallContext, args: RuleDaoRequest) -> dict[str, Any]:
    action = args.action
    # The clients' args.id and args.entry mean name and bucket.
    bucket, name = args.bucket, args.name
    if args.args is not None:
        bucket = args.args.entry if bucket is None else bucket
        name = args.args.id if name is None else name
    if args.sigma is not None:
        if action not in ("add", "update"):
            raise ValidationFailed("sigma", f"goes with add or update, not {action}")
        if bucket is not None:
            raise ValidationFailed("sigma", "send the rule as bucket or as sigma, not both")
        unit = _sigma(args.sigma, _book(ctx), args.keyField, args.keyType)
        if len(unit) > 1:  # a correlation with its rules: written together, or not at all
            return _add_unit(ctx, action, unit)
        bucket = unit[0]
    assert ctx.caller is not None
    if action in WRITE_ACTIONS and not ctx.caller.may("admin"):
        raise Forbidden(
            f"user {ctx.caller.username!r} may not {action} rules (it needs the admin permission)"
        )
    book = _book(ctx)
    if action == "list":
        rules = [r.to_dict() for r in book.rules()]
        return {"action": action, "total": len(rules), "buckets": rules, "entries": rules, "tags": [], "groups": []}
    if action == "get":
        got = book.get(_name(name, bucket)).to_dict()
        return {"action": action, "bucket": got, "entry": got}

    if action == "add":
        rule = book.add(_bucket(bucket, ctx))
    elif action == "update":
        rule = book.update(_bucket(bucket, ctx))
    elif action == "toggle" and args.names is not None:
        return _toggle_many(ctx, book, args)
    elif action == "toggle":
        enabled = args.enabled
        if enabled is None and args.args is not None:  # the clients' toggle flips
            enabled = not book.get(_name(name, bucket)).enabled
        if enabled is None:
            raise ValidationFailed("enabled", "is required: true or false")
        rule = book.toggle(_name(name, bucket), enabled)
    else:
        rule = book.delete(_name(name, bucket))
    log.info("rule %s: %s by %s", action, rule.name, ctx.caller.username)
    ctx.audit_detail = f"rule {rule.name!r}: {action}" + (f" enabled={rule.enabled}" if action == "toggle" else "")
    return {"action": action, "name": rule.name, "version": book.version, "bucket": rule.to_dict()}


def _toggle_many(ctx: CallContext, book: RuleBook, args: RuleDaoRequest) -> dict[str, Any]:
    """``names`` enabled or disabled at once: one transaction, one new version of the rule book."""
    if args.name is not None or args.bucket is not None or args.args is not None:
        raise ValidationFailed("names", "goes alone: send the rules' names in names, not also name, bucket or args")
    if args.enabled is None:
        raise ValidationFailed("enabled", "is required with names: true or false")
    changed = book.toggle_many(args.names or [], args.enabled)
    assert ctx.caller is not None
    log.info("rules toggle: %d of %d named %s by %s", len(changed), len(args.names or []),
             "enabled" if args.enabled else "disabled", ctx.caller.username)
    ctx.audit_detail = (f"{len(changed)} rules {'enabled' if args.enabled else 'disabled'}: "
                        + ", ".join(repr(r.name) for r in changed))[:500]
    return {"action": "toggle", "names": [r.name for r in changed], "changed": len(changed),
            "version": book.version}


def _add_unit(ctx: CallContext, action: str, unit: list[dict[str, Any]]) -> dict[str, Any]:
    """Add (none may exist) or update the rules of one Sigma file in one transaction; answers for the last
    (the outermost correlation), naming them all."""
    assert ctx.caller is not None
    if not ctx.caller.may("admin"):
        raise Forbidden(f"user {ctx.caller.username!r} may not {action} rules (it needs the admin permission)")
    book = _book(ctx)
    rules = [_bucket(d, ctx) for d in unit]
    if action == "add":
        present = [r.name for r in rules if book.get_or_none(r.name) is not None]
        if present:
            raise Conflict(f"a rule named {present[0]!r} exists already (the Sigma text holds {len(rules)} rules)")
    book.import_rules(rules)
    head = rules[-1]
    log.info("rules %s: %s by %s", action, ", ".join(r.name for r in rules), ctx.caller.username)
    ctx.audit_detail = f"rules {', '.join(repr(r.name) for r in rules)[:500]}: {action}"
    return {"action": action, "name": head.name, "names": [r.name for r in rules], "version": book.version,
            "bucket": head.to_dict()}


def _input_record(value: Any, rule: Rule, now_ms: int) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            parsed = parse_line(value, vendor=TEST_VENDOR, dataset=rule.dataset, received_ms=now_ms)
        except ValidationFailed as e:
            raise ValidationFailed(f"input.{e.field}", e.message.removeprefix(f"{e.field}: ")) from None
        if parsed is None:
            raise ValidationFailed("input", "is a blank line; send a log line or a record object")
        return parsed[0]
    # A record: an event hit as search answers it (2.6) carries it in _source.
    source = value.get("_source")
    return source if isinstance(source, dict) else value


def _threshold_note(rule: Rule, record: dict[str, Any], counts: bool) -> tuple[str | None, bool]:
    t = rule.threshold
    if t is None:
        return None, True
    limit = int(t.value) if float(t.value).is_integer() else t.value
    what = "records" if t.function == "count" else f"{'the sum' if t.function == 'sum' else 'distinct values'} of {t.field}"
    goal = f"{what} per key reaching {limit} within {window_text(t.window_ms)}"
    if not counts:
        return f"threshold rule ({goal}); this event does not count toward it", False
    value = rule.signal_value(record)
    if value is None:
        return f"threshold rule ({goal}); this event lacks {t.field}, so it adds nothing", False
    alone = Window(t).observe(0, value) is not None
    adds = "1" if t.function == "count" else (f"{value}" if t.function == "sum" else f"the value {value!r}")
    verdict = "would fire on its own" if alone else "would not fire on its own"
    return f"threshold rule ({goal}); this event adds {adds} toward it and {verdict}", alone


@call("ds/eventwatch_rule_test", permission="search", request=RuleTestRequest, reply=dict[str, Any],
      summary="What one rule makes of one event; nothing stored.")
def rule_test(ctx: CallContext, args: RuleTestRequest) -> dict[str, Any]:
    bucket = args.bucket
    unit: dict[str, Rule] = {}  # the other rules of a Sigma correlation's text
    if args.sigma is not None:
        if bucket is not None:
            raise ValidationFailed("sigma", "send the rule as bucket or as sigma, not both")
        rules = [_bucket(d, ctx) for d in _sigma(args.sigma, _book(ctx))]
        unit = {r.name: r for r in rules}
        bucket = rules[-1].to_dict()  # the outermost correlation, or the one rule
    if bucket is None:
        raise ValidationFailed("bucket", "is required: a rule, {name} of a stored one, or sigma: a Sigma rule's text")
    if set(bucket) == {"name"}:
        rule = _book(ctx).get(check_name(bucket["name"], "bucket.name"))
    else:
        rule = _bucket(bucket, ctx)
    now_ms = int(time.time() * 1000)
    if rule.correlation is not None:
        return _correlation_test(ctx, rule, unit, args.input, now_ms)
    record = _input_record(args.input, rule, now_ms)
    matched = bool(rule.matcher()(record))
    key = rule.key_of(record)
    note, fires = _threshold_note(rule, record, matched and key is not None)
    return {
        "name": rule.name,
        "matched": matched,
        "key": key,
        "keyType": rule.key_type,
        "attributes": rule.attribute_values(record),
        "risks": list(rule.risks),
        "riskScore": rule.risk_score,
        "behavior": rule.behavior,
        "thresholdNote": note,
        "wouldFire": matched and key is not None and fires,
        "record": record,
    }


def _correlation_test(ctx: CallContext, corr: Rule, unit: dict[str, Rule], value: Any, now_ms: int) -> dict[str, Any]:
    """What one event is to a correlation rule: which of its rules match it, the group it counts in, and
    whether it alone would meet the condition (it has no query of its own: docs/rules.md)."""
    from seclake.detect.correlation import Group
    from seclake.detect.ruleset import RuleSet

    c = corr.correlation
    assert c is not None
    refs = [unit.get(n) or _book(ctx).get_or_none(n) for n in c.rules]
    ruleset = RuleSet([corr, *(r for r in refs if r is not None)], None)
    record: dict[str, Any] | None = None
    hits, group, fires = [], None, False
    for index, (name, ref) in enumerate(zip(c.rules, refs)):
        if ref is None or ref.correlation is not None:
            continue  # absent, or a correlation: nothing one event shows
        record = _input_record(value, ref, now_ms)
        if not ref.matcher()(record):
            continue
        values = ruleset.group_values(corr, name, ref.dataset, record)
        hits.append(name)
        if values is None:
            continue
        group = group if group is not None else values
        counted = ruleset.counted_value(corr, name, ref.dataset, record) if c.type == "value_count" else None
        fires = fires or Group(c).observe(0, index, counted, 0) is not None
    what = {"event_count": "matches", "value_count": f"distinct {c.field}", "temporal": "rules matched",
            "temporal_ordered": "rules matched in order"}[c.type]
    goal = (f"correlation rule ({what} of {', '.join(c.rules)} per {', '.join(c.group_by) or 'rule'}, "
            f"{c.op} {c.count} within {window_text(c.timespan_ms)})")
    if not hits:
        note = f"{goal}; none of its rules matches this event, so it does not count"
    elif group is None:
        note = f"{goal}; matched by {', '.join(hits)}, but it lacks a group-by field, so it does not count"
    else:
        note = (f"{goal}; matched by {', '.join(hits)}, counts for {' | '.join(group)} and "
                f"{'would' if fires else 'would not'} fire on its own")
    return {
        "name": corr.name, "matched": bool(hits), "key": " | ".join(group) if group else None,
        "keyType": corr.key_type, "attributes": [{"key": f, "aliase": f, "value": v}
                                                 for f, v in zip(c.group_by, group or [])],
        "risks": list(corr.risks), "riskScore": corr.risk_score, "behavior": corr.behavior,
        "thresholdNote": None, "correlationNote": note, "wouldFire": fires,
        "record": record if record is not None else value,
    }
