"""The customers of a split: which ``@customer`` values its records hold.

A data policy is usually a filter on ``@customer``; the root skips a split
whose customers cannot match the query (``search/pruning.py``). For that
the set must say exactly what the query matcher sees of each record at
``@customer``, so it records one *signature* per distinct record: the
record's scalar leaves at ``@customer`` (``record/flatten.leaves``: arrays
walked, nulls absent) as a sorted JSON list of their distinct JSON texts.
``[]`` is a record without ``@customer``; ``["acme"]``, ``[1]``, ``[true]``
and ``["a","b"]`` (an array) are all different. Matching at one path only
asks whether any value matches, so order and repeats do not count.

The set is None ("unknown", never pruned) when a split holds more than
``MAX_CUSTOMERS`` signatures, a value longer than ``MAX_VALUE_CHARS``
(kept small: the set lives in the catalog, and pruning evaluates patterns on
it), or anything under ``@customer`` other than scalars (an object, a key
``@customer.x``): existence and paths below would need more than the values.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from seclake.record.flatten import leaves

PATH = "@customer"
MAX_CUSTOMERS = 64
MAX_VALUE_CHARS = 256
NONE = "[]"
_BELOW = PATH + "."

Customers = tuple[str, ...] | None


class Unknown(Exception):
    """No signature says exactly what the matcher sees of this record at ``@customer``."""


def signature(source: dict[str, Any]) -> str:
    """The record's signature, or ``Unknown``."""
    value = source.get(PATH)
    try:
        if value is None:
            sig = NONE
        elif value.__class__ is str and len(value) <= MAX_VALUE_CHARS:
            sig = orjson.dumps([value]).decode()  # the common case, no walk
        else:
            found = leaves({PATH: value})
            if any(path != PATH or (v.__class__ is float and not math.isfinite(v)) for path, v in found):
                raise Unknown  # JSON has no inf or NaN: its text would say null
            texts = sorted({orjson.dumps(v).decode() for _, v in found})
            if any(len(t) > MAX_VALUE_CHARS + 2 for t in texts):
                raise Unknown
            sig = "[" + ",".join(texts) + "]"
    except TypeError:
        raise Unknown from None  # what JSON cannot hold: integers past 64 bits, lone surrogates
    if any(key.startswith(_BELOW) for key in source):
        raise Unknown
    return sig


def decode(sig: str) -> dict[str, Any]:
    """A record the query matcher sees exactly as it sees every record of ``sig`` at ``@customer``."""
    values = orjson.loads(sig)
    return {PATH: values} if values else {}


class CustomerSet:
    """Collects the signatures of a split's records as they are written."""

    def __init__(self) -> None:
        self._seen: set[str] | None = set()

    def add(self, source: dict[str, Any]) -> None:
        seen = self._seen
        if seen is None:
            return
        try:
            seen.add(signature(source))
        except Unknown:
            self._seen = None
            return
        if len(seen) > MAX_CUSTOMERS:
            self._seen = None

    @property
    def customers(self) -> Customers:
        return None if self._seen is None else tuple(sorted(self._seen))


def from_stored(data: Any) -> Customers:
    """A stored set (split.json, catalog row): anything but a list of strings is unknown."""
    if not isinstance(data, list) or not all(isinstance(s, str) for s in data) or len(data) > MAX_CUSTOMERS:
        return None
    return tuple(data)
