"""Nested records as (path, value) leaves.

Objects join their keys with dots; arrays contribute each element under the
same path (so ``comments.username`` reaches into an array of comments);
null leaves are absent, as if the field were missing.
"""

from __future__ import annotations

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
    the whole record (a rule's key, a field of records searched in memory).

    Arrays at any level are walked; keys may contain dots (``{"a.b": 1}``
    is at ``a.b``), so every way to cut the path into keys is tried,
    longest key first (the order of the values may differ from ``leaves``,
    not which they are: property-tested); nesting past ``MAX_DEPTH`` is cut
    as ``leaves`` cuts it.
    """
    out: list[Scalar] = []
    _lookup(record, path.split("."), 0, 0, out)
    return out


def _lookup(node: dict, parts: list[str], i: int, depth: int, out: list) -> None:
    # ``node``'s values are at ``depth`` as ``_leaf`` counts it.
    for j in range(len(parts), i, -1):
        key = ".".join(parts[i:j])
        if key in node:
            _at(node[key], parts, j, depth, out)


def _at(value: Any, parts: list[str], i: int, depth: int, out: list) -> None:
    if value is None:
        return
    cls = value.__class__
    if cls is str or cls is int or cls is float or cls is bool:
        if i == len(parts):
            out.append(value)
    elif isinstance(value, dict):
        if i < len(parts) and depth < MAX_DEPTH:
            _lookup(value, parts, i, depth + 1, out)
    elif isinstance(value, (list, tuple)):
        if depth < MAX_DEPTH:
            for item in value:
                _at(item, parts, i, depth + 1, out)
    elif isinstance(value, (str, int, float, bool)) and i == len(parts):
        out.append(value)


def exists_at(record: dict[str, Any], path: str) -> bool:
    """Whether some non-null scalar leaf lies at ``path`` or below it.

    ``@fields`` exists when any ``@fields.x`` does; an empty string exists, an
    empty array or object does not (the query ``_exists_:field``).
    """
    return _exists(record, path.split("."), 0, 0)


def _exists(node: Any, parts: list[str], i: int, depth: int) -> bool:
    if node is None:
        return False
    if isinstance(node, (list, tuple)):
        return depth < MAX_DEPTH and any(_exists(item, parts, i, depth + 1) for item in node)
    if i == len(parts):
        if isinstance(node, dict):
            return depth < MAX_DEPTH and any(_exists(v, parts, i, depth + 1) for v in node.values())
        return isinstance(node, (str, int, float, bool))
    if not isinstance(node, dict):
        return False
    for j in range(len(parts), i, -1):
        key = ".".join(parts[i:j])
        if key in node and _exists(node[key], parts, j, depth + 1):
            return True
    return False
