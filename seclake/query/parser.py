"""``searchStr`` (Lucene query syntax) -> query tree, via luqum.

luqum does the parsing; this module fixes what luqum leaves open:

* ``&&``, ``||`` and a leading ``!`` are words to luqum. Before parsing,
  luqum's own lexer finds them as whole TERM tokens (so nothing inside
  quotes, regexes or escapes is touched) and they become AND, OR, NOT.
* luqum gives implicit operators the lowest precedence (``a b OR c`` is
  ``a (b OR c)``). Each chain of operators is flattened back into source
  order and rebuilt with NOT > AND > implicit > OR.
* The implicit operator is ``default_operator``. With AND every clause of a
  run like ``+a -b c`` is required and ``-b``/``NOT b`` are negations. With
  OR the run follows Lucene's occurs: ``+`` clauses are required, ``-`` and
  ``NOT`` clauses excluded, and plain clauses are optional when a ``+``
  clause exists, otherwise at least one of them must match. An explicit
  ``OR`` is always a plain boolean OR.
* Field names resolve with ``Dataset.resolve`` and each value becomes the
  node its field calls for (ast.py).

Every error is a ``QueryError`` with a 0-based position in the string the
caller gave, or a ``LimitExceeded``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from cachetools import LRUCache, cached
from luqum import parser as luqum_parser
from luqum import tree as lt
from luqum.exceptions import IllegalCharacterError, ParseSyntaxError
from luqum.visitor import TreeVisitor

from seclake.errors import LimitExceeded, QueryError, ValidationFailed
from seclake.query import ast, datemath, pattern
from seclake.query.cost import parsed_bytes
from seclake.query.pattern import MAX_RANGE_BOUND
from seclake.query.limits import QueryLimits
from seclake.record.dataset import Dataset
from seclake.record.value import as_network, as_number, scalar_text, tokens
from seclake.record.jsontype import json_kind as _json_type

Operator = Literal["AND", "OR"]

# PLY keeps the failing parser state on the shared parser object; read it
# under the same lock so concurrent parses cannot swap it.
_LOCK = threading.Lock()
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_INT = re.compile(r"^[+-]?\d{1,18}$")


def parse(
    search_str: str | None,
    dataset: Dataset,
    *,
    default_operator: Operator = "AND",
    limits: QueryLimits | None = None,
    now_ms: int | None = None,
) -> ast.Node:
    """The query tree of ``search_str``; blank or None matches every record."""
    limits = limits or QueryLimits()
    if search_str is None:
        return ast.MatchAll()
    if not isinstance(search_str, str):
        raise QueryError(f"searchStr must be a string, not {type(search_str).__name__}")
    if default_operator not in ("AND", "OR"):
        raise ValueError(f"default_operator must be AND or OR, not {default_operator!r}")
    limits.check_length(search_str)
    if not search_str.strip():
        return ast.MatchAll()
    source, tree = _parsed(search_str)
    limits.check_depth(_depth(tree))
    builder = _Builder(dataset, default_operator, limits, now_ms, source)
    node = builder.build(tree)
    limits.check_clauses(builder.clauses)
    limits.check_memory(node)
    return node


# luqum's trees, kept by their estimated bytes: a 10 KB query text parses
# to about half a megabyte, so a count of entries bounds nothing.
_PARSED: LRUCache = LRUCache(maxsize=32 << 20, getsizeof=lambda parsed: parsed_bytes(parsed[0].original))


@cached(_PARSED, lock=threading.Lock())
def _parsed(search_str: str) -> tuple[_Source, lt.Item]:
    """luqum's tree of a query text, kept for the texts seen recently.

    Dashboards and paging send the same texts again and again, and luqum's
    parser is the slowest step of a small search (and runs under a lock).
    The tree is only read after this (by _Builder), so sharing it is safe;
    everything that depends on the dataset, limits or time is built anew.
    """
    source = _Source(search_str)
    return source, source.parse()


# -- source: rewriting and luqum errors -----------------------------------


class _Source:
    """The query as luqum sees it, and the way back to the caller's positions."""

    def __init__(self, original: str):
        self.original = original
        self.text, self._map = self._rewrite(original)

    def orig(self, pos: int | None) -> int | None:
        if pos is None:
            return None
        if pos >= len(self._map):
            return len(self.original)
        return self._map[pos]

    def _rewrite(self, text: str) -> tuple[str, list[int]]:
        out: list[str] = []
        where: list[int] = []
        done = 0
        for tok in _tokens(text):
            if tok.type == "APPROX":
                raise QueryError(
                    "fuzzy and proximity searches ('~') are not supported",
                    tok.lexpos,
                    "'\\~' to search for a literal '~'",
                )
            if tok.type == "BOOST" and tok.value.value is not None and not _is_decimal(tok.value.value):
                raise QueryError(f"bad boost '^{tok.value.value}'", tok.lexpos + 1, "a number after '^'")
            if tok.type != "TERM":
                continue
            raw = tok.value.value
            replacement = _operator_word(raw)
            if replacement is None:
                continue
            out.append(text[done : tok.lexpos])
            where.extend(range(done, tok.lexpos))
            for piece, offset in replacement:
                out.append(piece)
                where.extend([tok.lexpos + offset] * len(piece))
            done = tok.lexpos + len(raw)
        out.append(text[done:])
        where.extend(range(done, len(text)))
        return "".join(out), where

    def parse(self) -> lt.Item:
        lexer = luqum_parser.lexer.clone()
        with _LOCK:
            try:
                return luqum_parser.parser.parse(self.text, lexer=lexer)
            except ParseSyntaxError as exc:
                state = getattr(luqum_parser.parser, "state", None)
                expected_tokens = set(luqum_parser.parser.action.get(state, {})) if state is not None else set()
                stack = [getattr(sym, "type", None) for sym in getattr(luqum_parser.parser, "symstack", [])]
                if "RBRACKET" in expected_tokens and "TO" in expected_tokens and _inside_range_after_to(stack):
                    expected_tokens.discard("TO")  # the parser state is shared by both halves of a range
                raise self._syntax_error(str(exc), expected_tokens) from None
            except IllegalCharacterError as exc:  # pre-lexing normally catches these first
                raise QueryError(str(exc), self.orig(lexer.lexpos), None) from None
            except (ValueError, ArithmeticError, AssertionError, TypeError) as exc:
                raise QueryError(f"cannot parse the query ({exc})", None, None) from None

    def _syntax_error(self, message: str, expected_tokens: set[str]) -> QueryError:
        m = re.search(r"at position (\d+)!$", message)
        if m is None:  # luqum: "unexpected end of expression ... at the end"
            return QueryError("unexpected end of query", len(self.original), _describe(expected_tokens, True))
        pos = int(m.group(1))
        # Show the token as the caller wrote it ('||', not the 'OR' it became).
        start = self.orig(pos)
        lexer = luqum_parser.lexer.clone()
        lexer.input(self.original[start:])
        try:
            tok = lexer.token()
        except IllegalCharacterError:
            tok = None
        shown = _token_text(tok) or self.original[start : start + 1]
        if shown == ")" and "RPAREN" not in expected_tokens:
            return QueryError("')' without a matching '('", start, "a '(' before it, or '\\)' for a literal ')'")
        if shown == ":" and "TERM" in expected_tokens:
            return QueryError("unexpected ':'", start, "a value, or '\\:' for a literal ':'")
        what = f"unexpected '{shown}'"
        return QueryError(what, start, _describe(expected_tokens, False))


