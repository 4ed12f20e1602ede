"""Evaluate a query tree on one record, in Python.

Two users: streaming rules, which test every ingested record (so the tree is
compiled once into closures, with patterns, tokens and keywords prepared),
and the engine conformance tests, which use this as the reference meaning of
ast.py. It reads values with the same functions indexing uses
(``seclake.record``), so the two cannot drift apart.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from cachetools import LRUCache, cached

from seclake.query import ast, datemath
from seclake.query.cost import query_bytes
from seclake.errors import QueryError
from seclake.query.pattern import full_matcher, literal_regex, search_matcher
from seclake.record.dataset import Dataset
from seclake.record.flatten import exists_at, leaves, values_at
from seclake.record.value import as_number, canonical_number, ip_in_network, keyword, scalar_text, tokens

Matcher = Callable[[dict], bool]


def matches(node: ast.Node, record: dict, dataset: Dataset) -> bool:
    return compile_matcher(node, dataset)(record)


# Compiled matchers are kept by their estimated bytes (``query.cost``), not
# their number: rules and repeated searches reuse them, hostile query texts
# cannot pile them up.
_MATCHERS: LRUCache = LRUCache(maxsize=64 << 20, getsizeof=lambda match: match.cost)


@cached(_MATCHERS, lock=threading.Lock())
def compile_matcher(node: ast.Node, dataset: Dataset) -> Matcher:
    """A function record -> bool equivalent to ``matches(node, record, dataset)``."""
    test = _Compiler(dataset).compile(node)

    def match(record: dict | RecordView) -> bool:
        # A RecordView shared by several matchers (every rule on one record)
        # reads each path once for all of them.
        return test(record if isinstance(record, RecordView) else RecordView(record, dataset))

    match.cost = query_bytes(node)  # type: ignore[attr-defined]
    return match


class RecordView:
    """One record with the views the query reads, each computed at most once."""

    __slots__ = ("data", "dataset", "_values", "_lowered", "_tokens", "_keywords", "_texts", "_leaves", "_paths",
                 "_by_path")

    def __init__(self, data: dict, dataset: Dataset):
        self.data = data
        self.dataset = dataset
        self._values: dict[str, list] = {}
        self._lowered: dict[str | None, list[str]] = {}
        self._tokens: dict[str, list[str]] = {}
        self._keywords: dict[str, frozenset[str]] = {}
        self._texts: dict[str | None, list[str]] = {}
        self._leaves: list | None = None
        self._paths: set[str] | None = None
        self._by_path: dict[str, list] | None = None

    def leaves(self) -> list:
        """``leaves(data)``, walked once: the default field's texts and the paths the rule index looks up
        (``paths``) both come from it."""
        got = self._leaves
        if got is None:
            got = self._leaves = leaves(self.data)
        return got

    def paths(self) -> set[str]:
        """The paths the record has a (non-null) leaf at; from then on ``values`` reads a path's values
        from the same walk (the rule index asks a Sysmon record for ~26 paths: one ``values_at`` each
        was a third of its time), not with ``values_at`` (the same values, maybe in another order)."""
        got = self._paths
        if got is None:
            by_path: dict[str, list] = {}
            for path, value in self.leaves():
                at = by_path.get(path)
                if at is None:
                    by_path[path] = [value]
                else:
                    at.append(value)
            self._by_path = by_path
            got = self._paths = set(by_path)
        return got

    def values(self, path: str) -> list:
        # Looked up path by path (values_at gives what leaves(), which
        # indexing walks, gives at the path): the rules ask a record for a
        # few paths, most stop at their first (event.category), where a walk
        # over all ~45 leaves of a log record served them all (the starter
        # pack's event rules: 20.5 -> 16.8 us per record).
        got = self._values.get(path)
        if got is None:
            by_path = self._by_path
            if by_path is None:
                got = values_at(self.data, path)
            else:
                got = by_path.get(path)
                if got is None:
                    got = []
            self._values[path] = got
        return got

    def keywords(self, path: str) -> frozenset[str]:
        """Every spelling a keyword term matches a value of ``path`` by: its
        normalized keyword and its lowercased text. Several rules often test
        the same field of a record (its action, its sender)."""
        got = self._keywords.get(path)
        if got is None:
            out = []
            for v in self.values(path):
                if v.__class__ is str:
                    # keyword(v) and scalar_text(v).lower() without the calls: the text lowered, and its
                    # canonical number when it may be one (a number starts with a digit, a sign or a dot).
                    out.append(v.lower())
                    first = v[:1]
                    if first.isdigit() or first in "+-.":
                        canon = canonical_number(v)
                        if canon is not None:
                            out.append(canon)
                else:
                    out.append(keyword(v))
                    out.append(scalar_text(v).lower())
            got = self._keywords[path] = frozenset(out)
        return got

    def lowered(self, path: str | None) -> list[str]:
        """Lowercased text of each value of a text field, or of the default field (None)."""
        got = self._lowered.get(path)
        if got is None:
            got = self._lowered[path] = [t.lower() for t in self.texts(path)]
        return got

    def texts(self, path: str | None) -> list[str]:
        """The text of each value at ``path`` as ingested, case kept (None:
        the default field, every scalar leaf but the date fields)."""
        got = self._texts.get(path)
        if got is None:
            if path is None:
                dates = self.dataset.date_fields
                # Most leaves are strings: scalar_text only for the others (this runs for every record
                # the rule index searches for Sigma's field-less keywords).
                got = [v if v.__class__ is str else scalar_text(v) for p, v in self.leaves() if p not in dates]
            else:
                got = [scalar_text(v) for v in self.values(path)]
            self._texts[path] = got
        return got

    def tokens(self, lowered: str) -> list[str]:
        got = self._tokens.get(lowered)
        if got is None:
            got = self._tokens[lowered] = tokens(lowered)
        return got

    def token_lists(self, path: str | None) -> list[list[str]]:
        return [self.tokens(text) for text in self.lowered(path)]


Test = Callable[[RecordView], bool]


class _Compiler:
    def __init__(self, dataset: Dataset):
        self.dataset = dataset

    def compile(self, node: ast.Node) -> Test:
        return getattr(self, "_" + type(node).__name__)(node)

    def text_path(self, path: str | None) -> bool:
        return path is None or self.dataset.is_text(path)

    # leaves

    def _MatchAll(self, node: ast.MatchAll) -> Test:
        return lambda rec: True

    def _MatchNone(self, node: ast.MatchNone) -> Test:
        return lambda rec: False

    def _Term(self, node: ast.Term) -> Test:
        path = node.path
        if node.cased:
            return self._cased_term(node)
        if self.text_path(path):
            query = tokens(node.value)
            if not query:
                return lambda rec: False
            # Every token is a substring of the lowercased text, so a value
            # without the longest query token as a substring is skipped
            # untokenized: most records of a streaming rule end here.
            needle = max(query, key=len)
            if len(query) == 1:
                return lambda rec: any(needle in low and needle in rec.tokens(low) for low in rec.lowered(path))
            return lambda rec: any(
                needle in low and _has_phrase(rec.tokens(low), query) for low in rec.lowered(path)
            )
        kw = keyword(node.value)
        return lambda rec: kw in rec.keywords(path)

    def _cased_term(self, node: ast.Term) -> Test:
        path, value = node.path, node.value
        if self.text_path(path):
            query = cased_tokens(value)
            if not query:
                return lambda rec: False
            needle = max(query, key=len)
            return lambda rec: any(
                needle in text and _has_phrase(cased_tokens(text), query) for text in rec.texts(path)
            )
        return lambda rec: any(text == value for text in rec.texts(path))

    def _Wildcard(self, node: ast.Wildcard) -> Test:
        if node.cased:
            test = _wildcard_test(node)
            path = node.path
            if self.text_path(path):
                return lambda rec: any(test(t) for text in rec.texts(path) for t in cased_tokens(text))
            return lambda rec: any(test(text) for text in rec.texts(path))
        return self._pattern(node.path, _wildcard_test(node))

    def _Regex(self, node: ast.Regex) -> Test:
        if node.flavor == "re2":
            # Sigma's |re: searched in each whole value, text paths included.
            found = search_matcher(node.pattern)
            path = node.path
            return lambda rec: any(found(text) for text in rec.texts(path))
        return self._pattern(node.path, full_matcher(node.pattern))

    def _Contains(self, node: ast.Contains) -> Test:
        path, value = node.path, node.value
        if node.cased:
            return lambda rec: any(value in text for text in rec.texts(path))
        if not self.text_path(path):
            # On a keyword, exactly the wildcard *value*: the lake runs it so.
            return self._Wildcard(contains_wildcard(node))
        needle = value.lower()
        return lambda rec: any(needle in low for low in rec.lowered(path))

    def _FieldRef(self, node: ast.FieldRef) -> Test:
        path, other = node.path, node.other
        if node.cased:
            return lambda rec: not set(rec.texts(path)).isdisjoint(rec.texts(other))
        return lambda rec: not _keywords_of(rec, path).isdisjoint(_keywords_of(rec, other))

    def _pattern(self, path: str | None, test: Callable[[str], Any]) -> Test:
        """A pattern against single tokens (text) or whole keyword terms."""
        if self.text_path(path):
            return lambda rec: any(test(t) for toks in rec.token_lists(path) for t in toks)
        return lambda rec: any(test(s) for v in rec.values(path) for s in _keyword_terms(v))

    def _Range(self, node: ast.Range) -> Test:
        path, lo, hi, inc_lo, inc_hi = node.path, node.lo, node.hi, node.include_lo, node.include_hi

        def inside(x: Any) -> bool:
            if lo is not None and not (x > lo or (inc_lo and x == lo)):
                return False
            return hi is None or x < hi or (inc_hi and x == hi)

        if node.kind == "string":
            return lambda rec: any(inside(scalar_text(v).lower()) for v in rec.values(path))
        read = _date_number if self.dataset.is_date(path) else _number
        return lambda rec: any(x is not None and inside(x) for x in map(read, rec.values(path)))

    def _Exists(self, node: ast.Exists) -> Test:
        path = node.path
        return lambda rec: exists_at(rec.data, path)

    def _Cidr(self, node: ast.Cidr) -> Test:
        path, network = node.path, node.network
        return lambda rec: any(ip_in_network(v, network) for v in rec.values(path))

    # boolean

    def _And(self, node: ast.And) -> Test:
        tests = [self.compile(c) for c in node.children]
        return lambda rec: all(t(rec) for t in tests)

    def _Or(self, node: ast.Or) -> Test:
        # Children that test one field's strings for a literal (Sigma's value lists: SigmaHQ's
        # "Vulnerable Driver Load" is an OR of ~4,400 hashes on one field) are tested together, per
        # field and view, by one set lookup and one RE2 search; tried one by one in Python they took
        # ~7 ms per record. The others keep their own test.
        tests: list[Test] = []
        groups: dict[tuple[str | None, str], list[tuple[ast.Node, str, str]]] = {}
        for child in node.children:
            literal = self._literal(child)
            if literal is None:
                tests.append(self.compile(child))
            else:
                path, view, kind, text = literal
                groups.setdefault((path, view), []).append((child, kind, text))
        for (path, view), items in groups.items():
            tests.extend(self._literals(path, view, items))
        if len(tests) == 1:
            return tests[0]
        return lambda rec: any(t(rec) for t in tests)

    def _literal(self, node: ast.Node) -> tuple[str | None, str, str, str] | None:
        """``(path, view, kind, text)`` when ``node`` tests whether some string of ``view`` of ``path``
        (``RecordView.keywords``, ``texts`` or ``lowered``) is ``text`` (kind "="), starts with it ("^"),
        ends with it ("$"), holds it ("~") or fully matches the regex ``text`` ("i": ignoring case,
        "r": not): exactly the node's own test (``_Term``, ``_Wildcard``, ``_Contains``); else None."""
        if isinstance(node, ast.Term):
            if self.text_path(node.path):
                return None  # tokens, not strings
            if node.cased:
                return node.path, "texts", "=", node.value
            return node.path, "keywords", "=", keyword(node.value)
        if isinstance(node, ast.Contains):
            if node.cased:
                return node.path, "texts", "~", node.value
            if self.text_path(node.path):
                return node.path, "lowered", "~", node.value.lower()
            node = contains_wildcard(node)  # what _Contains runs on a keyword path
        if isinstance(node, ast.Wildcard):
            if node.path is None or self.text_path(node.path):
                return None  # tokens
            view = "texts" if node.cased else "keywords"
            parts = node.parts()
            shape = tuple("=" if p.startswith("=") else p for p in parts)
            kind = _SHAPES.get(shape)
            if kind is None:  # _wildcard_test's full match: RE2, ignoring case unless cased
                return node.path, view, "r" if node.cased else "i", node.regex()
            return node.path, view, kind, next(p[1:] for p in parts if p.startswith("="))
        return None

    def _literals(self, path: str | None, view: str, items: list[tuple[ast.Node, str, str]]) -> list[Test]:
        """The tests of ``items`` (one path and view): equalities as one set, substrings as one RE2
        search, other patterns as one RE2 full match; a part too small to gain, or that RE2 cannot
        compile (a lone surrogate), keeps its nodes' own tests."""
        equal = frozenset(text for _node, kind, text in items if kind == "=")
        searched = [(node, kind, text) for node, kind, text in items if kind in "^$~"]
        full = [(node, kind, text) for node, kind, text in items if kind in "ri"]
        tests: list[Test] = []
        search = full_match = None
        if len(searched) >= GROUPED:
            try:
                search = search_matcher("|".join(_SEARCHED[kind].format(literal_regex(text))
                                                 for _n, kind, text in searched))
            except QueryError:
                tests.extend(self.compile(node) for node, _k, _t in searched)
        else:
            tests.extend(self.compile(node) for node, _k, _t in searched)
        if len(full) >= GROUPED:
            try:
                full_match = full_matcher("|".join(f"(?i:{text})" if kind == "i" else f"(?:{text})"
                                                   for _n, kind, text in full), cased=True)
            except QueryError:
                tests.extend(self.compile(node) for node, _k, _t in full)
        else:
            tests.extend(self.compile(node) for node, _k, _t in full)
        if equal or search is not None or full_match is not None:
            strings = _VIEWS[view]

            def test(rec: RecordView) -> bool:
                got = strings(rec, path)
                if equal and not equal.isdisjoint(got):
                    return True
                if search is not None and any(search(s) for s in got):
                    return True
                return full_match is not None and any(full_match(s) for s in got)

            tests.insert(0, test)
        return tests

    def _Not(self, node: ast.Not) -> Test:
        test = self.compile(node.child)
        return lambda rec: not test(rec)


