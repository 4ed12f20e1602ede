"""The fields a query reads, decoded from a stored record's JSON and nothing else.

An analytics query reads every record its head selects, and of each record a
few paths (``Pipeline.fields``). Decoding the whole record (``orjson.loads``:
every key and string of ~1.3 kB made a Python object) was the largest cost
of a ``ds/query`` over the lake. ``decoder(paths)`` gives a function of the
stored JSON that makes only what lies on the way to those paths: msgspec
decodes into Struct types made here for the paths, and skips every other
member without making an object of it.

What it returns is the record *pruned*: every key that any way of cutting a
wanted path into keys passes through (``a.b.c`` may be stored as
``{"a": {"b": {"c"...}}}``, ``{"a.b": {"c"...}}``, ``{"a": {"b.c"...}}``...,
as ``flatten.values_at`` reads it), a wanted path's value whole, an array on
the way whole. So ``values_at(pruned, path) == values_at(record, path)`` for
every wanted path, in the same order (property-tested against the whole
record), and the reader's projection runs unchanged on it.

A path of more than ``MAX_PARTS`` dotted parts (its cuts double with each
part), paths that would make more than ``MAX_TYPES`` types, or a record
msgspec refuses, are decoded whole by orjson instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any, Union

import msgspec
import orjson

# A path of n parts has 2**(n-1) ways to be cut into keys, each a chain of Struct fields.
MAX_PARTS = 8
# Struct types one query's paths may make (a query of many long paths would make thousands:
# seconds of building for a hostile query); past it its records are decoded whole. A query's
# usual few paths make a few types each; ~2.7 kB a type, the cache below holds at most ~22 MB.
MAX_TYPES = 128
_LEAF = ""  # a trie node's mark that a wanted path ends there (no key is "": a path part is never empty)


def decoder(paths: Iterable[str] | None) -> Callable[[bytes], dict[str, Any]]:
    """A function of a stored record's JSON: the record pruned to ``paths`` (None: whole)."""
    if paths is None:
        return orjson.loads
    return _decoder(frozenset(paths))


@lru_cache(maxsize=64)  # a query's paths, made into types once, not per query
def _decoder(paths: frozenset[str]) -> Callable[[bytes], dict[str, Any]]:
    split = [p.split(".") for p in paths]
    # A path of n parts makes at most 2**n - 1 trie nodes: bounded before any is made.
    if not paths or any(len(parts) > MAX_PARTS or "" in parts for parts in split) or \
            sum(2 ** len(parts) for parts in split) > 8 * MAX_TYPES:
        return orjson.loads
    trie: dict = {}
    for parts in split:
        _add(trie, parts, 0)
    if _nodes(trie) > MAX_TYPES:
        return orjson.loads
    decode = msgspec.json.Decoder(_struct(trie, [0])).decode
    builtins = msgspec.to_builtins

    def pruned(body: bytes) -> dict[str, Any]:
        try:
            return builtins(decode(body))
        except (msgspec.DecodeError, msgspec.ValidationError):
            return orjson.loads(body)  # not a JSON object, or a value msgspec reads otherwise: whole

    return pruned


def _add(node: dict, parts: list[str], i: int) -> None:
    # Every key that starts at part i (one part, two joined, ...), then the rest after it.
    for j in range(i + 1, len(parts) + 1):
        child = node.setdefault(".".join(parts[i:j]), {})
        if j == len(parts):
            child[_LEAF] = True
        else:
            _add(child, parts, j)


def _nodes(node: dict) -> int:
    """The Struct types ``node`` makes: itself and each key on the way (not a wanted path's end)."""
    return 1 + sum(_nodes(c) for k, c in node.items() if k != _LEAF and _LEAF not in c)


def _struct(node: dict, count: list[int]) -> type:
    """The Struct of one trie node: a field per key; a wanted path's value decoded whole
    (Any), a key on the way an object of its own Struct, or an array (whole) or a scalar
    (kept: ``values_at`` passes them by as a whole record's would be)."""
    fields, rename = [], {}
    for i, (key, child) in enumerate((k, c) for k, c in node.items() if k != _LEAF):
        attr = f"f{i}"
        rename[attr] = key
        kind: Any = Any if _LEAF in child else Union[_struct(child, count), list, str, int, float, bool, None]  # noqa: UP007
        fields.append((attr, kind, None))
    count[0] += 1
    # A member absent or null is left out (``omit_defaults``): null leaves are absent in leaves() too.
    return msgspec.defstruct(f"Projection{count[0]}", fields, rename=rename, omit_defaults=True)
