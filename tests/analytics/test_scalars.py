"""One value of a piped query (analytics/scalars.py): an answer's column shown at once equals
each value shown alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from seclake.analytics import scalars as s

SCALARS = st.one_of(
    st.none(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-1, max_value=s.MAX_MS + 2),  # dates: the clamped ends
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.sampled_from(["443", "1.5", "10.0.0.1", "2026-11-20T12:00:00Z", "1763683200000", "word"]),
)
CELLS = st.one_of(SCALARS, st.lists(SCALARS, min_size=1, max_size=3))


@given(st.sampled_from(["date", "long", "double", "boolean", "keyword", "ip", "null"]), st.data())
def test_a_column_shown_at_once_equals_each_value_shown(ctype, data):
    # One kind per column most of the time (the fast paths), any mix otherwise.
    kind = data.draw(st.sampled_from(["ints", "dates", "floats", "strings", "any"]))
    cell = {"ints": st.integers(min_value=-(2**64), max_value=2**64), "floats": st.floats(allow_nan=False, allow_infinity=False),
            "dates": st.integers(min_value=-(10**13), max_value=s.MAX_MS + 10**6), "strings": st.text(max_size=5),
            "any": CELLS}[kind]
    values = data.draw(st.lists(st.one_of(st.none(), cell), max_size=20))
    if ctype == "double":  # a double column holds numbers (or text writing one): shown() of a word fails
        values = [v for v in values if v is None or type(v) is list or s.number(v) is not None]
        values = [v for v in values if type(v) is not list or all(s.number(x) is not None for x in v if x is not None)]
    assert s.shown_all(values, ctype) == [s.shown(v, ctype) for v in values]


def _column_type_value_by_value(values: list) -> str:
    """The rule of docs/analytics.md ("Types and values"), one value at a time: the reference."""
    kinds, all_ip = set(), True
    for v in values:
        for x in v if type(v) is list else (v,):
            if x is None:
                continue
            if type(x) is bool:
                kinds.add("boolean")
            elif type(x) in (int, float):
                kinds.add("long" if type(x) is int else "double")
            elif type(x) is str and s.number(x) is not None:
                kinds |= {"long" if type(s.number(x)) is int else "double", "numeric text"}
            else:
                kinds.add("keyword")
                all_ip = all_ip and type(x) is str and s.ip_text(x) is not None
    if "keyword" in kinds:
        return "ip" if kinds <= {"keyword"} and all_ip else "keyword"
    kinds.discard("numeric text")
    return "null" if not kinds else kinds.pop() if len(kinds) == 1 else "double" if kinds == {"long", "double"} else "keyword"


@given(st.lists(CELLS, max_size=30))
def test_a_column_s_type_is_decided_by_its_distinct_values_as_by_each(values):
    assert s.column_type(values, None) == _column_type_value_by_value(values)
    assert s.column_type(values * 3, None) == s.column_type(values, None)
