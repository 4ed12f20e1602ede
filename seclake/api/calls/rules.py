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
* ``ds/eventwatch_rule_test {bucket, input}``: what one rule makes of one
  event, stored nowhere.

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
from seclake.api.options import build_plan, read_options
from seclake.api.registry import CallContext, call
from seclake.detect.rule import Rule, rule_from_dict, window_text
from seclake.detect.rulebook import RuleBook, check_name
from seclake.detect.signal import Window
from seclake.errors import Forbidden, ValidationFailed
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
ACTIONS = ("list", "get", "add", "update", "toggle", "delete")
WRITE_ACTIONS = ("add", "update", "toggle", "delete")
DAO_FIELDS = ("action", "bucket", "name", "enabled", "args")
TEST_FIELDS = ("bucket", "input")
TEST_VENDOR = "test"


def _book(ctx: CallContext) -> RuleBook:
    return ctx.services.rules


@call("ds/eventwatch_bucket_search", permission="search")
def bucket_search(ctx: CallContext, kargs: dict[str, Any]) -> dict[str, Any]:
    options = dict(read_options(kargs))
    for name in ("range_from", "range_to", "range_field"):
        options.pop(name, None)  # rules have no time
    options.setdefault("sortOrder", "asc")
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


def _known_fields(kargs: dict[str, Any], allowed: tuple[str, ...], what: str) -> None:
    # A misspelt field ("enable") silently ignored would look like a change that happened.
    for name in kargs:
        if name not in allowed:
            raise ValidationFailed(str(name)[:100], f"is not a field of {what}; use {', '.join(allowed)}")


def _with_args(kargs: dict[str, Any]) -> dict[str, Any]:
    """The clients' ``args.id`` and ``args.entry`` as ``name`` and ``bucket``."""
    args = kargs.get("args")
    if args is None:
        return kargs
    if not isinstance(args, dict):
        raise ValidationFailed("args", "must be an object with id (a rule name) or entry (a rule)")
    out = dict(kargs)
    if "entry" in args and "bucket" not in out:
        out["bucket"] = args["entry"]
    if "id" in args and "name" not in out:
        out["name"] = args["id"]
    return out


def _bucket(kargs: dict[str, Any], ctx: CallContext) -> Rule:
    if "bucket" not in kargs or kargs["bucket"] is None:
        raise ValidationFailed("bucket", "is required: the rule, as an object")
    return rule_from_dict(kargs["bucket"], "bucket", limits=QueryLimits.from_settings(ctx.settings))


def _name(kargs: dict[str, Any]) -> str:
    name = kargs.get("name")
    if name is None and isinstance(kargs.get("bucket"), dict):
        name = kargs["bucket"].get("name")  # clients that send the whole bucket
        return check_name(name, "bucket.name")
    if name is None:
        raise ValidationFailed("name", "is required: the name of the rule")
    return check_name(name, "name")


@call("ds/eventwatch_bucket_dao", permission="search")
def bucket_dao(ctx: CallContext, kargs: dict[str, Any]) -> dict[str, Any]:
    _known_fields(kargs, DAO_FIELDS, "eventwatch_bucket_dao")
    kargs = _with_args(kargs)
    action = kargs.get("action")
    if action not in ACTIONS:
        raise ValidationFailed("action", f"must be one of {', '.join(ACTIONS)}, not {str(action)[:40]!r}")
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
        got = book.get(_name(kargs)).to_dict()
        return {"action": action, "bucket": got, "entry": got}

    if action == "add":
        rule = book.add(_bucket(kargs, ctx))
    elif action == "update":
        rule = book.update(_bucket(kargs, ctx))
    elif action == "toggle":
        enabled = kargs.get("enabled")
        if enabled is None and "args" in kargs:  # the clients' toggle flips
            enabled = not book.get(_name(kargs)).enabled
        if not isinstance(enabled, bool):
            raise ValidationFailed("enabled", f"must be true or false, not {str(enabled)[:40]!r}")
        rule = book.toggle(_name(kargs), enabled)
    else:
        rule = book.delete(_name(kargs))
    log.info("rule %s: %s by %s", action, rule.name, ctx.caller.username)
    ctx.audit_detail = f"rule {rule.name!r}: {action}" + (f" enabled={rule.enabled}" if action == "toggle" else "")
    return {"action": action, "name": rule.name, "version": book.version, "bucket": rule.to_dict()}


def _input_record(value: Any, rule: Rule, now_ms: int) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            parsed = parse_line(value, vendor=TEST_VENDOR, dataset=rule.dataset, received_ms=now_ms)
        except ValidationFailed as e:
            raise ValidationFailed(f"input.{e.field}", e.message.removeprefix(f"{e.field}: ")) from None
        if parsed is None:
            raise ValidationFailed("input", "is a blank line; send a log line or a record object")
        return parsed[0]
    if isinstance(value, dict):
        # An event hit as search answers it (2.6) carries the record in _source.
        source = value.get("_source")
        return source if isinstance(source, dict) else value
    raise ValidationFailed("input", "must be a log line (string) or a record object")


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


@call("ds/eventwatch_rule_test", permission="search")
def rule_test(ctx: CallContext, kargs: dict[str, Any]) -> dict[str, Any]:
    _known_fields(kargs, TEST_FIELDS, "eventwatch_rule_test")
    bucket = kargs.get("bucket")
    if isinstance(bucket, dict) and set(bucket) == {"name"}:
        rule = _book(ctx).get(check_name(bucket["name"], "bucket.name"))
    else:
        rule = _bucket(kargs, ctx)
    if "input" not in kargs or kargs["input"] is None:
        raise ValidationFailed("input", "is required: a log line or a record object")
    now_ms = int(time.time() * 1000)
    record = _input_record(kargs["input"], rule, now_ms)
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
