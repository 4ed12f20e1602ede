"""The commands after the search head: text -> tree (``seclake.analytics.tree``).

Parsed by lark's LALR parser with a contextual lexer: a keyword is a keyword
only where the grammar accepts one (a field may be named ``first`` or ``d``
except right where ``NULLS FIRST`` or a time unit may stand), and the tree is
built bottom-up while parsing (an inline transformer), so no step recurses
on the query's depth; the depth is bounded as it is built. Errors are
``QueryError`` with the offset in the whole query and what was expected.
"""

from __future__ import annotations

import re
import threading

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.visitors import Transformer

from seclake.analytics import tree as t
from seclake.errors import LimitExceeded, QueryError

MAX_DEPTH = 64


def _kw(word: str, priority: int = 3) -> str:
    return f"{word}.{priority}: /(?i:{word.lower()})(?![A-Za-z0-9_@.`])/"


_KEYWORDS = (
    "WHERE EVAL STATS SORT LIMIT KEEP DROP RENAME BY AS ASC DESC NULLS FIRST LAST "
    "AND OR NOT IS NULL IN LIKE RLIKE TRUE FALSE"
).split()

_UNITS = {
    "millisecond": 1, "milliseconds": 1, "ms": 1,
    "second": 1000, "seconds": 1000, "sec": 1000, "s": 1000,
    "minute": 60_000, "minutes": 60_000, "min": 60_000, "m": 60_000,
    "hour": 3_600_000, "hours": 3_600_000, "h": 3_600_000,
    "day": 86_400_000, "days": 86_400_000, "d": 86_400_000,
    "week": 7 * 86_400_000, "weeks": 7 * 86_400_000, "w": 7 * 86_400_000,
    "month": 0, "months": 0, "mo": 0,
    "quarter": 0, "quarters": 0, "q": 0,
    "year": 0, "years": 0, "y": 0,
}
_MONTHS = {"month": 1, "months": 1, "mo": 1, "quarter": 3, "quarters": 3, "q": 3, "year": 12, "years": 12, "y": 12}

GRAMMAR = r"""
start: ("|" command)+

?command: where_cmd | eval_cmd | stats_cmd | sort_cmd | limit_cmd | keep_cmd | drop_cmd | rename_cmd

where_cmd: WHERE expr
eval_cmd: EVAL named ("," named)*
stats_cmd: STATS [stats_item ("," stats_item)*] [BY group_list]
stats_item: named
          | named WHERE expr -> filtered
group_list: named ("," named)*
sort_cmd: SORT sort_key ("," sort_key)*
sort_key: expr [direction] [nulls]
direction: ASC | DESC
nulls: NULLS FIRST -> nulls_first
     | NULLS LAST -> nulls_last
limit_cmd: LIMIT INT
keep_cmd: KEEP name_pattern ("," name_pattern)*
drop_cmd: DROP name_pattern ("," name_pattern)*
rename_cmd: RENAME rename_pair ("," rename_pair)*
rename_pair: name_pattern AS name_pattern
name_pattern: NAME | QUOTED_NAME | NAME_PATTERN

named: NAME "=" expr -> assigned
     | QUOTED_NAME "=" expr -> assigned
     | expr -> unnamed

?expr: or_expr
?or_expr: and_expr
        | or_expr OR and_expr -> or_
?and_expr: not_expr
         | and_expr AND not_expr -> and_
?not_expr: predicate
         | NOT not_expr -> not_
?predicate: arith
          | arith "==" arith -> eq
          | arith "!=" arith -> ne
          | arith "<" arith -> lt
          | arith "<=" arith -> le
          | arith ">" arith -> gt
          | arith ">=" arith -> ge
          | arith IS NULL -> is_null
          | arith IS NOT NULL -> is_not_null
          | arith IN "(" expr ("," expr)* ")" -> in_
          | arith NOT IN "(" expr ("," expr)* ")" -> not_in
          | arith LIKE STRING -> like
          | arith NOT LIKE STRING -> not_like
          | arith RLIKE STRING -> rlike
          | arith NOT RLIKE STRING -> not_rlike
?arith: term
      | arith "+" term -> add
      | arith "-" term -> sub
?term: unary
     | term "*" unary -> mul
     | term "/" unary -> div
     | term "%" unary -> mod
?unary: atom
      | "-" unary -> neg
      | "+" unary
?atom: literal
     | NAME -> field
     | QUOTED_NAME -> field
     | NAME "(" ")" -> call
     | NAME "(" expr ("," expr)* ")" -> call
     | NAME "(" STAR ")" -> call_star
     | "(" expr ")" -> paren
?literal: STRING -> string
        | INT -> integer
        | DECIMAL -> decimal
        | TRUE -> true
        | FALSE -> false
        | NULL -> null
        | INT TIME_UNIT -> duration

STAR: "*"
NAME: /[A-Za-z_@][A-Za-z0-9_@.]*/
NAME_PATTERN.2: /[A-Za-z0-9_@.]*\*[A-Za-z0-9_@.*]*/
QUOTED_NAME: /`(?:[^`\x00]|``)+`/
STRING: /"(?:[^"\\\n]|\\.)*"/
DECIMAL.2: /[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+/
INT: /[0-9]+/
TIME_UNIT.3: /(?i:milliseconds?|ms|seconds?|sec|s|minutes?|min|m|hours?|h|days?|d|weeks?|w|months?|mo|quarters?|q|years?|y)(?![A-Za-z0-9_@.`])/

%ignore /[ \t\r\n\f\v]+/
""" + "\n".join(_kw(k) for k in _KEYWORDS)

