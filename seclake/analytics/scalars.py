"""One value of a piped query: numbers, dates, comparison, grouping and order.

Values are what records hold (str, int, float, bool, None, lists of those)
plus dates as epoch milliseconds (ints: whether an int is a date is known
from the expression, not the value). The rules (docs/analytics.md):

- A string that reads as a number is that number in arithmetic, in numeric
  aggregations and when compared with a number (``"443" == 443``); two
  strings compare as strings (code point order, case kept, as ES|QL's
  keywords).
- Comparing values of kinds that do not compare (a boolean and a number, a
  word and a number) gives null, as does anything compared with null or with
  a multi-valued field.
- Grouping (BY, COUNT_DISTINCT, VALUES) reads numbers the same way: the
  string "443", the number 443 and 443.0 are one value (as a facet's bucket);
  a boolean is no number (true is not 1); strings group with their case.
"""

from __future__ import annotations

import math
import re

from seclake.query import datemath
import numpy as np

from seclake.record.moment import MAX_MS, iso
from seclake.record.value import as_number, ip_text, scalar_text

_INT = re.compile(r"^[+-]?[0-9]{1,18}$")  # ours, anchored, linear
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def number(v: object) -> int | float | None:
    """The number ``v`` is or writes, else None (booleans are not numbers)."""
    t = type(v)
    if t is int:
        return v  # type: ignore[return-value]
    if t is float:
        return v if math.isfinite(v) else None  # type: ignore[arg-type]
    if t is str:
        if _INT.match(v):  # type: ignore[arg-type]
            return int(v)  # type: ignore[arg-type]
        return as_number(v)
    return None


def to_ms(v: object) -> int | None:
    """A date value as epoch ms: a number, or a string of epoch ms or ISO 8601."""
    t = type(v)
    if t is int:
        return v  # type: ignore[return-value]
    if t is float:
        return int(v) if math.isfinite(v) else None  # type: ignore[arg-type]
    if t is str and len(v) <= 64:  # type: ignore[arg-type]
        return datemath.instant(v.strip())  # type: ignore[union-attr]
    return None


def compare(a: object, b: object) -> int | None:
    """-1, 0, 1 as ``a`` is below, equal to, above ``b``; None when they do not compare."""
    ta, tb = type(a), type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):  # the common case first
        return (a > b) - (a < b)  # type: ignore[operator]
    if a is None or b is None:
        return None
    if ta is list or tb is list:
        return None
    if ta is bool or tb is bool:
        if ta is not tb:
            return None
        return (a > b) - (a < b)  # type: ignore[operator]
    if ta is str and tb is str:
        return (a > b) - (a < b)  # type: ignore[operator]
    x, y = number(a), number(b)
    if x is None or y is None:
        return None
    return (x > y) - (x < y)


def key(v: object) -> object:
    """The grouping key of a single value (module doc: kinds kept apart)."""
    t = type(v)
    if v is None:
        return None
    if t is bool:
        return (0, v)
    if t is int:
        return (1, v)
    if t is float:
        if v.is_integer() and I64_MIN <= v <= I64_MAX:  # type: ignore[union-attr]
            return (1, int(v))  # type: ignore[arg-type]
        return (1, v)
    if t is str:
        n = number(v)
        if n is None:
            return (2, v)
        return key(n)
    return (3, repr(v))


def unkey(k: object) -> object:
    """The value a grouping key stands for."""
    if k is None:
        return None
    return k[1]  # type: ignore[index]


def order(v: object) -> tuple:
    """A sort key over values of any kind: booleans, then numbers (a string
    that writes a number is that number), then strings."""
    t = type(v)
    if t is bool:
        return (0, v)
    if t is int or t is float:
        return (1, v)
    if t is str:
        n = number(v)
        return (2, v) if n is None else (1, n)
    return (3, repr(v))


def text(v: object, date: bool = False) -> str | None:
    """TO_STRING: the text of a value (a date in ISO 8601)."""
    if v is None:
        return None
    if date and type(v) is int:
        return iso(v)
    if type(v) is float:
        return repr(v)
    return scalar_text(v)


def integral(v: float) -> int | None:
    """A float's integer part as a long, None outside the long range."""
    if not math.isfinite(v):
        return None
    n = int(v)
    return n if I64_MIN <= n <= I64_MAX else None


