"""What a query may cost compiled: the estimate, the limit, the parse cache."""

from __future__ import annotations

import gc
import random
import string

import pytest
import tantivy

from seclake.errors import LimitExceeded
from seclake.query import parser
from seclake.query.cost import pattern_bytes, query_bytes
from seclake.query.limits import QueryLimits
from seclake.query.parser import parse
from seclake.record.dataset import DATASETS

EVENT = DATASETS["event"]


def _words(rng: random.Random, count: int, length: int) -> list[str]:
    return ["".join(rng.choice(string.ascii_lowercase) for _ in range(length)) for _ in range(count)]


def test_the_reported_wildcard_flood_is_refused_before_anything_compiles():
    # Issue 17.2: an 8 KB OR of ~830 leading wildcards kept ~1.5 GB per text.
    query = " OR ".join(f"*{w}*" for w in _words(random.Random(2), 830, 3))
    assert len(query) < QueryLimits().max_query_length
    with pytest.raises(LimitExceeded) as err:
        parse(query, EVENT)
    assert "wildcards, regexes and string ranges compile to" in str(err.value)
    assert "above the limit of 64" in str(err.value)


def test_everyday_pattern_queries_stay_far_below_the_limit():
    for query in ('user:adm* AND host:web-?? OR /.*mimikatz.*/', "@sender:[fw1 TO fw9] AND *.exe", "*" * 1 + "a" * 200):
        parse(query, EVENT)
    limits = QueryLimits(max_query_memory_mb=1)
    with pytest.raises(LimitExceeded):
        parse("*a* OR *b* OR *c* OR *d* OR *e*", EVENT, limits=limits)


def _rss_bytes() -> int:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.parametrize("length", [4, 30, 120, 240])
def test_the_estimate_is_at_least_what_tantivy_takes(length):
    # The estimate must err high: the limit and the caches trust it.
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("t", tokenizer_name="raw")
    schema = builder.build()
    rng = random.Random(length)
    regexes = [f"(?i:(?s:.)*{w}(?s:.)*)" for w in _words(rng, 24, length)]
    before = _rss_bytes()
    kept = [tantivy.Query.regex_query(schema, "t", r) for r in regexes]
    measured = (_rss_bytes() - before) / len(kept)
    assert measured <= pattern_bytes(regexes[0]), (length, measured, pattern_bytes(regexes[0]))


def test_a_tree_costs_its_patterns_and_its_nodes():
    plain = query_bytes(parse("a AND b AND c", EVENT))
    patterned = query_bytes(parse("a AND *b* AND @sender:[fw1 TO fw9]", EVENT))
    assert plain < 10_000
    assert patterned > plain + 2 * 200_000


def test_parsed_texts_are_kept_by_their_size_not_their_number(monkeypatch):
    from cachetools import LRUCache  # noqa: PLC0415

    from seclake.query.cost import parsed_bytes  # noqa: PLC0415

    small = LRUCache(maxsize=2 << 20, getsizeof=lambda parsed: parsed_bytes(parsed[0].original))
    monkeypatch.setattr(parser, "_PARSED", small)
    monkeypatch.setattr(parser, "_parsed", parser.cached(small)(parser._parsed.__wrapped__))
    rng = random.Random(5)
    for _ in range(40):  # 40 texts of ~2.6 KB: ~6.6 MB by the estimate
        parse(" OR ".join(_words(rng, 300, 8)), EVENT)
    assert small.currsize <= 2 << 20
    assert 0 < len(small) < 40