def _tokens(text: str) -> Iterator[Any]:
    lexer = luqum_parser.lexer.clone()
    lexer.input(text)
    while True:
        try:
            tok = lexer.token()
        except IllegalCharacterError:
            raise _illegal(text, lexer.lexpos) from None
        if tok is None:
            return
        yield tok


def _inside_range_after_to(stack: list[str | None]) -> bool:
    if "LBRACKET" not in stack:
        return False
    last_open = len(stack) - 1 - stack[::-1].index("LBRACKET")
    return "TO" in stack[last_open:]


def _illegal(text: str, pos: int) -> QueryError:
    c = text[pos]
    if c == '"':
        return QueryError("unclosed phrase", pos, "a closing '\"'")
    if c == "/":
        return QueryError("unclosed regular expression", pos, "a closing '/' (or '\\/' for a literal '/')")
    if c == "\\":
        return QueryError("'\\' at the end of the query", pos, "a character after '\\'")
    if c == "'":
        return QueryError("single quotes do not quote", pos, "double quotes, or '\\'' for a literal quote")
    return QueryError(f"unexpected character '{c}'", pos, f"'\\{c}' for a literal '{c}'")


def _operator_word(raw: str) -> list[tuple[str, int]] | None:
    """How a TERM token that is really an operator is rewritten, with source offsets."""
    if raw == "&&":
        return [("AND", 0)]
    if raw == "||":
        return [("OR", 0)]
    if raw.startswith("!"):
        bangs = len(raw) - len(raw.lstrip("!"))
        pieces = [("NOT ", i) for i in range(bangs)]
        if raw[bangs:]:
            pieces.append((raw[bangs:], bangs))
        return pieces
    return None


