"""The query tree: what a ``searchStr`` means, independent of any engine.

``parser`` builds it from Lucene syntax (via luqum), ``matcher`` evaluates it
on one record in Python, ``tantivy_compiler`` turns it into tantivy queries.
Each node's docstring is the contract all of them follow; the words below
refer to ``seclake.record.value`` (tokens, keyword, keyword_terms,
scalar_text, as_number, ip_in_network) and ``seclake.record.flatten``.

Paths are resolved record paths (``@fields.sip``, never ``sip``). A path of
None means the *default field*: every scalar leaf of the record except the
dataset's date fields, each read as text (``scalar_text``).

Two ways a value can match, used by several nodes:

* text rule (default field and ``dataset.is_text(path)``): the value is
  split into ``tokens``; the query's tokens must appear adjacent and in order
  inside the tokens of ONE value. One token is plain membership; a query
  value with no tokens matches nothing.
* keyword rule (every other path): the value matches when
  ``keyword(query_value) in keyword_terms(v)``; so ``Deny`` == ``deny``,
  ``"443"`` == ``443``, ``"007"`` == ``7``.

Arrays (at any level of the path) match when any element matches.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from seclake.query.pattern import literal_regex

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class MatchAll:
    """Every record."""


@dataclass(frozen=True)
class MatchNone:
    """No record."""


@dataclass(frozen=True)
class Term:
    """A literal value (no wildcards) at ``path``.

    path None or a text field: text rule. Otherwise: keyword rule. ``value``
    is the value as the user wrote it, escapes resolved, case kept.
    """

    path: str | None
    value: str


@dataclass(frozen=True)
class Wildcard:
    """A ``*``/``?`` pattern at ``path``.

    ``pattern`` is lowercased and keeps Lucene's escaping: an unescaped ``*``
    is any run of characters, ``?`` exactly one character, and ``\\*``,
    ``\\?``, ``\\\\`` are the literal characters. No other backslashes occur.

    Keyword path: the pattern must match a whole keyword term of some value
    (any of ``keyword_terms(v)``). Default field or text path: it must match
    one whole token of some value.
    """

    path: str | None
    pattern: str

    def parts(self) -> tuple[str, ...]:
        """The pattern as literal strings and the wildcard markers ``*`` and ``?``.

        Literal parts are returned unescaped and wrapped as ``"=" + text`` so a
        literal ``*`` can never be mistaken for the wildcard.
        """
        out: list[str] = []
        buf: list[str] = []
        i = 0
        p = self.pattern
        while i < len(p):
            c = p[i]
            if c == "\\" and i + 1 < len(p):
                buf.append(p[i + 1])
                i += 2
                continue
            if c in "*?":
                if buf:
                    out.append("=" + "".join(buf))
                    buf = []
                out.append(c)
            else:
                buf.append(c)
            i += 1
        if buf:
            out.append("=" + "".join(buf))
        return tuple(out)

    def regex(self) -> str:
        """The pattern as a regex body, read the same by RE2 and Rust ``regex``.

        Unanchored text: callers match it against the whole string
        (``pattern.full_matcher``; tantivy's regex query is anchored by itself).
        """
        out = []
        for part in self.parts():
            if part == "*":
                out.append("(?s:.)*")
            elif part == "?":
                out.append("(?s:.)")
            else:
                out.append(literal_regex(part[1:]))
        return "".join(out)


@dataclass(frozen=True)
class Regex:
    """A regular expression at ``path``, matched like ``Wildcard``.

    ``pattern`` is the user's Lucene regex translated into the syntax RE2 and
    Rust's ``regex`` read the same way (literals escaped as ``\\xHH``, ``.`` as
    ``(?s:.)``, ``\\d``/``\\w``/``\\s`` as ASCII classes). It is unanchored
    text but always matched against the whole string, case-insensitively and
    in linear time: ``pattern.full_matcher(pattern)`` in Python, tantivy
    ``(?i:pattern)``.
    """

    path: str | None
    pattern: str


@dataclass(frozen=True)
class Range:
    """Values at ``path`` between ``lo`` and ``hi`` (None: unbounded).

    kind "number": bounds are int/float; values that read as numbers
    (``as_number``) are compared numerically, others never match. Date fields
    are always "number" with epoch-millisecond bounds (dates and date math are
    resolved at parse time; values that are ISO strings are read as dates).
    kind "string": bounds are lowercased strings compared in code-point order
    with ``scalar_text(v).lower()``.

    ``include_lo``/``include_hi`` say whether each bound itself matches; for an
    absent bound they are True. Never on a text field or the default field.
    """

    path: str
    lo: int | float | str | None
    hi: int | float | str | None
    include_lo: bool = True
    include_hi: bool = True
    kind: Literal["number", "string"] = "number"


@dataclass(frozen=True)
class Exists:
    """Some non-null scalar leaf at ``path`` or below it.

    ``@fields`` exists when any ``@fields.x`` does; an empty string exists, an
    empty array or object does not.
    """

    path: str


@dataclass(frozen=True)
class Cidr:
    """Some value at ``path`` is an IP address inside ``network`` (IPv4 or IPv6).

    IPv4-mapped IPv6 addresses count as their IPv4 address. Never on a text
    field or the default field.
    """

    path: str
    network: Network


@dataclass(frozen=True)
class And:
    """Every child matches. After simplification: at least two children, none an And."""

    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    """Some child matches. After simplification: at least two children, none an Or."""

    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    """``child`` does not match, including records that lack its field entirely."""

    child: Node


Node = MatchAll | MatchNone | Term | Wildcard | Regex | Range | Exists | Cidr | And | Or | Not


def and_(*children: Node) -> Node:
    """An And, simplified: nested Ands flattened, MatchAll dropped, duplicates dropped."""
    flat: list[Node] = []
    for child in children:
        if isinstance(child, And):
            flat.extend(child.children)
        elif isinstance(child, MatchNone):
            return MatchNone()
        elif not isinstance(child, MatchAll):
            flat.append(child)
    flat = _unique(flat)
    if not flat:
        return MatchAll()
    if len(flat) == 1:
        return flat[0]
    return And(tuple(flat))


def or_(*children: Node) -> Node:
    """An Or, simplified: nested Ors flattened, MatchNone dropped, duplicates dropped."""
    flat: list[Node] = []
    for child in children:
        if isinstance(child, Or):
            flat.extend(child.children)
        elif isinstance(child, MatchAll):
            return MatchAll()
        elif not isinstance(child, MatchNone):
            flat.append(child)
    flat = _unique(flat)
    if not flat:
        return MatchNone()
    if len(flat) == 1:
        return flat[0]
    return Or(tuple(flat))


def not_(child: Node) -> Node:
    """A Not, simplified: double negation and negated constants removed."""
    if isinstance(child, Not):
        return child.child
    if isinstance(child, MatchAll):
        return MatchNone()
    if isinstance(child, MatchNone):
        return MatchAll()
    return Not(child)


def _unique(nodes: list[Node]) -> list[Node]:
    seen: set[Node] = set()
    out = []
    for n in nodes:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out
