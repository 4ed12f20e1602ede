"""Nested records as (path, value) leaves.

Objects join their keys with dots; arrays contribute each element under the
same path (so ``comments.username`` reaches into an array of comments);
null leaves are absent, as if the field were missing.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

Scalar = str | int | float | bool

# Deeper nesting than this is not indexed (it is still stored and returned).
MAX_DEPTH = 16


def leaves(record: dict[str, Any], prefix: str = "", depth: int = 0) -> list[tuple[str, Scalar]]:
    """The (path, value) leaves of a record, in document order.

    Built as a list by plain recursion: it runs for every record indexed and
    every record the rules see, and nested generators cost three times more.
    """
    out: list[tuple[str, Scalar]] = []
    _walk(record, prefix, depth, out)
    return out


def _walk(node: dict[str, Any], prefix: str, depth: int, out: list) -> None:
    for key, value in node.items():
        _leaf(prefix + key, value, depth, out)


def _leaf(path: str, value: Any, depth: int, out: list) -> None:
    if value is None:
        return
    cls = value.__class__
    if cls is str or cls is int or cls is float or cls is bool:
        out.append((path, value))
    elif isinstance(value, dict):
        if depth < MAX_DEPTH:
            _walk(value, path + ".", depth + 1, out)
    elif isinstance(value, (list, tuple)):
        if depth < MAX_DEPTH:
            for item in value:
                _leaf(path, item, depth + 1, out)
    elif isinstance(value, (str, int, float, bool)):
        out.append((path, value))


def values_at(record: dict[str, Any], path: str) -> list[Scalar]:
    """The values ``leaves(record)`` gives at ``path``, found without walking
    the whole record (a rule's fields, a rule's key, a field of records
    searched in memory).

    Arrays at any level are walked; keys may contain dots (``{"a.b": 1}``
    is at ``a.b``), so every way to cut the path into keys is tried,
    longest key first (the order of the values may differ from ``leaves``,
    not which they are: property-tested); nesting past ``MAX_DEPTH`` is cut
    as ``leaves`` cuts it.
    """
    out: list[Scalar] = []
    cuts = _cuts(path)
    _lookup(record, cuts, len(cuts), 0, 0, out)
    return out


@lru_cache(maxsize=4096)
def _cuts(path: str) -> tuple[tuple[tuple[str, int], ...], ...]:
    """For each part ``i`` of ``path``, the keys that start there, longest
    first, with the part after each: made once per path, not per record."""
    parts = path.split(".")
    n = len(parts)
    return tuple(tuple((".".join(parts[i:j]), j) for j in range(n, i, -1)) for i in range(n))


def _lookup(node: dict, cuts: tuple, n: int, i: int, depth: int, out: list) -> None:
    # ``node``'s values are at ``depth`` as ``_leaf`` counts it.
    get = node.get
    for key, j in cuts[i]:
        value = get(key)
        if value is not None:
            _at(value, cuts, n, j, depth, out)


def _at(value: Any, cuts: tuple, n: int, i: int, depth: int, out: list) -> None:
    cls = value.__class__
    if cls is str or cls is int or cls is float or cls is bool:
        if i == n:
            out.append(value)
    elif isinstance(value, dict):
        if i < n and depth < MAX_DEPTH:
            _lookup(value, cuts, n, i, depth + 1, out)
    elif isinstance(value, (list, tuple)):
        if depth < MAX_DEPTH:
            for item in value:
                if item is not None:
                    _at(item, cuts, n, i, depth + 1, out)
    elif isinstance(value, (str, int, float, bool)) and i == n:
        out.append(value)


def exists_at(record: dict[str, Any], path: str) -> bool:
    """Whether some non-null scalar leaf lies at ``path`` or below it.

    ``@fields`` exists when any ``@fields.x`` does; an empty string exists, an
    empty array or object does not (the query ``_exists_:field``).
    """
    cuts = _cuts(path)
    return _exists(record, cuts, len(cuts), 0, 0)


def _exists(node: Any, cuts: tuple, n: int, i: int, depth: int) -> bool:
    if node is None:
        return False
    if isinstance(node, (list, tuple)):
        return depth < MAX_DEPTH and any(_exists(item, cuts, n, i, depth + 1) for item in node)
    if i == n:
        if isinstance(node, dict):
            return depth < MAX_DEPTH and any(_exists(v, cuts, n, i, depth + 1) for v in node.values())
        return isinstance(node, (str, int, float, bool))
    if not isinstance(node, dict):
        return False
    return any(key in node and _exists(node[key], cuts, n, j, depth + 1) for key, j in cuts[i])