def _token_text(tok: Any) -> str:
    value = tok.value
    if isinstance(value, lt.Term):
        return value.value
    text = getattr(value, "value", None)
    return text if isinstance(text, str) else ""


def _is_decimal(text: str) -> bool:
    return re.fullmatch(r"\d+(\.\d*)?|\.\d+", text) is not None


_TERMLIKE = {"TERM", "PHRASE", "REGEX", "LPAREN", "LBRACKET", "NOT", "MINUS", "PLUS", "GREATERTHAN", "LESSTHAN"}


def _describe(expected: set[str], at_end: bool) -> str:
    """Human words for the tokens the LR parser could have accepted."""
    if not expected:
        return "a valid query"
    if expected <= {"RBRACKET"}:
        return "']' or '}' to close the range"
    if "RBRACKET" in expected and "TO" in expected:
        return "'TO'"
    if expected <= {"MINUS", "PHRASE", "TERM"}:
        return "a range bound (a value or '*')"
    words = []
    if "RPAREN" in expected:
        words.append("')'")
    if expected & _TERMLIKE:
        words.append("a term, phrase or '('" if not words else "a term")
    if "$end" in expected and not at_end:
        words.append("AND, OR or the end of the query")
    return " or ".join(words) if words else "a valid query"


def _depth(tree: lt.Item) -> int:
    # Iterative: a query of 8000 '(' must give LimitExceeded, not RecursionError.
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((child, d + 1) for child in node.children)
    return deepest


def _unescape(text: str) -> str:
    return _ESCAPE.sub(r"\1", text)


# -- tree building -----------------------------------------------------------