# A wildcard's shape -> the kind of literal test _wildcard_test makes of it (a plain string test, case kept).
_SHAPES = {("=", "*"): "^", ("*", "="): "$", ("*", "=", "*"): "~"}
# Those kinds as one RE2 search's branches (case-sensitive, as the string tests are; ``$`` is the text's end).
_SEARCHED = {"^": "^{}", "$": "{}$", "~": "{}"}
# The strings a view of a path gives (the ones the nodes' own tests read).
_VIEWS: dict[str, Callable[[RecordView, str | None], Iterable[str]]] = {
    "keywords": lambda rec, path: rec.keywords(path),  # type: ignore[arg-type]
    "texts": lambda rec, path: rec.texts(path),
    "lowered": lambda rec, path: rec.lowered(path),
}
# Patterns of one field in an OR are compiled into one RE2 program from this many (fewer: a string test each
# costs less than compiling one).
GROUPED = 4


def _keywords_of(rec: RecordView, path: str) -> set[str]:
    return {keyword(v) for v in rec.values(path)}


_CASED_TOKEN = re.compile(r"[^\W_]+")  # record.value's tokens, case kept (a fixed pattern, not the user's)


def cased_tokens(text: str) -> list[str]:
    """The tokens of ``text`` (runs of letters and digits) with their case."""
    return _CASED_TOKEN.findall(text)


