"""Sigma's nodes: the tantivy engine answers exactly as the Python matcher.

Random records (mixed case, numbers as text, arrays, words with spaces) and
random trees of the nodes the Sigma backend builds (Contains, FieldRef,
re2 regexes, cased Term/Wildcard) mixed with the others, under And/Or/Not:
the index answers a superset and the leaf keeps what the matcher accepts,
so the ids must be the matcher's own, over two splits.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seclake.db.database import Database
from seclake.query import ast
from seclake.query.matcher import matches
from seclake.record.dataset import EVENTS
from seclake.search.plan import SearchPlan
from seclake.search.root import Root
from seclake.storage.lake import Lake
from tests.search.test_engine_property import boolean_trees

WORDS = ["deny", "Deny", "DENY", "Administrator", "admin", "failed password", "Failed Password for", "443", "007", "7",
         "", "C:\\Temp\\x.PS1", "mimikatz.exe"]
NUMBERS = [7, 443, 443.0, "443", "007", -5]
scalar = st.one_of(st.sampled_from(WORDS), st.sampled_from(NUMBERS), st.booleans())


@st.composite
def records(draw):
    fields = {}
    for name in ("action", "user", "dport"):
        if draw(st.booleans()):
            fields[name] = draw(st.one_of(scalar, st.lists(scalar, max_size=3)))
    rec = {
        "@timestamp": 1_700_000_000_000 + draw(st.integers(0, 5)) * 1000,
        "@message": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=4))),
        "@fields": fields,
    }
    if draw(st.booleans()):
        rec["@sender"] = draw(st.sampled_from(["fw1", "FW1", "deny"]))
    return rec


PATHS = ["@fields.action", "@fields.user", "@fields.dport", "@sender", "@message", None]
KEYWORD_PATHS = [p for p in PATHS if p not in ("@message", None)]

leaf = st.one_of(
    st.builds(ast.Contains, st.sampled_from(PATHS),
              st.sampled_from(["deny", "Den", "ADMIN", "in", "password for", "d P", "44", "0", "", "\\temp\\", "e.e"]),
              st.booleans()),
    st.builds(ast.Term, st.sampled_from(PATHS), st.sampled_from([str(w) for w in WORDS + NUMBERS]), st.booleans()),
    st.builds(ast.Wildcard, st.sampled_from(PATHS), st.sampled_from(["Adm*", "*ny", "De?y", "*", "4*3", "*\\\\x.*"]),
              st.booleans()),
    st.builds(lambda p, r: ast.Regex(p, r, "re2"), st.sampled_from(PATHS),
              st.sampled_from(["^[Dd]eny$", "(?i)admin", "dmin", "^4", "\\d{3}", "d\\s+P", "^$", "(?i:ps1)$"])),
    st.builds(ast.FieldRef, st.sampled_from(KEYWORD_PATHS), st.sampled_from(KEYWORD_PATHS), st.booleans()),
    st.builds(ast.Exists, st.sampled_from(KEYWORD_PATHS)),
)

queries = boolean_trees(leaf, max_leaves=4)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(recs=st.lists(records(), min_size=1, max_size=20), qs=st.lists(queries, min_size=1, max_size=8))
def test_engine_equals_matcher_on_sigma_nodes(tmp_path_factory, recs, qs):
    base = tmp_path_factory.mktemp("nodeprop")
    db = Database(f"sqlite:///{base / 'meta.db'}")
    db.migrate()
    lake = Lake(base / "data", db)
    lake.start(background=False)
    try:
        half = len(recs) // 2
        ids = {}
        for chunk in (recs[:half], recs[half:]):
            if chunk:
                first, _ = lake.append([("event", r) for r in chunk])
                ids.update({first + i: r for i, r in enumerate(chunk)})
                lake.flush()
        with ThreadPoolExecutor(2) as pool:
            root = Root(lake.splits, pool)
            for q in qs:
                res = root.search(SearchPlan(dataset="event", query=q, limit=len(recs)))
                want = sorted(i for i, r in ids.items() if matches(q, r, EVENTS))
                assert sorted(h.docid for h in res.hits) == want, f"query {q!r}"
                assert res.total == len(want)
    finally:
        lake.stop()
        db.dispose()