class _Builder(TreeVisitor):
    """luqum tree -> ast.Node; the context holds the field a value is under."""

    def __init__(self, dataset: Dataset, default_operator: Operator, limits: QueryLimits, now_ms, source):
        super().__init__()
        self.dataset = dataset
        self.default_operator = default_operator
        self.limits = limits
        self.now = datemath.now_ms() if now_ms is None else now_ms
        self.source = source
        self.clauses = 0

    def build(self, tree: lt.Item) -> ast.Node:
        return self.node(tree, {"field": None, "in_field": False})

    def node(self, item: lt.Item, context: dict) -> ast.Node:
        (result,) = self.visit_iter(item, context)
        return result

    def error(self, message: str, item: lt.Item | None, expected: str | None = None) -> QueryError:
        pos = self.source.orig(item.pos) if item is not None else None
        return QueryError(message, pos, expected)

    def leaf(self) -> None:
        self.clauses += 1
        if self.clauses > self.limits.max_clauses:
            raise LimitExceeded("number of query clauses", self.clauses, self.limits.max_clauses)

    def generic_visit(self, node, context):
        raise self.error(f"unsupported construct {type(node).__name__}", node)

    # boolean structure

    def visit_base_operation(self, node, context):
        operands: list[lt.Item] = []
        ops: list[str] = []
        _infix(node, operands, ops)
        yield self.combine(operands, ops, context)

    def combine(self, operands: list[lt.Item], ops: list[str], context: dict) -> ast.Node:
        # Split on explicit OR (lowest), then on the implicit operator, then AND.
        segments: list[list[list[lt.Item]]] = [[[operands[0]]]]
        for op, item in zip(ops, operands[1:]):
            if op == "OR":
                segments.append([[item]])
            elif op == "IMPLICIT":
                segments[-1].append([item])
            else:
                segments[-1][-1].append(item)
        return ast.or_(*(self.run(run, context) for run in segments))

    def run(self, run: list[list[lt.Item]], context: dict) -> ast.Node:
        """Clauses joined by the implicit operator; each clause is an AND chain."""
        if self.default_operator == "AND" or len(run) == 1:
            return ast.and_(*(self.node(item, context) for chain in run for item in chain))
        must: list[ast.Node] = []
        should: list[ast.Node] = []
        must_not: list[ast.Node] = []
        for chain in run:
            if len(chain) > 1:
                should.append(ast.and_(*(self.node(item, context) for item in chain)))
                continue
            item = chain[0]
            if isinstance(item, lt.Plus):
                must.append(self.node(item.a, context))
            elif isinstance(item, (lt.Prohibit, lt.Not)):
                must_not.append(self.node(item.a, context))
            else:
                should.append(self.node(item, context))
        negations = [ast.not_(n) for n in must_not]
        if must:
            return ast.and_(*must, *negations)
        if should:
            return ast.and_(ast.or_(*should), *negations)
        return ast.and_(*negations)

    def visit_plus(self, node, context):
        yield self.node(node.a, context)

    def visit_prohibit(self, node, context):
        yield ast.not_(self.node(node.a, context))

    def visit_not(self, node, context):
        yield ast.not_(self.node(node.a, context))

    def visit_base_group(self, node, context):
        yield self.node(node.expr, context)

    def visit_boost(self, node, context):
        # Boosts change scores; seclake sorts by fields, so they change nothing.
        yield self.node(node.expr, context)

    def visit_base_approx(self, node, context):
        raise self.error("fuzzy and proximity searches ('~') are not supported", node)

    # fields

    def visit_search_field(self, node, context):
        name = _unescape(node.name)
        if context["in_field"]:
            raise self.error(
                f"field '{name}' inside the value of another field",
                node,
                "a value; write '\\:' for a literal ':'",
            )
        if name == "_exists_":
            yield self.exists(node)
            return
        if name == "*":  # Elasticsearch's "all fields": the default field
            yield self.node(node.expr, {"field": None, "in_field": True})
            return
        if "*" in name or "?" in name:
            raise self.error(f"wildcards in field names ('{name}') are not supported", node, "a field name")
        path = self.dataset.resolve(name)
        yield self.node(node.expr, {"field": path, "in_field": True})

    def exists(self, node: lt.SearchField) -> ast.Node:
        expr = node.expr
        if isinstance(expr, lt.Word):
            name = _unescape(expr.value)
        elif isinstance(expr, lt.Phrase):
            name = _unescape(expr.value[1:-1])
        else:
            raise self.error("_exists_ takes one field name", expr, "a field name after '_exists_:'")
        if not name or "*" in name or "?" in name:
            raise self.error("_exists_ takes one field name, without wildcards", expr, "a field name")
        self.leaf()
        return ast.Exists(self.dataset.resolve(name))

    # values

    def visit_word(self, node, context):
        self.leaf()
        path = context["field"]
        raw = node.value
        wildcard = _wildcard_pattern(raw)
        if wildcard is None:
            yield self.term(path, _unescape(raw), node)
            return
        if set(wildcard) == {"*"}:  # '*' alone: anything / the field exists
            yield ast.Exists(path) if path is not None else ast.MatchAll()
            return
        self.limits.check_pattern("wildcard", wildcard)
        self.no_date(path, node, "wildcards")
        yield ast.Wildcard(path, wildcard)

    def visit_phrase(self, node, context):
        self.leaf()
        yield self.term(context["field"], _unescape(node.value[1:-1]), node)

    def visit_regex(self, node, context):
        self.leaf()
        path = context["field"]
        body = node.value[1:-1]
        self.limits.check_pattern("regex", body)
        self.no_date(path, node, "regular expressions")
        start = self.source.orig(node.pos)
        yield ast.Regex(path, pattern.translate(body, offset=(start or 0) + 1))

    def term(self, path: str | None, value: str, item: lt.Item) -> ast.Node:
        if path is None or self.dataset.is_text(path):
            return ast.Term(path, value) if tokens(value) else ast.MatchNone()
        if self.dataset.is_date(path):
            lo, hi = self.date_interval(value, item)
            return ast.Range(path, lo, hi, True, True, "number")
        network = as_network(value)
        if network is not None:
            return ast.Cidr(path, network)
        return ast.Term(path, value)

    def no_date(self, path: str | None, item: lt.Item, what: str) -> None:
        if path is not None and self.dataset.is_date(path):
            raise self.error(f"{what} are not supported on the date field {path}", item, "a date or a range")

    def date_interval(self, text: str, item: lt.Item) -> tuple[int, int]:
        try:
            return datemath.interval(text, self.now)
        except datemath.DateError as exc:
            raise self.error(str(exc), item, "a date: epoch ms, ISO 8601, or date math like now-1h/d") from None

    # ranges

    def visit_range(self, node, context):
        self.leaf()
        yield self.range(node, context, node.low, node.high, node.include_low, node.include_high)

    def visit_from(self, node, context):
        self.leaf()
        yield self.range(node, context, node.a, None, node.include, True)

    def visit_to(self, node, context):
        self.leaf()
        yield self.range(node, context, None, node.a, True, node.include)

    def range(self, node, context, low, high, include_lo: bool, include_hi: bool) -> ast.Node:
        path = context["field"]
        if path is None:
            raise self.error("a range needs a field", node, "field:[a TO b] or field:>=a")
        if self.dataset.is_text(path):
            raise self.error(f"ranges are not supported on the text field {path}", node, "a keyword, number or date field")
        lo_text = self.bound_text(low)
        hi_text = self.bound_text(high)
        if lo_text is None and hi_text is None:
            return ast.Exists(path)
        if self.dataset.is_date(path):
            lo = hi = None
            try:
                if lo_text is not None:
                    lo = datemath.bound(lo_text, self.now, lower=True, inclusive=include_lo)
                if hi_text is not None:
                    hi = datemath.bound(hi_text, self.now, lower=False, inclusive=include_hi)
            except datemath.DateError as exc:
                bad = low if lo_text is not None and lo is None else high
                raise self.error(str(exc), bad, "a date: epoch ms, ISO 8601, or date math like now-1h/d") from None
            return ast.Range(path, lo, hi, include_lo, include_hi, "number")
        given = [t for t in (lo_text, hi_text) if t is not None]
        if all(as_number(t) is not None for t in given):
            return ast.Range(path, _number(lo_text), _number(hi_text), include_lo, include_hi, "number")
        for item, text in ((low, lo_text), (high, hi_text)):
            if text is not None and len(text) > MAX_RANGE_BOUND:
                raise self.error(f"a string range bound of more than {MAX_RANGE_BOUND} characters", item,
                                 "a shorter bound")
        return ast.Range(
            path,
            lo_text.lower() if lo_text is not None else None,
            hi_text.lower() if hi_text is not None else None,
            include_lo,
            include_hi,
            "string",
        )

    def bound_text(self, item: lt.Item | None) -> str | None:
        if item is None:
            return None
        if isinstance(item, lt.Prohibit):  # luqum reads "-5" in a range as "NOT 5"
            inner = self.bound_text(item.a)
            return None if inner is None else "-" + inner
        if isinstance(item, lt.Phrase):
            return _unescape(item.value[1:-1])
        if item.value == "*":
            return None
        if _wildcard_pattern(item.value) is not None:
            raise self.error("wildcards are not allowed in range bounds", item, "a value or '*'")
        return _unescape(item.value)