# Terminal names -> what a person would type, for "expected ..." messages.
_SHOWN = {
    "NAME": "a name", "QUOTED_NAME": "a `quoted name`", "NAME_PATTERN": "a name pattern",
    "STRING": 'a "string"', "INT": "an integer", "DECIMAL": "a number", "TIME_UNIT": "a time unit (hour, day...)",
    "STAR": "'*'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "EQUAL": "'='", "VBAR": "'|'",
    "PLUS": "'+'", "MINUS": "'-'", "SLASH": "'/'", "PERCENT": "'%'", "LESSTHAN": "'<'", "MORETHAN": "'>'",
    "__ANON_0": "'=='", "__ANON_1": "'!='", "__ANON_2": "'<='", "__ANON_3": "'>='",
}


def _shown(name: str) -> str:
    if name == "$END":
        return "the end of the query"
    if name in _SHOWN:
        return _SHOWN[name]
    if name in _KEYWORDS:
        return name
    return name.lower()


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)", re.S)  # our own pattern, over a bounded string: linear


def _unquote(token: Token) -> str:
    body = token.value[1:-1]

    def one(m: re.Match) -> str:
        c = m.group(1)
        if c in _ESCAPES:
            return _ESCAPES[c]
        if c in "*?":
            return "\\" + c  # kept for LIKE, where '\*' is a literal '*'
        return c

    return _ESCAPE.sub(one, body)


def _name(token: Token) -> str:
    if token.type == "QUOTED_NAME":
        return token.value[1:-1].replace("``", "`")
    return token.value


