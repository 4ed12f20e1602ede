"""The parsed query as search responses show it.

``to_dict`` writes the tree in an Elasticsearch-DSL-like JSON shape, so a
user can see how ``a b OR c`` was read; ``highlight_terms`` lists the words a
UI highlights in ``@message`` (the spec's ``terms``), and ``highlights`` what
each matched, where, and by which rule, so a UI marks only that: a field's
term in that field's value, a word as a whole token, not inside another word.
The echo is read by people, not by code: the tree in ast.py stays the one
contract.

Shapes:

    {"match_all": {}}                      {"match_none": {}}
    {"match_phrase": {"@message": "failed password"}}   text rule ("*": default field)
    {"term": {"@fields.user": "admin"}}    keyword rule
    {"wildcard": {"@fields.user": "adm*"}} {"regexp": {"*": "<translated pattern>"}}
    {"range": {"@fields.dport": {"gte": 1, "lt": 100, "kind": "number"}}}
    {"exists": {"field": "@fields.sip"}}   {"cidr": {"@fields.sip": "10.0.0.0/8"}}
    {"bool": {"must": [...], "must_not": [...]}}  And (Not children go to must_not)
    {"bool": {"should": [...]}}            Or
    {"bool": {"must_not": [x]}}            Not
    Sigma's nodes (never parsed from Lucene text; rules built by the Sigma backend):
    {"term": {"f": {"value": "Deny", "case_insensitive": false}}}  cased Term (Wildcard alike)
    {"regexp": {"f": {"value": "(?i)x", "flavor": "re2"}}}          Regex of flavor re2
    {"contains": {"f": {"value": "MAC on", "case_insensitive": true}}}
    {"fieldref": {"field": "f", "other": "g", "case_insensitive": true}}
"""

from __future__ import annotations

from typing import Any

from seclake.query import ast
from seclake.record.dataset import Dataset
from seclake.record.value import tokens

DEFAULT_FIELD = "*"


def to_dict(node: ast.Node, dataset: Dataset | None = None) -> dict[str, Any]:
    """The echo of ``node``; with ``dataset``, Terms on its text fields show as match_phrase."""
    return _echo(node, dataset)


def _echo(node: ast.Node, dataset: Dataset | None) -> dict[str, Any]:
    if isinstance(node, ast.MatchAll):
        return {"match_all": {}}
    if isinstance(node, ast.MatchNone):
        return {"match_none": {}}
    if isinstance(node, ast.Term):
        if node.cased:
            return {"term": {node.path or DEFAULT_FIELD: {"value": node.value, "case_insensitive": False}}}
        if node.path is None:
            return {"match_phrase": {DEFAULT_FIELD: node.value}}
        if dataset is not None and dataset.is_text(node.path):
            return {"match_phrase": {node.path: node.value}}
        return {"term": {node.path: node.value}}
    if isinstance(node, ast.Wildcard):
        if node.cased:
            return {"wildcard": {node.path or DEFAULT_FIELD: {"value": node.pattern, "case_insensitive": False}}}
        return {"wildcard": {node.path or DEFAULT_FIELD: node.pattern}}
    if isinstance(node, ast.Regex):
        if node.flavor == "re2":
            return {"regexp": {node.path or DEFAULT_FIELD: {"value": node.pattern, "flavor": "re2"}}}
        return {"regexp": {node.path or DEFAULT_FIELD: node.pattern}}
    if isinstance(node, ast.Contains):
        return {"contains": {node.path or DEFAULT_FIELD: {"value": node.value, "case_insensitive": not node.cased}}}
    if isinstance(node, ast.FieldRef):
        return {"fieldref": {"field": node.path, "other": node.other, "case_insensitive": not node.cased}}
    if isinstance(node, ast.Range):
        bounds: dict[str, Any] = {}
        if node.lo is not None:
            bounds["gte" if node.include_lo else "gt"] = node.lo
        if node.hi is not None:
            bounds["lte" if node.include_hi else "lt"] = node.hi
        bounds["kind"] = node.kind
        return {"range": {node.path: bounds}}
    if isinstance(node, ast.Exists):
        return {"exists": {"field": node.path}}
    if isinstance(node, ast.Cidr):
        return {"cidr": {node.path: str(node.network)}}
    if isinstance(node, ast.And):
        must = [_echo(c, dataset) for c in node.children if not isinstance(c, ast.Not)]
        must_not = [_echo(c.child, dataset) for c in node.children if isinstance(c, ast.Not)]
        body: dict[str, Any] = {}
        if must:
            body["must"] = must
        if must_not:
            body["must_not"] = must_not
        return {"bool": body}
    if isinstance(node, ast.Or):
        return {"bool": {"should": [_echo(c, dataset) for c in node.children]}}
    if isinstance(node, ast.Not):
        return {"bool": {"must_not": [_echo(node.child, dataset)]}}
    raise TypeError(f"not a query node: {node!r}")


def highlight_terms(node: ast.Node) -> list[str]:
    """The plain positive words of the query, in query order, without repeats.

    Terms and the words of phrases that are not under a Not; wildcards,
    regexes, ranges and CIDR blocks have no single spelling to highlight.
    """
    out: list[str] = []
    seen: set[str] = set()
    _collect(node, out, seen)
    return out


def _collect(node: ast.Node, out: list[str], seen: set[str]) -> None:
    if isinstance(node, (ast.And, ast.Or)):
        for child in node.children:
            _collect(child, out, seen)
    elif isinstance(node, ast.Term):
        # Words as written (split on spaces only) keep "10.1.2.3" and
        # "mimikatz.exe" whole, which is what a reader looks for.
        for word in node.value.split():
            if tokens(word) and word.lower() not in seen:
                seen.add(word.lower())
                out.append(word)


def highlights(node: ast.Node, dataset: Dataset) -> list[dict[str, Any]]:
    """What each positive Term of the query matched, for marking it where it shows, in query order:
    ``{"field": path, "value": v, "text": bool}``. ``field`` is the record path (``"*"``: the default
    field, every string of the record); ``text`` says the text rule matched it (the value's tokens,
    in order and adjacent, query-semantics.md "Matching"), else the keyword rule (the whole value,
    case-insensitively). Terms under a Not matched nothing to show; wildcards, regexes, ranges and
    CIDR blocks are left out, as in ``highlight_terms``."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, bool]] = set()
    _marks(node, dataset, out, seen)
    return out


def _marks(node: ast.Node, dataset: Dataset, out: list[dict[str, Any]], seen: set[tuple[str, str, bool]]) -> None:
    if isinstance(node, (ast.And, ast.Or)):
        for child in node.children:
            _marks(child, dataset, out, seen)
    elif isinstance(node, ast.Term):
        text = node.path is None or dataset.is_text(node.path)
        if text and not tokens(node.value):
            return  # no word to find ("-", "..."): it matched nothing
        key = (node.path or DEFAULT_FIELD, node.value.lower(), text)
        if key not in seen:
            seen.add(key)
            out.append({"field": key[0], "value": node.value, "text": text})
