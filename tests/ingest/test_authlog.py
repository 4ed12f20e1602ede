"""sshd, sudo and su lines in common (ECS) names: golden lines are in
fixtures/authlog.txt and sshd.txt; here, what a user queries, and hostile lines."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.ingest.authlog import fields_of

SEARCH = "ds/get_index_zoom_histogram_lv3"
LINES = [
    "<38>Nov 20 10:00:07 bastion sshd[3001]: Failed password for invalid user oracle from 218.92.84.133 port 1166 ssh2",
    "<38>Nov 20 10:00:08 bastion sshd[3001]: Failed password for root from 218.92.84.140 port 1167 ssh2",
    "<38>Nov 20 10:00:09 bastion sshd[3002]: Accepted password for alice from 198.51.100.4 port 40022 ssh2",
    "<85>Nov 20 10:00:10 bastion sudo:      bob : 3 incorrect password attempts ; TTY=pts/1 ; PWD=/home/bob ; USER=root ; COMMAND=/bin/cat /etc/shadow",
    "<85>Nov 20 10:00:11 db1 su[2211]: FAILED su for root by mallory",
    "<38>Nov 20 10:00:12 bastion sshd[3004]: Server listening on 0.0.0.0 port 22.",
]


def test_one_query_on_common_names_finds_failures_of_every_source(start_server):
    srv = start_server()
    token = srv.login()
    r = srv.http.post("/api/import/linux", content="\n".join(LINES).encode(),
                      headers={"Servicetoken": token, "Content-Type": "text/plain"})
    assert r.status_code == 200 and r.json()["response"]["accepted"] == 6, r.text
    srv.services.lake.flush()

    def search(query, facets=()):
        kargs = {"partition": "default", "dataType": "event", "options": {
            "dateFacetField": "@timestamp", "searchStr": query, "fetchLimit": 20, "range_from": 0,
            "range_to": 4_102_444_800_000, "facets": {"facets": [{"field": f, "size": 10} for f in facets]}}}
        return srv.call(SEARCH, kargs, token)

    failures = search("event.category:authentication AND event.outcome:failure", facets=["user.name", "process.name"])
    assert failures["hits"]["total"] == 4
    users = {b["key"]: b["doc_count"] for b in failures["aggregations"]["user.name"]["buckets"]}
    assert users == {"oracle": 1, "root": 1, "bob": 1, "mallory": 1}
    programs = {b["key"]: b["doc_count"] for b in failures["aggregations"]["process.name"]["buckets"]}
    assert programs == {"sshd": 2, "sudo": 1, "su": 1}
    # Windows (NXLog JSON) failures answer the same query.
    windows = ('{"EventID":4625,"Channel":"Security","TargetUserName":"administrator","TargetDomainName":"CORP",'
               '"IpAddress":"218.92.84.150","IpPort":"51515","LogonType":"3"}')
    r = srv.http.post("/api/import/windows", content=windows.encode(),
                      headers={"Servicetoken": token, "Content-Type": "text/plain"})
    assert r.status_code == 200, r.text
    srv.services.lake.flush()
    everywhere = search("event.category:authentication AND event.outcome:failure", facets=["user.name"])
    assert everywhere["hits"]["total"] == 5
    assert {b["key"] for b in everywhere["aggregations"]["user.name"]["buckets"]} == {
        "oracle", "root", "bob", "mallory", "administrator"}
    assert search('source.ip:"218.92.84.0/24"')["hits"]["total"] == 3
    # Addresses are addresses: a network finds both sshd attackers, and only them.
    assert search('source.ip:"218.92.84.0/24" AND process.name:sshd')["hits"]["total"] == 2
    assert search("source.port:[1166 TO 1167]")["hits"]["total"] == 2
    assert search("user.name:alice AND event.outcome:success")["hits"]["total"] == 1
    assert search("user.target.name:root AND event.action:sudo")["hits"]["total"] == 1


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["sshd", "sudo", "su"]),
       st.sampled_from(["Failed password for ", "Accepted publickey for ", "Invalid user ", "pam_unix(su:auth): ",
                        " alice : ", "Disconnected from user ", "Connection closed by "]),
       st.text(max_size=300))
def test_mutated_lines_give_fields_or_none_never_a_fault(program, start, rest):
    out = fields_of(program, start + rest)
    assert out is None or "event" in out


def test_a_long_hostile_line_costs_linear_time():
    line = "Failed password for " + "invalid user " * 20_000 + "x from " + "1." * 30_000
    started = time.perf_counter()
    fields_of("sshd", line)
    fields_of("sudo", " a : " + "X=y ; " * 30_000)
    assert time.perf_counter() - started < 5.0  # measured: ~20 ms; backtracking would take hours