def _infix(node: lt.Item, operands: list[lt.Item], ops: list[str]) -> None:
    """In-order operands and operators of a chain of AND/OR/implicit operations."""
    op = "AND" if isinstance(node, lt.AndOperation) else "OR" if isinstance(node, lt.OrOperation) else "IMPLICIT"
    for i, child in enumerate(node.children):
        if i:
            ops.append(op)
        if isinstance(child, lt.BaseOperation):
            _infix(child, operands, ops)
        else:
            operands.append(child)


def _wildcard_pattern(raw: str) -> str | None:
    """The Lucene-escaped, lowercased wildcard pattern of a word, or None if it has none."""
    out: list[str] = []
    wild = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            literal = raw[i + 1]
            out.append("\\" + literal if literal in "*?\\" else literal)
            i += 2
            continue
        if c in "*?":
            wild = True
        out.append(c)
        i += 1
    return "".join(out).lower() if wild else None


def _number(text: str | None) -> int | float | None:
    if text is None:
        return None
    if _INT.match(text.strip()):
        return int(text)
    return as_number(text)


# -- facet filters -----------------------------------------------------------

MAX_FILTERS = 256
MAX_FIELD_LENGTH = 512


def parse_filters(
    must_filters: Sequence[Mapping[str, Any]] | None,
    must_not_filters: Sequence[Mapping[str, Any]] | None,
    dataset: Dataset,
    *,
    limits: QueryLimits | None = None,
    where: str = "options.facets",
) -> ast.Node:
    """The facet filters as one tree: every must entry, no must-not entry.

    An entry ``{field, terms}`` matches when the field equals any term by the
    keyword and number rules (``"0"`` matches 0; on a text field a term is a
    token/phrase match). An entry with no terms matches nothing. Shapes are
    checked here, since they come straight from the request body.
    """
    limits = limits or QueryLimits()
    must = _filter_entries(must_filters, f"{where}.mustFilters", dataset, limits)
    must_not = _filter_entries(must_not_filters, f"{where}.mustNotFilters", dataset, limits)
    count = sum(len(e.children) if isinstance(e, ast.Or) else 1 for e in must + must_not)
    limits.check_clauses(count)
    return ast.and_(*must, *(ast.not_(e) for e in must_not))


