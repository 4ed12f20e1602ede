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
* cased rule (a node's ``cased=True``, Sigma's ``|cased``): the value's text
  as ingested (``scalar_text(v)``), case kept, is compared; on a text path or
  the default field, its tokens with their case (``cased_tokens``).

Sigma rules need nodes the Lucene syntax never builds (``Contains``,
``FieldRef``, ``Regex`` of flavor ``re2``, ``cased``): the Sigma backend
builds them directly. The lake engine answers them exactly by searching a
superset in its index and reading each candidate record
(``query/tantivy_compiler.py``: ``needs_records``).

Arrays (at any level of the path) match when any element matches.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from seclake.query.pattern import check_re2, literal_regex

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
    # Sigma's ``|cased``: scalar_text(v) == value exactly (text path or the
    # default field: the query's tokens, case kept, adjacent in one value).
    cased: bool = False


@dataclass(frozen=True)
class Wildcard:
    """A ``*``/``?`` pattern at ``path``.

    ``pattern`` keeps Lucene's escaping: an unescaped ``*`` is any run of
    characters, ``?`` exactly one character, and ``\\*``, ``\\?``, ``\\\\``
    are the literal characters. No other backslashes occur. Unless ``cased``
    it is lowercased (here, whoever built the node).

    Keyword path: the pattern must match a whole keyword term of some value
    (any of ``keyword_terms(v)``). Default field or text path: it must match
    one whole token of some value. ``cased``: the whole ``scalar_text(v)``
    (keyword path) or one token with its case (``cased_tokens``), case kept.
    """

    path: str | None
    pattern: str
    cased: bool = False

    def __post_init__(self) -> None:
        # The engines compare lowercased candidates with the pattern's
        # literals: a tree built outside the parser (the Sigma backend) may
        # hand an uncased pattern in its case.
        if not self.cased:
            lowered = self.pattern.lower()
            if lowered != self.pattern:
                object.__setattr__(self, "pattern", lowered)

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
    """A regular expression at ``path``.

    flavor "lucene" (a ``/.../`` of the search syntax), matched like
    ``Wildcard``: ``pattern`` is the user's Lucene regex translated into the
    syntax RE2 and Rust's ``regex`` read the same way (literals escaped as
    ``\\xHH``, ``.`` as ``(?s:.)``, ``\\d``/``\\w``/``\\s`` as ASCII classes).
    It is unanchored text but always matched against the whole string,
    case-insensitively and in linear time: ``pattern.full_matcher(pattern)``
    in Python, tantivy ``(?i:pattern)``.

    flavor "re2" (Sigma's ``|re``): ``pattern`` is RE2 syntax as written
    (``(?i)``, ``(?:...)``, ``\\d``, classes, ``^``/``$``), checked by
    ``pattern.check_re2`` when the node is built. It matches when it is
    found anywhere in the text of one value (``scalar_text(v)``, a search,
    not a full match; anchors pin it), case-sensitively unless the pattern
    says ``(?i)``; on every path, text paths and the default field included,
    the whole value is searched (never single tokens). Linear time (RE2).
    """

    path: str | None
    pattern: str
    flavor: Literal["lucene", "re2"] = "lucene"

    def __post_init__(self) -> None:
        if self.flavor == "re2":
            check_re2(self.pattern)  # a QueryError saying what, now rather than at match time
        elif self.flavor != "lucene":
            raise ValueError(f"regex flavor must be 'lucene' or 're2', not {self.flavor!r}")


@dataclass(frozen=True)
class Contains:
    """``value`` is a substring of the text of some value at ``path`` (no
    wildcards: every character is literal), ignoring case unless ``cased``.

    Keyword path: a substring of one of ``keyword_terms(v)`` (so it is
    ``Wildcard("*value*")``), or with ``cased`` of ``scalar_text(v)``. Text
    path: of the value's whole text (across tokens: ``"Corrupted MAC on"``).
    path None (Sigma's field-less keywords): of the text of ANY value of the
    default field (every scalar leaf but the date fields). Case is ignored by
    comparing ``str.lower()`` of both. An empty ``value`` matches any value.
    """

    path: str | None
    value: str
    cased: bool = False


@dataclass(frozen=True)
class FieldRef:
    """Some value at ``path`` equals some value at ``other`` (Sigma's
    ``|fieldref``): by the keyword rule (``keyword(a) == keyword(b)``: case
    ignored, numbers by value), or with ``cased`` by ``scalar_text``. A
    record lacking either field does not match."""

    path: str
    other: str
    cased: bool = False


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


Node = (
    MatchAll | MatchNone | Term | Wildcard | Regex | Contains | FieldRef | Range | Exists | Cidr | And | Or | Not
)


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
