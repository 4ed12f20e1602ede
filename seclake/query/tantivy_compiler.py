"""Compile a query tree into a tantivy query for one split.

One method per node kind (sqlglot style). Splits are immutable and each has
its own field map (seclake/storage/fieldmap.py), so a tree is compiled once
per split it is searched in. A path that a split has no typed field for
matches nothing there, which is the truth for that split.

Some nodes Sigma rules need cannot be answered from the index alone: it
holds keywords lowercased and text as lowercased tokens, so a case-sensitive
match (``cased``), an RE2 search over a whole value (``Regex`` flavor re2), a
substring across the tokens of a text value or of any value (``Contains`` on
a text path or the default field) and a comparison of two fields
(``FieldRef``) are compiled to a *superset* of their records (the uncased
match, the tokens the substring must hold, the fields' existence), and a
subset where they sit under a negation (nothing: NOT nothing is everything),
so the whole query compiles to a superset of its answer. ``needs_records``
says so, and the leaf (``search/leaf.py``) reads the candidates' records and
keeps those the matcher (the reference meaning) accepts.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import tantivy
from tantivy import FieldType, Occur, Query

from seclake.errors import QueryError
from seclake.query import ast
from seclake.query.cost import NODE_BYTES, pattern_bytes
from seclake.query.matcher import contains_wildcard
from seclake.query.pattern import range_regex
from seclake.record.dataset import Dataset
from seclake.record.value import as_number, keyword, tokens
from seclake.storage.fieldmap import SEP, cut
from seclake.storage.split import Split


def rx_escape(text: str) -> str:
    """Escape for the regex dialect shared by Rust's regex crate and Python's re.

    Every ASCII character that is not a letter or digit becomes ``\\xHH``:
    Rust rejects some backslash escapes (``\\<`` is an assertion there).
    """
    return "".join(c if c.isalnum() or ord(c) > 127 else f"\\x{ord(c):02x}" for c in text)


class TantivyCompiler:
    def __init__(self, split: Split, dataset: Dataset):
        self.split = split
        self.schema = split.schema
        self.fields = split.fields
        self.dataset = dataset
        # Memory of what was compiled (``query.cost``): one automaton per
        # pattern *and field searched*, which the query text cannot tell.
        self.cost = 0
        # False under an odd number of negations: an inexact node then
        # compiles to a subset of its records (see the module's doc).
        self.positive = True

    def compile(self, node: ast.Node) -> Query:
        self.cost += NODE_BYTES
        method: Callable[[ast.Node], Query] = getattr(self, "_" + type(node).__name__)
        return method(node)

    # -- leaves ---------------------------------------------------------

    def _MatchAll(self, node: ast.MatchAll) -> Query:
        return Query.all_query()

    def _MatchNone(self, node: ast.MatchNone) -> Query:
        return Query.empty_query()

    def _text_fields(self, path: str | None) -> tuple[str, ...]:
        """The index fields holding the text of ``path`` (None: the default field)."""
        if path is None:
            return self.split.default_fields()
        field = self.fields.texts.get(path)
        return (field,) if field is not None else ()

    @staticmethod
    def _any(queries: list[Query]) -> Query:
        if not queries:
            return Query.empty_query()
        if len(queries) == 1:
            return queries[0]
        return Query.boolean_query([(Occur.Should, q) for q in queries])

    def _Term(self, node: ast.Term) -> Query:
        if node.cased:
            if not self.positive:
                return Query.empty_query()
            node = ast.Term(node.path, node.value)  # the uncased match holds every cased one
        path = node.path
        if path is not None and path == self.dataset.time_field:
            number = as_number(node.value)
            if number is None:
                return Query.empty_query()
            return Query.range_query(self.schema, "ts", FieldType.Integer, int(number), int(number))
        if path is None or self.dataset.is_text(path):
            toks = tokens(node.value)
            if not toks:
                return Query.empty_query()
            if len(toks) == 1:
                return self._any([Query.term_query(self.schema, f, toks[0]) for f in self._text_fields(path)])
            return self._any([Query.phrase_query(self.schema, f, toks) for f in self._text_fields(path)])
        return Query.term_query(self.schema, "kw", cut(path + SEP + keyword(node.value)))

    def _pattern_query(self, path: str | None, regex: str) -> Query:
        """A regex over whole keyword values, or over single tokens of text."""
        if path is None or self.dataset.is_text(path):
            return self._any([self._regex(f, f"(?i:{regex})", path) for f in self._text_fields(path)])
        pattern = rx_escape(path + SEP) + f"(?i:{regex})"
        return self._any([self._regex(f, pattern, path) for f in self.split.keyword_fields()])

    def _regex(self, field: str, pattern: str, path: str | None) -> Query:
        self.cost += pattern_bytes(pattern)
        try:
            return Query.regex_query(self.schema, field, pattern)
        except ValueError as e:
            # The engine bounds the automaton a pattern compiles to; say so
            # instead of failing the whole search as an unexpected fault.
            where = f" on {path}" if path else ""
            raise QueryError(f"the pattern{where} is too complex to run ({str(e)[:160]})") from None

    def _Wildcard(self, node: ast.Wildcard) -> Query:
        if node.cased:
            if not self.positive:
                return Query.empty_query()
            node = ast.Wildcard(node.path, node.pattern.lower())
        return self._pattern_query(node.path, node.regex())

    def _Regex(self, node: ast.Regex) -> Query:
        if node.flavor == "re2":
            if not self.positive:
                return Query.empty_query()
            return self._present(node.path)
        return self._pattern_query(node.path, node.pattern)

    def _Contains(self, node: ast.Contains) -> Query:
        path = node.path
        keyword_path = path is not None and not self.dataset.is_text(path)
        if keyword_path and not node.cased:
            return self._Wildcard(contains_wildcard(node))  # exact: a keyword's terms hold the value's text
        if not self.positive:
            return Query.empty_query()
        if keyword_path:
            return self._Wildcard(contains_wildcard(ast.Contains(path, node.value)))
        # A substring of one value's text holds the substring's inner tokens
        # whole, its first token as the end of one, its last as the start of
        # one (the tokens a text field indexes).
        toks = tokens(node.value)
        if not toks:
            return self._present(path)
        if len(toks) == 1:
            return self._Wildcard(ast.Wildcard(path, f"*{toks[0]}*"))
        parts = [ast.Wildcard(path, f"*{toks[0]}"), *(ast.Term(path, t) for t in toks[1:-1]),
                 ast.Wildcard(path, f"{toks[-1]}*")]
        return Query.boolean_query([(Occur.Must, self.compile(part)) for part in parts])

    def _FieldRef(self, node: ast.FieldRef) -> Query:
        if not self.positive:
            return Query.empty_query()
        return Query.boolean_query(
            [(Occur.Must, self.split.exists_query(node.path)), (Occur.Must, self.split.exists_query(node.other))]
        )

    def _present(self, path: str | None) -> Query:
        """Every record holding ``path`` (None: every record)."""
        return Query.all_query() if path is None else self.split.exists_query(path)

    def _Exists(self, node: ast.Exists) -> Query:
        return self.split.exists_query(node.path)

    def _Cidr(self, node: ast.Cidr) -> Query:
        field = self.fields.ips.get(node.path)
        if field is None:
            return Query.empty_query()
        net = node.network
        return Query.range_query(
            self.schema, field, FieldType.IpAddr, str(net.network_address), str(net.broadcast_address)
        )

    def _Range(self, node: ast.Range) -> Query:
        if node.lo is None and node.hi is None:
            return self._Exists(ast.Exists(node.path))
        if node.kind == "number":
            return self._number_range(node)
        return self._string_range(node)

    def _number_range(self, node: ast.Range) -> Query:
        lo = float(node.lo) if node.lo is not None else None
        hi = float(node.hi) if node.hi is not None else None
        if lo is not None and hi is not None and (lo > hi or (lo == hi and not (node.include_lo and node.include_hi))):
            return Query.empty_query()
        if node.path == self.dataset.time_field:
            # ts holds integers: turn fractional and exclusive bounds into inclusive integers.
            ilo = None if lo is None else (int(lo) + 1 if not node.include_lo and lo.is_integer() else math.ceil(lo))
            ihi = None if hi is None else (int(hi) - 1 if not node.include_hi and hi.is_integer() else math.floor(hi))
            if ilo is not None and ihi is not None and ilo > ihi:
                return Query.empty_query()
            return Query.range_query(self.schema, "ts", FieldType.Integer, ilo, ihi)
        field = self.fields.numbers.get(node.path)
        if field is None:
            return Query.empty_query()
        return Query.range_query(
            self.schema,
            field,
            FieldType.Float,
            lo,
            hi,
            include_lower=node.include_lo if lo is not None else True,
            include_upper=node.include_hi if hi is not None else True,
        )

    def _string_range(self, node: ast.Range) -> Query:
        # tantivy has no range over string terms: a regex (an automaton run
        # over the term dictionary) matches exactly the keyword values in the
        # range. Expanding the matching terms into a list needed a limit, and
        # that limit, counted over every customer's terms, told a restricted
        # caller about values it may not see.
        lo = str(node.lo).lower() if node.lo is not None else None
        hi = str(node.hi).lower() if node.hi is not None else None
        inside = range_regex(lo, hi, node.include_lo, node.include_hi)
        if inside is None:
            return Query.empty_query()
        pattern = rx_escape(node.path + SEP) + f"(?:{inside})"
        return self._any([self._regex(f, pattern, node.path) for f in self.split.keyword_fields()])

    # -- boolean --------------------------------------------------------

    def _covers_split(self, node: ast.Node) -> bool:
        """Whether ``node`` matches every record of this split without a look.

        The root ANDs the request's time range into every query, and most
        splits lie wholly inside it: leaving that clause out saves a range
        scan over every candidate, which is most of a match-all search.
        """
        if isinstance(node, ast.MatchAll):
            return True
        if not (isinstance(node, ast.Range) and node.path == self.dataset.time_field and node.kind == "number"):
            return False
        meta = self.split.meta
        lo_ok = node.lo is None or node.lo < meta.time_min or (node.include_lo and node.lo == meta.time_min)
        hi_ok = node.hi is None or node.hi > meta.time_max or (node.include_hi and node.hi == meta.time_max)
        return lo_ok and hi_ok

    def _And(self, node: ast.And) -> Query:
        children = [c for c in node.children if not self._covers_split(c)]
        if not children:
            return Query.all_query()
        if len(children) == 1 and not isinstance(children[0], ast.Not):
            return self.compile(children[0])
        clauses = []
        for child in children:
            if isinstance(child, ast.Not):
                clauses.append((Occur.MustNot, self._negated(child.child)))
            else:
                clauses.append((Occur.Must, self.compile(child)))
        if all(occur == Occur.MustNot for occur, _ in clauses):
            clauses.append((Occur.Must, Query.all_query()))
        return Query.boolean_query(clauses)

    def _Or(self, node: ast.Or) -> Query:
        return Query.boolean_query([(Occur.Should, self.compile(c)) for c in node.children])

    def _Not(self, node: ast.Not) -> Query:
        return Query.boolean_query([(Occur.Must, Query.all_query()), (Occur.MustNot, self._negated(node.child))])

    def _negated(self, node: ast.Node) -> Query:
        """``node`` compiled to be negated: with the polarity flipped."""
        self.positive = not self.positive
        try:
            return self.compile(node)
        finally:
            self.positive = not self.positive


def needs_records(node: ast.Node, dataset: Dataset) -> bool:
    """Whether ``node`` has parts the index answers only as a superset
    (see the module's doc), so each candidate record must be read."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.And, ast.Or)):
            stack.extend(current.children)
        elif isinstance(current, ast.Not):
            stack.append(current.child)
        elif isinstance(current, ast.FieldRef):
            return True
        elif isinstance(current, (ast.Term, ast.Wildcard)) and current.cased:
            return True
        elif isinstance(current, ast.Regex) and current.flavor == "re2":
            return True
        elif isinstance(current, ast.Contains) and (
            current.cased or current.path is None or dataset.is_text(current.path)
        ):
            return True
    return False


def compile_for_split(node: ast.Node, split: Split, dataset: Dataset) -> tuple[tantivy.Query, int]:
    """The query for this split, and the bytes it holds (an estimate that errs high)."""
    compiler = TantivyCompiler(split, dataset)
    query = compiler.compile(node)
    return query, compiler.cost
