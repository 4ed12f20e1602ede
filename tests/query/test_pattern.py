"""Lucene regexes translate to text that Python and Rust (tantivy) read alike."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.errors import QueryError
from seclake.query.ast import Wildcard
from seclake.query.pattern import full_matcher, literal_regex, range_regex, translate

tantivy = pytest.importorskip("tantivy")  # the Rust side of the comparison

STRINGS = ["", "a", "ab", "abc", "a.b", "A", "aaa", "x<y", "a\\b", "0123", "a b", "é", "É", "a\nb", "^a$",
           '"q"', "ba", "abab", "a-b", "]", "a{2}", "tab\t", "_", "a*", "a?b", "ꙮ"]


@pytest.fixture(scope="module")
def rust():
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("k", stored=True, tokenizer_name="raw")
    builder.add_integer_field("i", stored=True, indexed=True)
    schema = builder.build()
    index = tantivy.Index(schema)
    writer = index.writer(15_000_000, 1)
    for i, s in enumerate(STRINGS):
        writer.add_document(tantivy.Document(k=s, i=i))
    writer.commit()
    index.reload()
    searcher = index.searcher()

    def find(pattern: str) -> set[str]:
        # Case-insensitive and anchored, as the engine compiler uses it.
        try:
            query = tantivy.Query.regex_query(schema, "k", f"(?i:{pattern})")
        except ValueError as e:
            # The engine refuses automata past its size limit; the search
            # compiler answers that with a QueryError, never a wrong answer.
            assert "size limit" in str(e), e
            return None
        return {STRINGS[searcher.doc(addr)["i"][0]] for _, addr in searcher.search(query, 100).hits}

    return find


def python(pattern: str) -> set[str]:
    """What the Python side (query matcher: rules, summaries, pruning) matches."""
    test = full_matcher(pattern)
    return {s for s in STRINGS if test(s)}


LUCENE = [
    "a.b", "a.*", "ab?c?", "a+", "a{2}", "a{1,}", "a{0,2}b?", "(ab)+", "a|ab|abc", "[a-c]+", "[^a]",
    "[^a-c\\]]", '"a.b"', '"a"+', "\\d+", "\\w*", "a\\sb", "\\D+", "\\W", "a\\.b", "x\\<y", "\\^a\\$",
    "^a$", "a\\\\b", "[.]", "[\\d]+", "[-a]", "a-b", "é", "[é-ê]", "()", "(a|)", "*a", "a*?", "[*?]",
]


@pytest.mark.parametrize("lucene", LUCENE)
def test_python_and_rust_agree(rust, lucene):
    pattern = translate(lucene)
    assert python(pattern) == rust(pattern)


@pytest.mark.parametrize(
    ("lucene", "matched"),
    [
        ("a.b", {"a.b", "a b", "a\nb", "a-b", "a?b", "a\\b"}),
        ("^a$", {"^a$"}),
        ('"a.b"', {"a.b"}),
        ("\\d+", {"0123"}),
        ("a\\\\b", {"a\\b"}),
        ("*a", set()),
        ("a|ab|abc", {"a", "A", "ab", "abc"}),
    ],
)
def test_lucene_meaning(lucene, matched):
    assert python(translate(lucene)) == matched


FRAGMENTS = ["a", "b", ".", "*", "+", "?", "{2}", "{1,2}", "{0,}", "(", ")", "|", "[", "]", "^", "-", "\\",
             "\\d", "\\w", "\\s", '"', "c", "$", "é", " ", "<", "x"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=10).map("".join))
def test_any_accepted_pattern_means_the_same_in_both(rust, lucene):
    try:
        pattern = translate(lucene)
    except QueryError:
        return
    in_rust = rust(pattern)
    if in_rust is not None:
        assert python(pattern) == in_rust, (lucene, pattern)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_literals_match_only_themselves(text):
    assert re.fullmatch(literal_regex(text), text, re.IGNORECASE)
    assert re.fullmatch(literal_regex(text), text + "x") is None


def test_wildcard_regex_agrees_with_rust(rust):
    for pattern in ["a*", "a?b", "*b", "a\\*", "*", "?", "a.b*", "x<*"]:
        regex = Wildcard(None, pattern).regex()
        assert python(regex) == rust(regex), pattern


# -- string ranges as regexes --------------------------------------------------------------

RANGE_ALPHABET = "ab~é\x00\U0001F600"
RANGE_WORDS = sorted({"".join(p) for n in range(4) for p in itertools.product("ab~é\x00", repeat=n)}
                     | {"\U0001F600", "a\U0001F600", "\ud7ff", "\ue000", "\U0010FFFF"})


@pytest.fixture(scope="module")
def exact():
    """Case-sensitive regexes over RANGE_WORDS in tantivy, as the compiler runs them on keyword terms."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("k", stored=True, tokenizer_name="raw")
    schema = builder.build()
    index = tantivy.Index(schema)
    writer = index.writer(15_000_000, 1)
    for w in RANGE_WORDS:
        writer.add_document(tantivy.Document(k="p\x00" + w))
    writer.commit()
    index.reload()
    searcher = index.searcher()

    def find(pattern: str) -> set[str]:
        query = tantivy.Query.regex_query(schema, "k", "p\\x00(?:" + pattern + ")")
        return {searcher.doc(addr)["k"][0][2:] for _, addr in searcher.search(query, 1000).hits}

    return find