class _Builder(Transformer):
    """Callbacks run by the parser as it reduces: children are built already."""

    def __init__(self, text: str, offset: int):
        super().__init__()
        self.text = text
        self.offset = offset
        self.depths: dict[int, int] = {}

    # positions -------------------------------------------------------------
    def _span(self, items) -> tuple[int, int]:
        starts, ends = [], []
        for x in items:
            if isinstance(x, Token):
                starts.append(x.start_pos + self.offset)
                ends.append(x.end_pos + self.offset)
            elif isinstance(x, t.Expr):
                starts.append(x.pos)
                ends.append(x.end)
        return min(starts), max(ends)

    def _node(self, cls, items, *args, **kw):
        pos, end = self._span(items)
        # Parentheses and a leading '-' reach outside the children's span.
        depth = 1 + max((self.depths.get(id(x), 0) for x in items if isinstance(x, t.Expr)), default=0)
        if depth > MAX_DEPTH:
            raise LimitExceeded("expression nesting depth", depth, MAX_DEPTH)
        node = cls(*args, pos=pos, end=end, **kw)
        self.depths[id(node)] = depth
        return node

    # literals --------------------------------------------------------------
    def string(self, items):
        return self._node(t.Literal, items, _unquote(items[0]))

    def integer(self, items):
        value = int(items[0].value)
        if value >= 2**63:
            raise QueryError(f"integer {items[0].value} is out of range", items[0].start_pos + self.offset, "a number below 2^63")
        return self._node(t.Literal, items, value)

    def decimal(self, items):
        value = float(items[0].value)
        if value in (float("inf"),):
            raise QueryError(f"number {items[0].value} is out of range", items[0].start_pos + self.offset, None)
        return self._node(t.Literal, items, value)

    def true(self, items):
        return self._node(t.Literal, items, True)

    def false(self, items):
        return self._node(t.Literal, items, False)

    def null(self, items):
        return self._node(t.Literal, items, None)

    def duration(self, items):
        count, unit = int(items[0].value), items[1].value.lower()
        if count > 1_000_000:
            raise QueryError(f"time span {count} {unit} is too long", items[0].start_pos + self.offset, "at most 1000000 units")
        if unit in _MONTHS:
            span = t.Duration(months=count * _MONTHS[unit])
        else:
            span = t.Duration(ms=count * _UNITS[unit], week=_UNITS[unit] == 7 * 86_400_000)
        if span.ms == 0 and span.months == 0:
            raise QueryError("a time span of zero", items[0].start_pos + self.offset, "a positive span")
        return self._node(t.Literal, items, span)

    # expressions -----------------------------------------------------------
    def field(self, items):
        return self._node(t.Field, items, _name(items[0]))

    def call(self, items):
        name = items[0].value.upper()
        args = tuple(x for x in items[1:] if isinstance(x, t.Expr))
        node = self._node(t.Call, items, name, args)
        return self._close(node, ")")

    def call_star(self, items):
        node = self._node(t.Call, items, items[0].value.upper(), (), star=True)
        return self._close(node, ")")

    def _close(self, node, char: str):
        # The closing ')' is an anonymous token the tree does not keep: the
        # node's text runs to it.
        end = node.end
        rest = self.text[end - self.offset :]
        k = 0
        while k < len(rest) and rest[k].isspace():
            k += 1
        if k < len(rest) and rest[k] == char:
            depth = self.depths.pop(id(node))
            node = type(node)(**{**node.__dict__, "end": end + k + 1})
            self.depths[id(node)] = depth
        return node

    def neg(self, items):
        operand = items[-1]
        node = self._node(t.Unary, items, "-", operand)
        return self._extend_left(node, "-")

    def _extend_left(self, node, char: str):
        # The '-' is anonymous: find it before the operand.
        start = node.pos - self.offset - 1
        while start >= 0 and self.text[start].isspace():
            start -= 1
        if start >= 0 and self.text[start] == char:
            depth = self.depths.pop(id(node))
            node = type(node)(**{**node.__dict__, "pos": start + self.offset})
            self.depths[id(node)] = depth
        return node

    def paren(self, items):
        node = items[0]
        left = node.pos - self.offset - 1
        while left >= 0 and self.text[left] != "(":
            left -= 1
        right = node.end - self.offset
        while right < len(self.text) and self.text[right] != ")":
            right += 1
        depth = self.depths.pop(id(node), 1)
        node = type(node)(**{**node.__dict__, "pos": max(left, 0) + self.offset, "end": right + 1 + self.offset})
        self.depths[id(node)] = depth
        return node

    def not_(self, items):
        return self._node(t.Unary, items, "NOT", items[-1])

    def _binary(op):
        def build(self, items):
            exprs = [x for x in items if isinstance(x, t.Expr)]
            return self._node(t.Binary, items, op, exprs[0], exprs[1])

        return build

    add, sub, mul, div, mod = _binary("+"), _binary("-"), _binary("*"), _binary("/"), _binary("%")
    eq, ne, lt, le, gt, ge = _binary("=="), _binary("!="), _binary("<"), _binary("<="), _binary(">"), _binary(">=")
    and_, or_ = _binary("AND"), _binary("OR")

    def is_null(self, items):
        return self._node(t.IsNull, items, items[0], False)

    def is_not_null(self, items):
        return self._node(t.IsNull, items, items[0], True)

    def _in(self, items, negated):
        exprs = [x for x in items if isinstance(x, t.Expr)]
        return self._close(self._node(t.In, items, exprs[0], tuple(exprs[1:]), negated), ")")

    def in_(self, items):
        return self._in(items, False)

    def not_in(self, items):
        return self._in(items, True)

    def _like(self, items, negated, regex):
        pattern = items[-1]
        return self._node(t.Like, items, items[0], _unquote(pattern) if not regex else _unquote_regex(pattern),
                          pattern.start_pos + self.offset + 1, negated, regex)

    def like(self, items):
        return self._like(items, False, False)

    def not_like(self, items):
        return self._like(items, True, False)

    def rlike(self, items):
        return self._like(items, False, True)

    def not_rlike(self, items):
        return self._like(items, True, True)

    # commands --------------------------------------------------------------
    def assigned(self, items):
        return t.Named(_name(items[0]), items[1], items[0].start_pos + self.offset)

    def unnamed(self, items):
        expr = items[0]
        return t.Named(self.text[expr.pos - self.offset : expr.end - self.offset].strip(), expr, expr.pos)

    def where_cmd(self, items):
        return t.Where(items[1], pos=items[0].start_pos + self.offset)

    def eval_cmd(self, items):
        return t.Eval(tuple(items[1:]), pos=items[0].start_pos + self.offset)

    def group_list(self, items):
        return tuple(items)

    def stats_item(self, items):
        return items[0]

    def filtered(self, items):
        named, condition = items[0], items[2]
        name = named.name
        if named.pos == named.expr.pos:  # unnamed: its whole text, condition included (ES|QL)
            name = self.text[named.pos - self.offset : condition.end - self.offset].strip()
        return t.Named(name, named.expr, named.pos, where=condition)

    def stats_cmd(self, items):
        named = tuple(x for x in items[1:] if isinstance(x, t.Named))
        groups = next((x for x in items[1:] if isinstance(x, tuple)), ())
        return t.Stats(named, groups, pos=items[0].start_pos + self.offset)

    def direction(self, items):
        return items[0].type == "DESC"

    def nulls_first(self, items):
        return ("nulls", True)

    def nulls_last(self, items):
        return ("nulls", False)

    def sort_key(self, items):
        expr, direction, nulls = items
        descending = bool(direction)
        # ES|QL: nulls are larger than any value (last ascending, first descending).
        nulls_first = nulls[1] if nulls is not None else descending
        return t.SortKey(expr, descending, nulls_first)

    def sort_cmd(self, items):
        return t.Sort(tuple(items[1:]), pos=items[0].start_pos + self.offset)

    def limit_cmd(self, items):
        return t.Limit(int(items[1].value) if len(items[1].value) < 19 else 2**63, pos=items[0].start_pos + self.offset)

    def name_pattern(self, items):
        return t.NamePattern(_name(items[0]), items[0].start_pos + self.offset)

    def keep_cmd(self, items):
        return t.Keep(tuple(items[1:]), pos=items[0].start_pos + self.offset)

    def drop_cmd(self, items):
        return t.Drop(tuple(items[1:]), pos=items[0].start_pos + self.offset)

    def rename_pair(self, items):
        return (items[0], items[2])

    def rename_cmd(self, items):
        return t.Rename(tuple(items[1:]), pos=items[0].start_pos + self.offset)

    def start(self, items):
        return list(items)


