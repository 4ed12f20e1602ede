"""Effective rights (seclake.service.access): unit rules, and the property
that a restricted search equals the unrestricted one filtered in Python.

The property runs both engines: the lake (tantivy, splits) and the memory
engine (summaries, audit). For random records, random data policies (one
set for the user and its roles, maybe one for a token) and random queries,
the restricted search's total, hits, facets and histogram equal those of the
memory engine over the records the policy's Python matcher accepts.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seclake.api.options import build_plan
from seclake.db.database import Database
from seclake.errors import Forbidden
from seclake.query import ast
from seclake.query.matcher import compile_matcher
from seclake.record.dataset import EVENTS, FLOWS
from seclake.search.memory import search_records
from seclake.search.root import Root
from seclake.service.access import Rights
from seclake.service.caller import Caller
from seclake.settings import load_settings
from seclake.storage.lake import Lake
from tests.search.test_engine_property import records

# -- rules ------------------------------------------------------------------------------


def test_api_layers_must_all_match():
    assert Rights(frozenset()).allows_call("anything")
    rights = Rights(frozenset(), api_layers=(("ds/*", "auth/userList"), ("ds/get_index_zoom_histogram_lv3",)))
    assert rights.allows_call("ds/get_index_zoom_histogram_lv3")
    assert not rights.allows_call("ds/fsm_behavior_search")
    assert not rights.allows_call("auth/userList")


def test_policies_or_within_a_layer_and_across_layers():
    acme = ("acme", (("event", "@customer:acme"),))
    globex = ("globex", (("event", "@customer:globex"), ("flow", "*")))
    assert Rights(frozenset()).restriction(EVENTS) is None
    one = Rights(frozenset(), data_layers=((acme, globex),))
    assert one.restriction(EVENTS) == ast.Or((ast.Term("@customer", "acme"), ast.Term("@customer", "globex")))
    assert one.restriction(FLOWS) == ast.MatchAll()
    two = Rights(frozenset(), data_layers=((acme, globex), (globex,)))
    assert isinstance(two.restriction(EVENTS), ast.And)


def test_a_dataset_no_policy_names_and_vanished_policies_show_nothing():
    acme = ("acme", (("event", "@customer:acme"),))
    assert Rights(frozenset(), data_layers=((acme,),)).restriction(FLOWS) == ast.MatchNone()
    assert Rights(frozenset(), data_layers=((),)).restriction(EVENTS) == ast.MatchNone()


def test_a_broken_filter_fails_closed_naming_the_policy_only():
    rights = Rights(frozenset(), data_layers=((("p", (("event", "secret:((("),)),),))
    with pytest.raises(Forbidden, match="data policy 'p'") as e:
        rights.restriction(EVENTS)
    assert "secret" not in str(e.value)


def test_rights_come_from_the_database_on_every_resolution(services):
    services.policies.add_policy({"name": "acme", "filters": {"event": "@customer:acme"}})
    services.policies.add_role({"name": "reader", "permissions": ["search"], "APIPolicies": ["ds/*"],
                                "dataPolicies": ["acme"]})
    services.users.add({"username": "rita", "password": "long-enough-1", "roles": ["reader"]})
    token = services.login.login("rita", "long-enough-1").token
    caller = services.auth.caller(token)
    assert caller.may("search") and not caller.may("triage") and not caller.may("admin")
    assert caller.rights.allows_call("ds/x") and not caller.rights.allows_call("auth/userList")
    assert caller.restriction(EVENTS) == ast.Term("@customer", "acme")
    services.policies.update_role({"name": "reader", "permissions": ["search", "triage"], "APIPolicies": []})
    caller = services.auth.caller(token)
    assert caller.may("triage") and caller.rights.allows_call("auth/userList")
    services.policies.update_policy({"name": "acme", "filters": {"event": "@customer:globex"}})
    assert services.auth.caller(token).restriction(EVENTS) == ast.Term("@customer", "globex")


def test_a_token_restriction_is_anded_and_survives_user_changes(services):
    for name in ("a", "b"):
        services.policies.add_policy({"name": name, "filters": {"event": f"@customer:{name}"}})
    services.users.add({"username": "tim", "password": "long-enough-1", "roles": ["analyst"], "dataPolicies": ["a", "b"]})
    secret = services.tokens.create("tim", {"name": "t", "dataPolicies": ["a"]}).secret

    def sees() -> set[str]:
        match = compile_matcher(services.auth.caller(secret).restriction(EVENTS), EVENTS)
        return {c for c in ("a", "b", "c") if match({"@customer": c})}

    assert sees() == {"a"}
    # The user loses policy a: the token does not fall back to b, nor to everything.
    services.users.update({"username": "tim", "dataPolicies": ["b"]})
    assert sees() == set()
    services.users.update({"username": "tim", "dataPolicies": None})
    assert sees() == {"a"}


# -- the property ---------------------------------------------------------------------------

FILTERS = [
    "@customer:acme", "@customer:globex", "@sender:fw*", "NOT @customer:acme", "@customer:acme OR @sender:dns",
    "*", "NOT *", "action:deny", "_exists_:user", "dport:[0 TO 100]", "@customer:ACME AND NOT action:deny",
]
QUERIES = ["", "deny", "action:deny OR user:admin", "NOT @sender:fw1", "dport:[7 TO 443]", "@customer:globex", "adm*"]
FACETS = ["@customer", "@sender", "@fields.user", "@fields.action", "@fields.dport"]
_ids = itertools.count(1)


@st.composite
def customer_records(draw):
    rec = draw(records())
    if draw(st.booleans()):
        rec["@customer"] = draw(st.sampled_from(["acme", "ACME", "globex", ""]))
    return rec


policy = st.builds(lambda f: (f"p{next(_ids)}", (("event", f),)), st.sampled_from(FILTERS))
layer = st.lists(policy, min_size=0, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    recs=st.lists(customer_records(), min_size=1, max_size=25),
    layers=st.lists(layer, min_size=1, max_size=2).map(tuple),
    queries=st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4),
)
def test_restricted_search_equals_filtered_search(tmp_path_factory, recs, layers, queries):
    settings_ = load_settings(data_dir=tmp_path_factory.mktemp("cfg"))
    rights = Rights(frozenset({"search"}), data_layers=layers)
    caller = Caller("u", ("analyst",), "session", 1, rights=rights)
    restriction = caller.restriction(EVENTS, settings_)
    visible = compile_matcher(restriction, EVENTS)
    base = tmp_path_factory.mktemp("restricted")
    db = Database(f"sqlite:///{base / 'meta.db'}")
    db.migrate()
    lake = Lake(base / "data", db)
    lake.start(background=False)
    try:
        half = len(recs) // 2
        if half:
            lake.append([("event", r) for r in recs[:half]])
            lake.flush()
        lake.append([("event", r) for r in recs[half:]])
        lake.flush()
        ids = {str(i + 1).zfill(8): r for i, r in enumerate(recs)}
        seen = [(rid, r) for rid, r in ids.items() if visible(r)]
        with ThreadPoolExecutor(2) as pool:
            root = Root(lake.splits, pool)
            for q in queries:
                options = {
                    "searchStr": q, "fetchLimit": len(recs), "sortOrder": "asc",
                    "range_from": 1_700_000_000_000, "range_to": 1_700_000_006_000,
                    "facets": {"facets": [{"field": f, "size": 3} for f in FACETS],
                               "dateFacets": [{"name": "h", "key": "@timestamp", "interval": "1s"}]},
                }
                restricted, _ = build_plan(options, EVENTS, settings_, restriction=restriction, now_ms=0)
                plain, _ = build_plan(options, EVENTS, settings_, now_ms=0)
                want = search_records(seen, plain, EVENTS)  # unrestricted search over what the policy shows
                for got in (root.search(restricted), search_records(list(ids.items()), restricted, EVENTS)):
                    assert got.total == want.total, (q, layers)
                    got_ids = sorted(str(h.docid).zfill(8) if h.record_id is None else h.record_id for h in got.hits)
                    assert got_ids == sorted(h.record_id for h in want.hits), (q, layers)
                    assert got.histograms == want.histograms, (q, layers)
                    for f in restricted.facets:
                        g, w = got.facets[f.path], want.facets[f.path]
                        assert [(b.key, b.doc_count) for b in g.buckets] == [(b.key, b.doc_count) for b in w.buckets], (q, f.path)
                        assert g.sum_other_doc_count == w.sum_other_doc_count, (q, f.path)
    finally:
        lake.stop()
        db.dispose()
