"""The tantivy engine answers every query exactly as the Python matcher does.

Random records (with the traps: numbers as strings, mixed case, arrays,
missing fields, empty strings, IPs) and random query trees; the set of ids the
engine finds across several splits must equal the set the reference matcher
(seclake.query.matcher) accepts.
"""

from __future__ import annotations

import ipaddress
import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seclake.db.database import Database
from seclake.query import ast
from seclake.query.matcher import matches
from seclake.record.dataset import EVENTS
from seclake.search.plan import SearchPlan
from seclake.search.root import Root
from seclake.storage import shape, split
from seclake.storage.lake import Lake

WORDS = ["deny", "Deny", "accept", "quarantined", "unquarantined", "admin", "Admin", "mimikatz.exe", "", "443", "007", "7"]
USERS = ["admin", "Administrator", "bob", "BOB", "alice", ""]
IPS = ["10.0.0.1", "10.1.2.3", "192.168.1.5", "2001:db8::1", "::ffff:10.9.9.9", "not-an-ip"]
NUMBERS = [0, 7, 22, 443, 443.0, -5, 1e6, "443", "22", "7", "007", "x443"]
_ids = itertools.count(1)

scalar = st.one_of(st.sampled_from(WORDS), st.sampled_from(NUMBERS), st.sampled_from(USERS), st.booleans())


@st.composite
def records(draw):
    fields = {}
    if draw(st.booleans()):
        fields["action"] = draw(st.sampled_from(WORDS))
    if draw(st.booleans()):
        fields["dport"] = draw(st.sampled_from(NUMBERS))
    if draw(st.booleans()):
        fields["user"] = draw(st.one_of(st.sampled_from(USERS), st.lists(st.sampled_from(USERS), max_size=3)))
    if draw(st.booleans()):
        fields["sip"] = draw(st.sampled_from(IPS))
    if draw(st.booleans()):
        fields["tags"] = draw(st.lists(scalar, max_size=3))
    rec = {
        "@timestamp": 1_700_000_000_000 + draw(st.integers(0, 5)) * 1000,
        "@message": " ".join(draw(st.lists(st.sampled_from(WORDS + USERS), max_size=6))),
        "@fields": fields,
    }
    if draw(st.booleans()):
        rec["@sender"] = draw(st.sampled_from(["fw1", "FW1", "dns"]))
    return rec


PATHS = ["@fields.action", "@fields.dport", "@fields.user", "@fields.sip", "@fields.tags", "@sender", "@message", None]

leaf = st.one_of(
    st.builds(ast.Term, st.sampled_from(PATHS), st.sampled_from([str(w) for w in WORDS + USERS + NUMBERS] + ["failed admin", "10.1.2.3"])),
    st.builds(ast.Wildcard, st.sampled_from(PATHS), st.sampled_from(["adm*", "*ny", "?dmin", "4*3", "*", "quar*"])),
    st.builds(ast.Exists, st.sampled_from([p for p in PATHS if p] + ["@fields"])),
    st.builds(
        lambda p, lo, hi, il, ih: ast.Range(p, lo, hi, il, ih, "number"),
        st.sampled_from(["@fields.dport", "@fields.tags", "@timestamp"]),
        st.one_of(st.none(), st.sampled_from([0, 7, 22.5, 443, 1_700_000_002_000])),
        st.one_of(st.none(), st.sampled_from([7, 443, 1e6, 1_700_000_004_000])),
        st.booleans(),
        st.booleans(),
    ).filter(lambda r: r.lo is not None or r.hi is not None),
    st.builds(
        lambda p, lo, hi: ast.Range(p, lo, hi, True, False, "string"),
        st.sampled_from(["@fields.user", "@fields.action"]),
        st.one_of(st.none(), st.sampled_from(["a", "admin", "b"])),
        st.one_of(st.none(), st.sampled_from(["bob", "c", "z"])),
    ).filter(lambda r: r.lo is not None or r.hi is not None),
    st.builds(ast.Cidr, st.just("@fields.sip"), st.sampled_from([ipaddress.ip_network(n) for n in ("10.0.0.0/8", "10.1.0.0/16", "2001:db8::/32", "0.0.0.0/0")])),
)

def boolean_trees(leaf, max_leaves: int):
    """Queries of ``leaf`` nodes under AND, OR and NOT (tests/search/test_node_property.py too)."""
    return st.recursive(
        leaf,
        lambda children: st.one_of(
            st.builds(lambda cs: ast.And(tuple(cs)), st.lists(children, min_size=2, max_size=3)),
            st.builds(lambda cs: ast.Or(tuple(cs)), st.lists(children, min_size=2, max_size=3)),
            st.builds(ast.Not, children),
        ),
        max_leaves=max_leaves,
    )


queries = boolean_trees(leaf, max_leaves=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(recs=st.lists(records(), min_size=1, max_size=25), qs=st.lists(queries, min_size=1, max_size=8))
@pytest.mark.parametrize("first_format, shapes", [(2, 1024), (1, 1024), (3, 1)],
                         ids=["format2and3", "format1and3", "format3spilled"])
def test_engine_equals_matcher(tmp_path_factory, recs, qs, first_format, shapes):
    """The first half goes to a split of ``first_format``, the second to one
    of the newest: answers are the same over old, new and mixed splits, and
    over splits whose table of record shapes (format 3) holds only the first
    shape, the other records keeping their existence terms."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shape, "MAX_SHAPES", shapes)
        _engine_equals_matcher(tmp_path_factory, recs, qs, first_format)


def _engine_equals_matcher(tmp_path_factory, recs, qs, first_format):
    base = tmp_path_factory.mktemp("prop")
    db = Database(f"sqlite:///{base / 'meta.db'}")
    db.migrate()
    lake = Lake(base / "data", db)
    lake.start(background=False)
    try:
        half = len(recs) // 2
        first, _ = lake.append([("event", r) for r in recs[:half]]) if half else (1, 0)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(split, "WRITE_FORMAT", first_format)
            lake.flush()
        lake.append([("event", r) for r in recs[half:]])
        lake.flush()
        ids = {i + 1: r for i, r in enumerate(recs)}
        with ThreadPoolExecutor(2) as pool:
            root = Root(lake.splits, pool)
            for q in qs:
                res = root.search(SearchPlan(dataset="event", query=q, limit=len(recs)))
                got = sorted(h.docid for h in res.hits)
                want = sorted(i for i, r in ids.items() if matches(q, r, EVENTS))
                assert got == want, f"query {q!r}"
                assert res.total == len(want)
    finally:
        lake.stop()
        db.dispose()