bounds = st.none() | st.text(alphabet=RANGE_ALPHABET, max_size=4)


@settings(max_examples=300, deadline=None)
@given(lo=bounds, hi=bounds, include_lo=st.booleans(), include_hi=st.booleans())
def test_a_string_range_regex_matches_exactly_the_range_in_both_engines(exact, lo, hi, include_lo, include_hi):
    expected = {w for w in RANGE_WORDS
                if (lo is None or w > lo or (include_lo and w == lo)) and (hi is None or w < hi or (include_hi and w == hi))}
    pattern = range_regex(lo, hi, include_lo, include_hi)
    if pattern is None:
        assert expected == set()
        return
    test = full_matcher(f"(?-i:{pattern})")
    assert {w for w in RANGE_WORDS if test(w)} == expected
    assert exact(pattern) == expected


def test_string_range_bounds_are_limited_whatever_the_data():
    with pytest.raises(QueryError, match="longer than"):
        range_regex("a" * 201, None, True, True)
    assert range_regex("a" * 200, "b" * 200, True, True)


# -- Sigma's |re: RE2 searches (ast.Regex flavor "re2") ----------------------

from seclake.query import ast  # noqa: E402
from seclake.query.matcher import compile_matcher  # noqa: E402
from seclake.query.pattern import check_re2, search_matcher  # noqa: E402
from seclake.record.dataset import EVENTS  # noqa: E402


@pytest.mark.parametrize(
    "pattern, text, found",
    [
        ("(?i)\\\\windows\\\\temp\\\\", "C:\\WINDOWS\\Temp\\a.exe", True),
        ("\\\\windows\\\\temp\\\\", "C:\\WINDOWS\\Temp\\a.exe", False),  # case-sensitive unless (?i)
        ("(?:-nop|-noprofile)\\s", "powershell -nop -w hidden", True),
        ("^powershell", "x powershell", False),
        ("\\.exe$", "a.exe", True),
        ("\\.exe$", "a.exe.txt", False),
        ("\\d{2,}", "port 80", True),
        ("a.b", "a\nb", False),  # '.' stops at a newline, as PCRE's does
        ("(?s)a.b", "a\nb", True),
    ],
)
def test_re2_search_keeps_sigma_meaning(pattern, text, found):
    assert search_matcher(pattern)(text) is found


@pytest.mark.parametrize("pattern, says", [
    ("(?<=a)b", "lookahead/lookbehind"),
    ("foo(?!bar)", "lookahead/lookbehind"),
    ("(a)\\1", "backreferences"),
    ("a++", "possessive"),
    ("[z-a]", "invalid character class range"),
    ("(unclosed", "missing )"),
])
def test_what_re2_cannot_run_is_refused_when_the_node_is_built(pattern, says):
    with pytest.raises(QueryError, match=re.escape(says)):
        ast.Regex("@fields.x", pattern, "re2")
    with pytest.raises(QueryError):
        check_re2(pattern)


@pytest.mark.parametrize("pattern", ["(a|aa)*c", "(a*)*c", "(x+x+)+y", "(a|a?)+c", "^(a+)+$"])
def test_hostile_re2_patterns_stay_linear(pattern):
    # Catastrophic for a backtracking engine (Python's re, PCRE): 2**n steps.
    test = compile_matcher(ast.Regex("@fields.cmd", pattern, "re2"), EVENTS)
    record = {"@fields": {"cmd": "a" * 200_000 + "!"}}
    import time

    started = time.perf_counter()
    assert test(record) is False
    assert time.perf_counter() - started < 0.5


def test_contains_on_a_long_value_and_many_values_stays_linear():
    import time

    record = {"@message": "ab " * 100_000, "@fields": {"v": ["ab" * 1000] * 1000}}
    started = time.perf_counter()
    for node in (ast.Contains(None, "ab ab abx"), ast.Contains("@message", "AB AB ABX", cased=True),
                 ast.Contains("@fields.v", "abba"), ast.Term("@message", "ab ab abx", cased=True)):
        assert compile_matcher(node, EVENTS)(record) is False
    assert time.perf_counter() - started < 2
