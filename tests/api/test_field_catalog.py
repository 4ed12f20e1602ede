"""ds/field_catalog over HTTP: the fields of what a caller can search, per source, counted exactly."""

from __future__ import annotations

import json

import pytest

from seclake.storage import shape
from tests.conftest import running_server

CALL = "ds/field_catalog"
T0 = 1_763_683_200_000  # 2025-11-21T00:00:00Z
SSHD = [
    "<38>Nov 21 10:00:0%d bastion sshd[41%d]: Failed password for invalid user admin from 203.0.113.%d port 4000%d ssh2"
    % (i, i, i, i) for i in range(6)
] + ["<38>Nov 21 10:01:00 bastion sshd[500]: Accepted publickey for deploy from 10.0.0.5 port 50000 ssh2: RSA SHA256:x"]
OKTA = [json.dumps({
    "actor": {"id": "00u1", "type": "User", "alternateId": f"user{i}@example.com", "displayName": f"User {i}"},
    "client": {"ipAddress": "198.51.100.9"}, "eventType": "user.session.start",
    "outcome": {"result": "FAILURE" if i % 2 else "SUCCESS"}, "published": f"2025-11-21T10:02:0{i}.000Z",
    "uuid": f"u-{i}", "version": "0"}) for i in range(4)]
FLOW = json.dumps({"@timestamp": T0 + 5, "@type": "flow", "@fields": {"sip": "10.0.0.1", "dip": "10.0.0.2", "dp": 22}})


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("catalog")) as server:
        token = server.login()
        for vendor, customer, lines in (("sshd", "acme", SSHD), ("okta", "globex", OKTA)):
            r = server.http.post(f"/api/import/{vendor}", content="\n".join(lines).encode(),
                                 params={"customer": customer}, headers={"Servicetoken": token})
            assert r.json()["response"]["accepted"] == len(lines), r.text
        server.http.post("/api/import/nf", content=FLOW.encode(), params={"type": "flow"},
                         headers={"Servicetoken": token})
        assert server.services.lake.wait_indexed(len(SSHD) + len(OKTA) + 1, timeout=10)
        server.token = token
        server.call("auth/dataPolicyAdd", {"policy": {"name": "only-acme", "filters": {"event": "@customer:acme"}}},
                    token)
        server.call("auth/userAdd", {"user": {"username": "acme-analyst", "password": "user-password-1",
                                              "roles": ["analyst"], "dataPolicies": ["only-acme"]}}, token)
        server.acme = server.login("acme-analyst", "user-password-1")
        yield server


def catalog(srv, token=None, **options):
    # sshd's stamps carry no year (this year's Nov 21 is meant): a wide range.
    opts = {"range_from": T0 - 86_400_000, "range_to": T0 + 800 * 86_400_000}
    opts.update(options)
    res = srv.call(CALL, {"dataType": options.pop("dataType", "event"), "options": opts}, token or srv.token)
    return res, {f["name"]: f for f in res["fields"]}


def test_fields_per_source_with_exact_counts_types_and_examples(srv):
    res, fields = catalog(srv)
    assert res["total"] == 11 and res["dataType"] == "event"
    assert res["sources"] == [{"source": "sshd", "records": 7}, {"source": "okta", "records": 4}]
    # The common names, counted per source: sshd's line and Okta's JSON alike.
    assert fields["user.name"]["records"] == 11 and fields["user.name"]["sources"] == {"sshd": 7, "okta": 4}
    assert fields["event.outcome"]["sources"] == {"sshd": 7, "okta": 4}
    assert fields["source.ip"]["type"] == "ip" and fields["source.port"]["type"] == "number"
    assert fields["@message"]["type"] == "text" and fields["program"]["type"] == "keyword"
    assert fields["@timestamp"]["type"] == "date" and fields["@timestamp"]["records"] == 11
    # A source's own fields stay its own.
    assert fields["eventType"]["sources"] == {"okta": 4} and fields["program"]["sources"] == {"sshd": 7}
    assert fields["event.outcome"]["path"] == "@fields.event.outcome"
    assert fields["event.outcome"]["examples"] and set(fields["event.outcome"]["examples"]) <= {"failure", "success"}
    assert any(e.endswith("@example.com") for e in fields["user.name"]["examples"])
    assert len(fields["@message"]["examples"]) <= 3
    # Objects are listed by their leaves; most common first.
    assert "user" not in fields and "@fields" not in fields and "event" not in fields
    counts = [f["records"] for f in res["fields"]]
    assert counts == sorted(counts, reverse=True)


def test_the_query_range_and_dataset_narrow_the_catalog(srv):
    res, fields = catalog(srv, searchStr="event.outcome:failure")
    assert res["total"] == 8 and fields["user.name"]["sources"] == {"sshd": 6, "okta": 2}
    empty, _ = catalog(srv, range_from=T0 + 799 * 86_400_000)
    assert empty["total"] == 0 and empty["fields"] == [] and empty["sources"] == []
    flows, fields = catalog(srv, dataType="flow")
    assert flows["total"] == 1 and {"sip", "dip", "dp"} <= set(fields) and fields["dp"]["type"] == "number"


def test_a_data_policy_limits_what_the_catalog_counts(srv):
    res, fields = catalog(srv, srv.acme)
    assert res["total"] == 7 and res["sources"] == [{"source": "sshd", "records": 7}]
    assert "eventType" not in fields and fields["user.name"]["sources"] == {"sshd": 7}
    assert not any("example.com" in e for f in res["fields"] for e in f["examples"])


def test_bad_requests_name_the_field(srv):
    assert "options.sources" in srv.fail(CALL, {"options": {"sources": 0}}, srv.token)
    assert "options.sources" in srv.fail(CALL, {"options": {"sources": "many"}}, srv.token)
    assert "dataType" in srv.fail(CALL, {"dataType": "behavior", "options": {}}, srv.token)
    assert "position" in srv.fail(CALL, {"options": {"searchStr": "user.name:(a"}}, srv.token)


def test_records_past_the_splits_table_of_shapes_are_counted_and_found_all_the_same(tmp_path, monkeypatch):
    # Hostile input: every record of its own shape. A split's table of shapes
    # is bounded (storage/shape.py); the records past it keep existence terms,
    # and the catalog and _exists_ count both kinds exactly.
    monkeypatch.setattr(shape, "MAX_SHAPES", 3)
    lines = [json.dumps({"@timestamp": T0 + i, "@fields": {"host": "h1", f"k{i}": i}}) for i in range(40)]
    with running_server(tmp_path) as server:
        token = server.login()
        r = server.http.post("/api/import/app", content="\n".join(lines).encode(), params={"customer": "acme"},
                             headers={"Servicetoken": token})
        assert r.json()["response"]["accepted"] == 40, r.text
        assert server.services.lake.wait_indexed(40, timeout=10)
        (split_,) = server.services.lake.splits("event")
        assert split_.meta.shapes.spilled and len(split_.meta.shapes.sets) == 3
        server.token = token
        res, fields = catalog(server)
        assert res["total"] == 40 and fields["host"]["records"] == 40
        assert all(fields[f"k{i}"]["records"] == 1 for i in range(40))
        for query, total in (("_exists_:k2", 1), ("_exists_:k39", 1), ("_exists_:host", 40), ("_exists_:nope", 0)):
            found = server.call("ds/get_index_zoom_histogram_lv3", {"dataType": "event", "options": {
                "searchStr": query, "dateFacetField": "@timestamp", "range_from": T0 - 1, "range_to": T0 + 100}},
                token)
            assert found["hits"]["total"] == total, query