def checked(n: int | float) -> int | float | None:
    """An arithmetic result, or None past what a long or a double holds (ES|QL: null and a warning)."""
    if type(n) is int:
        return n if I64_MIN <= n <= I64_MAX else None
    return n if math.isfinite(n) else None


# -- the type of an answer's column ------------------------------------------------------------


def column_type(values: list, kind: str | None) -> str:
    """ES|QL's type name for a column of ``values`` (lists are multi-values),
    ``kind`` where the expression says it ("date", "keyword"...)."""
    if kind in ("date", "keyword", "long", "double", "boolean"):
        return kind
    # Each distinct value once (by kind and value: 1, 1.0 and True are three): the type
    # depends on which values there are, not on how often (an answer's 1,000 rows of a few
    # hundred addresses or hours).
    flat = values if list not in set(map(type, values)) else \
        [x for v in values for x in (v if type(v) is list else (v,))]
    try:
        distinct: list = list(dict.fromkeys(zip(map(type, flat), flat)))
    except TypeError:  # a value that is no scalar: each looked at
        distinct = [(type(x), x) for x in flat]
    kinds: set[str] = set()
    all_ip = True
    for _, x in distinct:
        if x is None:
            continue
        t = type(x)
        if t is bool:
            kinds.add("boolean")
        elif t is int:
            kinds.add("long")
        elif t is float:
            kinds.add("double")
        elif t is str and (n := number(x)) is not None:
            # A source that writes its numbers as strings: a numeric column
            # if every value is a number (else a keyword, as written).
            kinds.add("long" if type(n) is int else "double")
            kinds.add("numeric text")
        else:
            kinds.add("keyword")
            # ip_text: as_ip's answer without making an address of a dotted quad (~10 µs a value).
            if all_ip and (t is not str or ip_text(x) is None):
                all_ip = False
    kinds.discard("numeric text") if "keyword" not in kinds else kinds.add("keyword")
    if not kinds:
        return "null"
    if kinds == {"keyword"}:
        return "ip" if all_ip else "keyword"
    if len(kinds) == 1:
        return kinds.pop()
    if kinds == {"long", "double"}:
        return "double"
    return "keyword"


def shown_all(values: list, ctype: str) -> list:
    """``shown`` of every value of a column: the same values, a column at a time where its
    values are of one kind (a date column of epoch-ms integers written by numpy in one call,
    ``iso``'s text: ~4 µs a value by ``strftime``, most of a timechart's answer of 1,000 rows;
    a long column of integers, a double column of doubles, a keyword column of strings as
    they are), else value by value."""
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if list in kinds:  # multi-values: each shown as shown() shows them
        return [shown(v, ctype) for v in values]
    if ctype == "date" and kinds <= {int}:
        present = [v for v in values if v is not None]
        try:
            ms = np.clip(np.array(present, dtype=np.int64), 0, MAX_MS)
        except OverflowError:  # an integer past int64: clamped one by one
            return [shown(v, ctype) for v in values]
        texts = iter((np.char.add(np.datetime_as_string(ms.astype("datetime64[ms]"), unit="ms"), "Z")).tolist())
        return [None if v is None else next(texts) for v in values]
    if kinds <= {"long": {int}, "double": {float}, "keyword": {str}}.get(ctype, set()) \
            or ctype not in ("date", "long", "double", "boolean", "keyword"):
        return list(values)  # shown() gives each as it is
    return [shown(v, ctype) for v in values]


def shown(v: object, ctype: str) -> object:
    """A value as its column of type ``ctype`` shows it."""
    if v is None:
        return None
    if type(v) is list:
        out = [shown(x, ctype) for x in v]
        return out[0] if len(out) == 1 else out
    if ctype == "date":
        ms = to_ms(v)
        return iso(ms) if ms is not None else None
    if ctype == "double":
        return float(number(v))  # type: ignore[arg-type]
    if ctype == "long":
        n = number(v)
        return int(n) if type(n) is float else n
    if ctype == "boolean":
        return v if type(v) is bool else None
    if ctype == "keyword":
        if type(v) is str:
            return v
        if type(v) in (dict,):
            return str(v)
        return text(v)
    return v