def contains_wildcard(node: ast.Contains) -> ast.Wildcard:
    """The wildcard ``*value*`` of an uncased Contains on a keyword path."""
    escaped = "".join("\\" + c if c in "*?\\" else c for c in node.value.lower())
    return ast.Wildcard(node.path, "*" + escaped + "*")


def _has_phrase(toks: list[str], query: list[str]) -> bool:
    n = len(query)
    first = query[0]
    for i in range(len(toks) - n + 1):
        if toks[i] == first and toks[i : i + n] == query:
            return True
    return False


def _keyword_terms(value: Any) -> Iterable[str]:
    # keyword_terms() without building a set per value: this runs per record.
    kw = keyword(value)
    text = scalar_text(value).lower()
    return (kw,) if kw == text else (kw, text)


def _wildcard_test(node: ast.Wildcard) -> Callable[[str], bool]:
    """String predicates for the common shapes, a linear-time regex (RE2) for the rest."""
    parts = node.parts()
    literals = [p[1:] for p in parts if p.startswith("=")]
    shape = tuple("=" if p.startswith("=") else p for p in parts)
    # Candidates are lowercased already, and so is the pattern.
    if shape == ("=", "*"):
        prefix = literals[0]
        return lambda s: s.startswith(prefix)
    if shape == ("*", "="):
        suffix = literals[0]
        return lambda s: s.endswith(suffix)
    if shape == ("*", "=", "*"):
        inner = literals[0]
        return lambda s: inner in s
    return full_matcher(node.regex(), cased=node.cased)


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value  # exact, even past 2**53
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return as_number(value)


def _date_number(value: Any) -> int | float | None:
    number = _number(value)
    if number is None and isinstance(value, str):
        return datemath.instant(value)
    return number