def _filter_entries(entries: Any, where: str, dataset: Dataset, limits: QueryLimits) -> list[ast.Node]:
    if entries is None:
        return []
    if not isinstance(entries, (list, tuple)):
        raise ValidationFailed(where, f"must be an array, not {_json_type(entries)}")
    if len(entries) > MAX_FILTERS:
        raise ValidationFailed(where, f"has {len(entries)} entries, at most {MAX_FILTERS} are accepted")
    return [_filter_entry(entry, f"{where}[{i}]", dataset, limits) for i, entry in enumerate(entries)]


def _filter_entry(entry: Any, where: str, dataset: Dataset, limits: QueryLimits) -> ast.Node:
    if not isinstance(entry, Mapping):
        raise ValidationFailed(where, f"must be an object with field and terms, not {_json_type(entry)}")
    field = entry.get("field")
    if not isinstance(field, str) or not field.strip():
        raise ValidationFailed(f"{where}.field", "must be a non-empty string")
    if len(field) > MAX_FIELD_LENGTH:
        raise ValidationFailed(f"{where}.field", f"is {len(field)} characters long, at most {MAX_FIELD_LENGTH}")
    terms = entry.get("terms")
    if not isinstance(terms, (list, tuple)):
        raise ValidationFailed(f"{where}.terms", f"must be an array, not {_json_type(terms)}")
    if len(terms) > limits.max_clauses:
        raise ValidationFailed(f"{where}.terms", f"has {len(terms)} terms, at most {limits.max_clauses}")
    path = dataset.resolve(field)
    nodes = []
    for i, term in enumerate(terms):
        if isinstance(term, float) and as_number(term) is None:
            raise ValidationFailed(f"{where}.terms[{i}]", "must be a finite number")
        if not isinstance(term, (str, int, float, bool)):
            raise ValidationFailed(f"{where}.terms[{i}]", f"must be a string, number or boolean, not {_json_type(term)}")
        text = scalar_text(term)
        if len(text) > limits.max_query_length:
            raise ValidationFailed(
                f"{where}.terms[{i}]", f"is {len(text)} characters long, at most {limits.max_query_length}"
            )
        if dataset.is_text(path):
            nodes.append(ast.Term(path, text) if tokens(text) else ast.MatchNone())
        else:
            nodes.append(ast.Term(path, text))
    return ast.or_(*nodes)


