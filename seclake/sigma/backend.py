"""A pySigma backend whose output is a seclake query tree (``seclake.query.ast``), not text.

pySigma parses the rule, applies its modifiers (``contains``, ``all``,
``windash``, ``base64offset``...) and the processing pipeline (pipeline.py),
and walks the condition; each method here turns one piece into the node that
means the same thing in seclake (docs/query-semantics.md):

=============================  ================================================
Sigma                          seclake node
=============================  ================================================
``f: value`` (no wildcards)    ``Term``: the whole value, case-insensitive
``f: va*ue`` / ``contains``    ``Wildcard``: the pattern covers the whole value
``|cased``                     ``Term``/``Wildcard`` with ``cased=True``
``|re`` (and ``|i|m|s``)       ``Regex(flavor="re2")``: found anywhere, RE2
``|cidr``                      ``Cidr``
``|gt|gte|lt|lte``             ``Range`` (numbers)
``|exists``, ``f: null``       ``Exists``, ``Not(Exists)``
``|fieldref``                  ``FieldRef``
keyword (no field)             ``Contains(None, ...)``: a substring of any value
=============================  ================================================

Going to the tree directly, not through Lucene text, keeps each meaning
exact: a Sigma regex is never re-read as a Lucene one, a keyword with blanks
stays one substring. Anything without an exact counterpart raises
``Unsupported`` and the rule is skipped with that reason.
"""

from __future__ import annotations

import ipaddress
from typing import Any, ClassVar

from sigma.conditions import ConditionAND, ConditionFieldEqualsValueExpression, ConditionNOT, ConditionOR, \
    ConditionValueExpression
from sigma.conversion.base import Backend
from sigma.conversion.state import ConversionState
from sigma.types import CompareOperators, Placeholder, SigmaBool, SigmaCasedString, SigmaNumber, \
    SigmaRegularExpressionFlag, SigmaString, SpecialChars

from seclake.query import ast
from seclake.record.dataset import EVENTS
from seclake.sigma.pipeline import PLACES
from seclake.sigma.unsupported import Unsupported

_FLAGS = {SigmaRegularExpressionFlag.IGNORECASE: "i", SigmaRegularExpressionFlag.MULTILINE: "m",
          SigmaRegularExpressionFlag.DOTALL: "s"}


def _node(name: str, reason: str) -> Any:
    """An AST node class that this seclake may not have (docs/query-semantics.md lists those it has)."""
    node = getattr(ast, name, None)
    if node is None:
        raise Unsupported(reason, f"this seclake has no {name} query node")
    return node


def paths(field: str | None) -> list[str]:
    """The record paths one (mapped) Sigma field has its value at: ``a|b`` is a or b (pipeline.PLACES)."""
    if not field:
        raise Unsupported("field-less value", "a value without a field where a field is needed")
    return [EVENTS.resolve(name) for name in field.split(PLACES)]


def _at(field: str | None, test: Any) -> ast.Node:
    """``test(path)`` at whichever place the field has: true at any of them."""
    return ast.or_(*(test(path) for path in paths(field)))


def _absent(field: str | None) -> ast.Node:
    """No place of the field holds a value."""
    return ast.not_(_at(field, ast.Exists))


def _parts(value: SigmaString) -> list[str | SpecialChars]:
    for part in value.s:
        if isinstance(part, Placeholder):
            raise Unsupported("placeholder", f"%{part.name}% (|expand) has no values in seclake")
    return list(value.s)


def _wildcard(parts: list[str | SpecialChars], cased: bool) -> str:
    """Sigma's string as ``ast.Wildcard``'s pattern: Lucene's escaping, lowercased unless cased."""
    out = []
    for part in parts:
        if part is SpecialChars.WILDCARD_MULTI:
            out.append("*")
        elif part is SpecialChars.WILDCARD_SINGLE:
            out.append("?")
        else:
            text = part.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")
            out.append(text if cased else text.lower())
    return "".join(out)


