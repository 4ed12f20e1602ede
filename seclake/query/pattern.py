"""Lucene's regular-expression dialect, translated for Python and Rust.

A ``/regex/`` in a query is Lucene's RegExp syntax: ``^`` and ``$`` are plain
characters, ``\\`` makes any character literal, ``"..."`` is a literal string
and ``#``, ``@``, ``&``, ``~``, ``<n-m>`` are operators. Python's ``re`` and
Rust's ``regex`` crate (used by tantivy) read the same text differently, so
``translate`` rewrites the Lucene pattern into their common subset, built so
both read it the same way: literals as ``\\xHH``, ``.`` as ``(?s:.)``,
shorthand classes as explicit ASCII classes, stacked quantifiers wrapped in
groups. Lucene operators that have no equivalent there are refused by name.

``full_matcher`` compiles such a body for matching in Python with RE2
(google-re2): time linear in the text, whatever the pattern. Python's ``re``
backtracks, and one ``*a*a*a*a*a*a*b`` from a user held the interpreter (and
so the whole server) for minutes. Rust's ``regex`` is an automaton as well,
so both engines are linear.

This is the translation of a pattern language; the query itself is parsed
by luqum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import re2

from seclake.errors import QueryError

# RE2 refuses to build a program above this; a pattern that needs more is
# refused as a query error instead of costing memory.
MAX_PROGRAM_BYTES = 8 << 20

# Bounded repetition past this is refused: Rust compiles {n} by copying.
MAX_REPEAT = 1000
# Rough count of compiled atoms; keeps the Rust program and Python's
# backtracking stack small.
MAX_SIZE = 20000
MAX_NESTING = 50

_LUCENE_ONLY = {
    "#": "'#' (the empty language)",
    "@": "'@' (any string)",
    "&": "'&' (intersection)",
    "~": "'~' (complement)",
    "<": "'<' (numeric interval or named automaton)",
}

# Lucene 9 shorthand classes, spelled as ASCII classes: Rust's \d and \w are
# Unicode-wide, Python's too, but Lucene's are ASCII.
_SHORTHAND = {
    "d": "0-9",
    "w": "0-9A-Z_a-z",
    "s": "\\x09\\x0a\\x0d\\x20",
}


def literal_regex(text: str) -> str:
    """``text`` as a regex matching exactly it, in Python and Rust alike.

    ASCII punctuation, spaces and controls become ``\\xHH``: some backslash
    escapes mean different things in the two (``\\<`` is an assertion in Rust).
    """
    return "".join(_literal_char(c) for c in text)


def _literal_char(c: str) -> str:
    if c.isascii() and not c.isalnum():
        return f"\\x{ord(c):02x}"
    return c


@dataclass
class _Piece:
    text: str
    atom: bool  # can take a quantifier without a wrapping group
    unbounded: bool  # contains *, + or {n,}
    size: int


class _Translator:
    def __init__(self, source: str, offset: int):
        self.s = source
        self.i = 0
        self.offset = offset
        self.depth = 0

    def error(self, message: str, expected: str | None = None, at: int | None = None) -> QueryError:
        pos = self.i if at is None else at
        return QueryError(f"regular expression: {message}", self.offset + pos, expected)

    def peek(self, chars: str) -> bool:
        return self.i < len(self.s) and self.s[self.i] in chars

    def more(self) -> bool:
        return self.i < len(self.s)

    # unionexp ::= concatexp ('|' concatexp)*
    def union(self) -> _Piece:
        branches = [self.concat()]
        while self.peek("|"):
            self.i += 1
            branches.append(self.concat())
        if len(branches) == 1:
            return branches[0]
        return _Piece(
            "|".join(b.text for b in branches),
            atom=False,
            unbounded=any(b.unbounded for b in branches),
            size=sum(b.size for b in branches) + 1,
        )

    # concatexp ::= repeatexp*   (stops at ')' and '|')
    def concat(self) -> _Piece:
        parts: list[_Piece] = []
        while self.more() and not self.peek(")|"):
            parts.append(self.repeat())
        if not parts:
            return _Piece("", atom=False, unbounded=False, size=0)
        if len(parts) == 1:
            return parts[0]
        # A union inside a concatenation keeps its own group (added by repeat/group).
        return _Piece(
            "".join(p.text for p in parts),
            atom=False,
            unbounded=any(p.unbounded for p in parts),
            size=sum(p.size for p in parts),
        )

    # repeatexp ::= simpleexp ('?' | '*' | '+' | '{n}' | '{n,}' | '{n,m}')*
    def repeat(self) -> _Piece:
        start = self.i
        piece = self.simple()
        while self.peek("?*+{"):
            qpos = self.i
            c = self.s[self.i]
            self.i += 1
            if c == "{":
                lo, hi = self.counts(qpos)
            else:
                lo, hi = {"?": (0, 1), "*": (0, None), "+": (1, None)}[c]
            if piece.unbounded and (hi is None or hi > 1):
                raise self.error(
                    "nested repetition (a repeated part that itself repeats without bound) is refused "
                    "because it can take exponential time",
                    "a pattern without nested '*', '+' or '{n,}'",
                    at=qpos,
                )
            if lo > MAX_REPEAT or (hi is not None and hi > MAX_REPEAT):
                raise self.error(f"repetition count above {MAX_REPEAT}", None, at=qpos)
            quant = {(0, 1): "?", (0, None): "*", (1, None): "+"}.get((lo, hi))
            if quant is None:
                quant = f"{{{lo}}}" if lo == hi else f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
            body = piece.text if piece.atom else f"(?:{piece.text})"
            size = piece.size * max(1, hi if hi is not None else lo, lo)
            # Quantified text is never an atom: a second quantifier needs a group
            # (Python reads "a*+" as possessive, Rust refuses "a**").
            piece = _Piece(body + quant, atom=False, unbounded=piece.unbounded or hi is None, size=size)
            if piece.size > MAX_SIZE:
                raise self.error("pattern too large once repetitions are expanded", None, at=start)
        return piece

    def counts(self, open_at: int) -> tuple[int, int | None]:
        lo = self.number()
        if lo is None:
            raise self.error("bad repetition", "a number after '{'")
        hi: int | None = lo
        if self.peek(","):
            self.i += 1
            hi = self.number()
        if not self.peek("}"):
            raise self.error("bad repetition", "'}'")
        self.i += 1
        if hi is not None and hi < lo:
            raise self.error(f"repetition {{{lo},{hi}}} has its maximum below its minimum", at=open_at)
        return lo, hi

    def number(self) -> int | None:
        start = self.i
        while self.peek("0123456789"):
            self.i += 1
        if self.i == start:
            return None
        if self.i - start > 6:
            raise self.error(f"repetition count above {MAX_REPEAT}", at=start)
        return int(self.s[start : self.i])

    def simple(self) -> _Piece:
        c = self.s[self.i]
        if c in _LUCENE_ONLY:
            raise self.error(
                f"Lucene operator {_LUCENE_ONLY[c]} is not supported",
                f"'\\{c}' for a literal '{c}'",
            )
        if c == ".":
            self.i += 1
            return _Piece("(?s:.)", atom=True, unbounded=False, size=1)
        if c == "[":
            return self.char_class()
        if c == "(":
            return self.group()
        if c == '"':
            return self.string()
        return self.char()

    def group(self) -> _Piece:
        open_at = self.i
        if self.s.startswith("(?", open_at):
            # Lucene reads "(?i)" as a group holding the literal "?i": a
            # PCRE flag or "(?:" silently matching something else.
            raise self.error(
                "'(?' (a PCRE group option such as '(?i)' or '(?:') is not Lucene regex syntax; "
                "Lucene regexes already ignore case here and every group is non-capturing",
                "'(' without '?', or '\\?' for a literal '?'",
                at=open_at,
            )
        self.i += 1
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"more than {MAX_NESTING} nested groups", at=open_at)
        inner = self.union()
        if not self.peek(")"):
            raise self.error("unclosed group", "')'", at=len(self.s) if not self.more() else self.i)
        self.i += 1
        self.depth -= 1
        return _Piece(f"(?:{inner.text})", atom=True, unbounded=inner.unbounded, size=inner.size + 1)

    def string(self) -> _Piece:
        open_at = self.i
        end = self.s.find('"', self.i + 1)
        if end < 0:
            raise self.error("unclosed string", "'\"'", at=open_at)
        text = self.s[self.i + 1 : end]
        self.i = end + 1
        return _Piece(literal_regex(text), atom=len(text) == 1, unbounded=False, size=max(1, len(text)))

    def char(self) -> _Piece:
        c = self.s[self.i]
        if c == "\\":
            if self.i + 1 >= len(self.s):
                raise self.error("'\\' at the end", "a character after '\\'")
            c = self.s[self.i + 1]
            self.i += 2
            if c in "dws":
                return _Piece(f"[{_SHORTHAND[c]}]", atom=True, unbounded=False, size=1)
            if c in "DWS":
                return _Piece(f"[^{_SHORTHAND[c.lower()]}]", atom=True, unbounded=False, size=1)
            return _Piece(_literal_char(c), atom=True, unbounded=False, size=1)
        self.i += 1
        return _Piece(_literal_char(c), atom=True, unbounded=False, size=1)

    def char_class(self) -> _Piece:
        open_at = self.i
        self.i += 1
        negate = self.peek("^")
        if negate:
            self.i += 1
        items: list[str] = []
        # do-while, as Lucene: the first character may be ']' itself.
        while True:
            if not self.more():
                raise self.error("unclosed character class", "']'", at=open_at)
            items.append(self.class_item())
            if self.peek("]"):
                self.i += 1
                break
        return _Piece(f"[{'^' if negate else ''}{''.join(items)}]", atom=True, unbounded=False, size=1)

    def class_item(self) -> str:
        first_at = self.i
        first = self.class_char(allow_shorthand=True)
        if len(first) > 1:  # a shorthand class: no range from it
            return _SHORTHAND[first[1]]
        if self.peek("-") and self.i + 1 < len(self.s) and self.s[self.i + 1] != "]":
            self.i += 1
            last = self.class_char(allow_shorthand=False)
            if ord(last) < ord(first):
                raise self.error(f"character range {first}-{last} is out of order", at=first_at)
            return f"{_literal_char(first)}-{_literal_char(last)}"
        return _literal_char(first)

    def class_char(self, allow_shorthand: bool) -> str:
        c = self.s[self.i]
        if c == "\\":
            if self.i + 1 >= len(self.s):
                raise self.error("'\\' at the end", "a character after '\\'")
            c = self.s[self.i + 1]
            self.i += 2
            if c in "dws" and allow_shorthand:
                return "\\" + c
            if c in "DWS":
                raise self.error(f"'\\{c}' inside a character class is not supported", "'[^...]'", at=self.i - 2)
            return c
        self.i += 1
        return c


def translate(source: str, offset: int = 0) -> str:
    """The Lucene regex ``source`` as a Python/Rust regex body (see module doc).

    ``offset`` is where ``source`` starts in the query string, so errors point
    into the query.
    """
    t = _Translator(source, offset)
    piece = t.union()
    if t.more():  # only a stray ')' stops the top-level union early
        raise t.error("unbalanced ')'", "'(' before it, or '\\)' for a literal ')'")
    full_matcher(piece.text, offset)  # refused here, with a position, not at match time
    return piece.text


def _options(case_sensitive: bool) -> re2.Options:
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.never_capture = True  # a yes/no answer needs no groups
    options.log_errors = False  # refusals are raised as QueryError, not printed
    options.max_mem = MAX_PROGRAM_BYTES
    return options


_OPTIONS = _options(False)
_CASED = _options(True)
_ANCHOR_BOTH = re2._re2.RE2.Anchor.ANCHOR_BOTH
_UNANCHORED = re2._re2.RE2.Anchor.UNANCHORED
_NO_MATCH = (-1, -1)


def full_matcher(body: str, offset: int = 0, cased: bool = False) -> Callable[[str], bool]:
    """A test: does the regex ``body`` match the whole of a text, ignoring
    case unless ``cased``.

    Linear in the text's length (RE2). ``body`` is this module's translated
    syntax (``translate``, ``literal_regex``), which RE2 reads as Rust does.
    A pattern RE2 cannot compile is a QueryError at ``offset``.
    """
    program = re2._re2.RE2(body.encode("utf-8", "surrogatepass"), _CASED if cased else _OPTIONS)
    if not program.ok():
        raise QueryError(f"regular expression: {_error_text(program)}", offset, None)
    return _test(program, _ANCHOR_BOTH)


def _error_text(program) -> str:
    error = program.error()
    return error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)


def _test(program, anchor) -> Callable[[str], bool]:
    match = program.Match

    def test(text: str) -> bool:
        # The low-level call skips re2's Python wrapper, which maps byte offsets
        # back to characters on every match (4x the cost of the match itself).
        # "surrogatepass": a lone surrogate from a JSON escape must not raise.
        data = text.encode("utf-8", "surrogatepass")
        return match(anchor, data, 0, len(data))[0] != _NO_MATCH

    return test


# Sigma's ``|re`` is PCRE-like; what RE2 lacks (lookaround, backreferences,
# possessive and atomic groups, recursion) it refuses at compile time, and
# the refusal is said in these words rather than RE2's terse ones.
_RE2_LACKS = (
    "RE2 (linear-time matching) has no lookahead/lookbehind '(?=' '(?!' '(?<=' '(?<!', "
    "backreferences '\\1', atomic or possessive groups"
)


def _re2_program(pattern: str):
    if not isinstance(pattern, str):
        raise QueryError(f"a regular expression must be a string, not {type(pattern).__name__}")
    program = re2._re2.RE2(pattern.encode("utf-8", "surrogatepass"), _CASED)
    if not program.ok():
        error = _error_text(program)
        hint = f" ({_RE2_LACKS})" if "perl operator" in error or "escape sequence" in error or "repetition" in error else ""
        raise QueryError(f"regular expression {pattern[:200]!r}: {error}{hint}", None, None)
    return program


def check_re2(pattern: str) -> None:
    """Refuse, with a QueryError saying why, a pattern ``search_matcher`` cannot run."""
    _re2_program(pattern)


def search_matcher(pattern: str) -> Callable[[str], bool]:
    """A test: is the RE2 ``pattern`` found anywhere in a text (Sigma's ``|re``).

    A search, not a full match (``^``/``$`` anchor it), case-sensitive
    unless the pattern says ``(?i)``; ``.`` does not match a newline unless
    ``(?s)``. Linear in the text's length.
    """
    return _test(_re2_program(pattern), _UNANCHORED)


# A string range is compiled to a regex over the split's terms (tantivy has no
# range over string terms) instead of expanding the matching terms into a
# list: a list bounded by a limit made the limit an oracle on terms a
# restricted caller may not see (docs/security.md). The regex grows with the
# bounds' length, so longer bounds are refused, whatever the data.
MAX_RANGE_BOUND = 200
_ANY = "(?s:.)*"
_SOME = "(?s:.)+"
_MAX_CODE = 0x10FFFF


def range_regex(lo: str | None, hi: str | None, include_lo: bool, include_hi: bool) -> str | None:
    """A regex body (RE2 and Rust read it alike) matching exactly the strings
    ``s`` with ``lo <= s <= hi`` in code point order (``<`` where a bound is
    exclusive; None: unbounded); None when no string is in the range.
    Linear in the bounds' length. (Rust refuses a class that matches nothing,
    so "no string" is None, and alternatives that match nothing are left out.)"""
    for bound in (lo, hi):
        if bound is not None and len(bound) > MAX_RANGE_BOUND:
            raise QueryError(f"a string range bound longer than {MAX_RANGE_BOUND} characters is not supported")
    if lo is None and hi is None:
        return _ANY
    if lo is None:
        return _at_most(hi, include_hi)
    if hi is None:
        return _at_least(lo, include_lo)
    if lo > hi or (lo == hi and not (include_lo and include_hi)):
        return None
    if lo == hi:
        return literal_regex(lo)
    p = 0
    while p < len(lo) and p < len(hi) and lo[p] == hi[p]:
        p += 1
    prefix, lo, hi = literal_regex(lo[:p]), lo[p:], hi[p:]
    if not lo:  # lo is a prefix of hi: what lies below hi after it (the empty rest if lo counts)
        rest = _below(hi, include_hi)
        parts = [""] if include_lo else []
        parts += [rest] if rest is not None else []
        return prefix + _group(parts) if parts else None
    # lo[0] < hi[0]: three ways to lie between them.
    parts = [_then(lo[0], _at_least(lo[1:], include_lo))]
    between = _class(ord(lo[0]) + 1, ord(hi[0]) - 1)
    if between:
        parts.append(between + _ANY)
    parts.append(_then(hi[0], _at_most(hi[1:], include_hi)))
    return prefix + _group([p for p in parts if p is not None])


def _group(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 and parts[0] == "" else "(?:" + "|".join(parts) + ")"


def _then(char: str, rest: str | None) -> str | None:
    return None if rest is None else literal_regex(char) + f"(?:{rest})"


def _at_least(s: str, inclusive: bool) -> str:
    """Strings >= s (> s when not inclusive): never none."""
    if not s:
        return _ANY if inclusive else _SOME
    # s[0] then at least the rest, or a greater first character then anything.
    parts = [literal_regex(s[0]) + f"(?:{_at_least(s[1:], inclusive)})"]
    greater = _class(ord(s[0]) + 1, _MAX_CODE)
    if greater:
        parts.append(greater + _ANY)
    return "|".join(parts)


def _at_most(s: str, inclusive: bool) -> str | None:
    """Strings <= s (< s when not inclusive); None when there are none."""
    if not s:
        return "" if inclusive else None
    rest = _below(s, inclusive)
    return "|".join(["", rest]) if rest is not None else ""  # "": the empty string, below any s


def _below(s: str, inclusive: bool) -> str | None:
    """Non-empty strings <= s (< s when not inclusive); s is not empty."""
    parts = []
    then = _then(s[0], _at_most(s[1:], inclusive))
    if then is not None:
        parts.append(then)
    smaller = _class(0, ord(s[0]) - 1)
    if smaller:
        parts.append(smaller + _ANY)
    return "|".join(parts) if parts else None


def _class(first: int, last: int) -> str:
    """A character class of the code points first..last, surrogates left out
    (no string holds them and Rust refuses them as class ends); "" if empty."""
    ranges = []
    for a, b in ((first, min(last, 0xD7FF)), (max(first, 0xE000), last)):
        if a <= b:
            ranges.append(f"\\x{{{a:X}}}-\\x{{{b:X}}}" if a < b else f"\\x{{{a:X}}}")
    return f"[{''.join(ranges)}]" if ranges else ""