def _unquote_regex(token: Token) -> str:
    # A regex keeps its backslashes (they are the regex's escapes); only \" is the string's.
    return token.value[1:-1].replace('\\"', '"')


_lock = threading.Lock()
_builder = _Builder("", 0)
_parser: Lark | None = None


def commands(text: str, offset: int) -> list[t.Command]:
    """The commands of ``text`` (which starts with the first ``|``);
    ``offset`` is where ``text`` starts in the whole query."""
    global _parser
    # An inline transformer is bound to its parser when the parser is built
    # (~100 ms), so one parser and one builder serve every call, the
    # builder told the text under a lock (a parse takes well under 1 ms).
    with _lock:
        if _parser is None:
            _parser = Lark(GRAMMAR, parser="lalr", lexer="contextual", transformer=_builder, maybe_placeholders=True)
        _builder.text, _builder.offset, _builder.depths = text, offset, {}
        try:
            return _parser.parse(text)
        except UnexpectedInput as exc:
            raise _syntax_error(exc, text, offset) from None
        finally:
            _builder.text, _builder.depths = "", {}


def _syntax_error(exc: UnexpectedInput, text: str, offset: int) -> QueryError:
    if isinstance(exc, UnexpectedEOF):
        expected = sorted({_shown(n) for n in exc.expected})
        return QueryError("unexpected end of query", offset + len(text), _one_of(expected))
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            expected = sorted({_shown(n) for n in exc.expected})
            return QueryError("unexpected end of query", offset + len(text), _one_of(expected))
        expected = sorted({_shown(n) for n in exc.accepts or exc.expected})
        hint = _one_of(expected)
        if tok.value == "=" and "'=='" in expected:
            hint = "'==' to compare (a single '=' names a column in EVAL and STATS)"
        return QueryError(f"unexpected '{tok.value[:40]}'", offset + tok.start_pos, hint)
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream
        expected = sorted({_shown(n) for n in exc.allowed or ()})
        what = text[pos : pos + 1]
        if what == '"':
            return QueryError("unclosed string", offset + pos, 'a closing \'"\'')
        if what == "`":
            close = text.find("`", pos + 1)
            if "\x00" in text[pos : close if close > 0 else len(text)]:
                return QueryError("a name may not hold the NUL character", offset + pos, None)
            return QueryError("unclosed `quoted name`", offset + pos, "a closing '`'")
        return QueryError(f"unexpected '{what}'", offset + pos, _one_of(expected))
    return QueryError(str(exc), offset, None)


_EXPRESSION_START = {"a name", "a number", 'a "string"', "an integer"}


def _one_of(expected: list[str]) -> str | None:
    if _EXPRESSION_START <= set(expected):
        rest = [e for e in expected if e not in _EXPRESSION_START and e not in ("NOT", "TRUE", "FALSE", "NULL", "'('", "'-'", "'+'", "a `quoted name`")]
        expected = ["an expression", *rest]
    if not expected:
        return None
    if len(expected) > 12:
        return ", ".join(expected[:12]) + "..."
    return expected[0] if len(expected) == 1 else "one of " + ", ".join(expected)