def string_node(path: str, value: SigmaString) -> ast.Node:
    """``path`` equals ``value`` as Sigma means it: whole value, wildcards, case-insensitive unless cased."""
    cased = isinstance(value, SigmaCasedString)
    parts = _parts(value)
    if not value.contains_special():
        text = "".join(p for p in parts if isinstance(p, str))
        if cased:
            return _node("Term", "cased")(path, text, cased=True) if _has_cased("Term") else _no_cased()
        return ast.Term(path, text)
    pattern = _wildcard(parts, cased)
    if cased:
        return _node("Wildcard", "cased")(path, pattern, cased=True) if _has_cased("Wildcard") else _no_cased()
    return ast.Wildcard(path, pattern)


def _has_cased(name: str) -> bool:
    return "cased" in getattr(ast, name).__dataclass_fields__


def _no_cased() -> ast.Node:
    raise Unsupported("cased", "this seclake has no case-sensitive match (|cased)")


class SeclakeBackend(Backend):
    """Sigma rule -> ``ast.Node`` per condition (field names already mapped by the pipeline)."""

    name: ClassVar[str] = "seclake"
    formats: ClassVar[dict[str, str]] = {"default": "seclake query tree"}
    requires_pipeline: ClassVar[bool] = True

    # -- boolean structure ------------------------------------------------------

    def convert_condition_as_in_expression(self, cond: Any, state: ConversionState) -> ast.Node:
        raise AssertionError("never asked: convert_or_as_in is off")  # pragma: no cover

    def convert_condition_or(self, cond: ConditionOR, state: ConversionState) -> ast.Node:
        return ast.or_(*(self.convert_condition(arg, state) for arg in cond.args))

    def convert_condition_and(self, cond: ConditionAND, state: ConversionState) -> ast.Node:
        return ast.and_(*(self.convert_condition(arg, state) for arg in cond.args))

    def convert_condition_not(self, cond: ConditionNOT, state: ConversionState) -> ast.Node:
        return ast.not_(self.convert_condition(cond.args[0], state))

    # -- field = value ------------------------------------------------------------

    def convert_condition_field_eq_val_str(self, cond: ConditionFieldEqualsValueExpression,
                                           state: ConversionState) -> ast.Node:
        return _at(cond.field, lambda path: string_node(path, cond.value))

    def convert_condition_field_eq_val_str_case_sensitive(self, cond: ConditionFieldEqualsValueExpression,
                                                          state: ConversionState) -> ast.Node:
        return _at(cond.field, lambda path: string_node(path, cond.value))

    def convert_condition_field_eq_val_num(self, cond: ConditionFieldEqualsValueExpression,
                                           state: ConversionState) -> ast.Node:
        # The keyword rule compares numbers as numbers: 1 matches 1, "1" and "1.0".
        value: SigmaNumber = cond.value
        return _at(cond.field, lambda path: ast.Term(path, str(value.number)))

    def convert_condition_field_eq_val_bool(self, cond: ConditionFieldEqualsValueExpression,
                                            state: ConversionState) -> ast.Node:
        value: SigmaBool = cond.value
        return _at(cond.field, lambda path: ast.Term(path, "true" if value.boolean else "false"))

    def convert_condition_field_eq_val_timestamp_part(self, cond: Any, state: ConversionState) -> ast.Node:
        raise Unsupported("timestamp part", f"|{cond.value.timestamp_part.name.lower()} on {cond.field}")

    def convert_condition_field_eq_val_re(self, cond: ConditionFieldEqualsValueExpression,
                                          state: ConversionState) -> ast.Node:
        regex = _node("Regex", "regex")
        if "flavor" not in regex.__dataclass_fields__:
            raise Unsupported("regex", "this seclake reads regexes as Lucene's only")
        flags = "".join(sorted(_FLAGS[f] for f in cond.value.flags))
        pattern = str(cond.value.regexp)
        pattern = f"(?{flags}){pattern}" if flags else pattern
        return _at(cond.field, lambda path: regex(path, pattern, flavor="re2"))

    def convert_condition_field_eq_val_cidr(self, cond: ConditionFieldEqualsValueExpression,
                                            state: ConversionState) -> ast.Node:
        network = ipaddress.ip_network(cond.value.network, strict=False)
        return _at(cond.field, lambda path: ast.Cidr(path, network))

    def convert_condition_field_compare_op_val(self, cond: ConditionFieldEqualsValueExpression,
                                               state: ConversionState) -> ast.Node:
        op, number = cond.value.op, cond.value.number.number
        bounds = {CompareOperators.LT: dict(lo=None, hi=number, include_hi=False),
                  CompareOperators.LTE: dict(lo=None, hi=number),
                  CompareOperators.GT: dict(lo=number, hi=None, include_lo=False),
                  CompareOperators.GTE: dict(lo=number, hi=None)}.get(op)
        if bounds is None:
            raise Unsupported("comparison", f"operator {op.name} on {cond.field}")
        return _at(cond.field, lambda path: ast.Range(path, **bounds))

    def convert_condition_field_eq_field(self, cond: ConditionFieldEqualsValueExpression,
                                         state: ConversionState) -> ast.Node:
        ref = cond.value
        if ref.starts_with or ref.ends_with:
            raise Unsupported("fieldref", "|fieldref with |startswith or |endswith")
        field_ref = _node("FieldRef", "fieldref")
        others = paths(ref.field)
        return _at(cond.field, lambda path: ast.or_(*(field_ref(path, other) for other in others)))

    def convert_condition_field_eq_val_null(self, cond: ConditionFieldEqualsValueExpression,
                                            state: ConversionState) -> ast.Node:
        # Sigma's null: the field is absent (an empty string is a value, as in seclake's _exists_).
        return _absent(cond.field)

    def convert_condition_field_exists(self, cond: ConditionFieldEqualsValueExpression,
                                       state: ConversionState) -> ast.Node:
        return _at(cond.field, ast.Exists)

    def convert_condition_field_not_exists(self, cond: ConditionFieldEqualsValueExpression,
                                           state: ConversionState) -> ast.Node:
        return _absent(cond.field)

    def convert_condition_field_eq_query_expr(self, cond: Any, state: ConversionState) -> ast.Node:
        raise Unsupported("query expression", f"a backend-specific query expression on {cond.field}")

    # -- keywords (no field) ---------------------------------------------------------

    def convert_condition_val_str(self, cond: ConditionValueExpression, state: ConversionState) -> ast.Node:
        # A keyword is a substring of the event (any of its values): "*a b*" and "a b" alike.
        value: SigmaString = cond.value
        parts = _parts(value)
        inner = parts[:]
        while inner and inner[0] is SpecialChars.WILDCARD_MULTI:
            inner.pop(0)
        while inner and inner[-1] is SpecialChars.WILDCARD_MULTI:
            inner.pop()
        if not inner or not all(isinstance(p, str) for p in inner):
            raise Unsupported("keyword wildcard", f"keyword {str(value)!r} has a wildcard inside it")
        contains = _node("Contains", "keyword")
        return contains(None, "".join(inner), cased=isinstance(value, SigmaCasedString))

    def convert_condition_val_num(self, cond: ConditionValueExpression, state: ConversionState) -> ast.Node:
        return _node("Contains", "keyword")(None, str(cond.value.number))

    def convert_condition_val_re(self, cond: ConditionValueExpression, state: ConversionState) -> ast.Node:
        raise Unsupported("keyword regex", "a regular expression without a field")

    def convert_condition_query_expr(self, cond: Any, state: ConversionState) -> ast.Node:
        raise Unsupported("query expression", "a backend-specific query expression")

    # -- correlation rules: imported by conversion.py onto seclake's own correlation ----

    def _correlation(self, *args: Any, **kwargs: Any) -> Any:
        raise Unsupported("correlation", "converted by seclake.sigma.conversion, not the backend")

    convert_correlation_event_count_rule = _correlation
    convert_correlation_value_count_rule = _correlation
    convert_correlation_temporal_rule = _correlation
    convert_correlation_temporal_ordered_rule = _correlation
    convert_correlation_extended_temporal_rule = _correlation
    convert_correlation_extended_temporal_ordered_rule = _correlation
    convert_correlation_value_sum_rule = _correlation
    convert_correlation_value_avg_rule = _correlation
    convert_correlation_value_percentile_rule = _correlation
    convert_correlation_value_median_rule = _correlation

    def finalize_query_default(self, rule: Any, query: ast.Node, index: int, state: ConversionState) -> ast.Node:
        return query

    def finalize_output_default(self, queries: list[ast.Node]) -> list[ast.Node]:
        return queries
