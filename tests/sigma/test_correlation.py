"""Sigma correlation rules, the Sigma specification's own examples (sigma-specification,
"Sigma Correlation Rules Specification" 2.0: event_count, value_count, temporal, and the complete
"Failed Logins Followed by Successful Login" file of four documents), written as the specification
shows them, imported into a real server, fed Windows events as Winlogbeat and NXLog send them
(the shipper alternating, so one group mixes both): each fires for the group the specification says,
never below its condition; and ``seclake rules import`` + ``seclake rules run`` over the same data
imported without them gives the same behaviors.
"""

from __future__ import annotations

import time
import pytest

from tests.cli.command import run
from tests.sigma.sigmahq import nxlog, winlogbeat

DAO = "ds/eventwatch_bucket_dao"
TEST = "ds/eventwatch_rule_test"

# The rule the specification's event_count and value_count examples name by id (the specification
# does not show it): a failed Windows logon, as its earlier draft and pySigma's tests write it.
FAILED_LOGON = """title: Windows Failed Logon Event
id: 5638f7c0-ac70-491d-8465-2a65075e0d86
name: failed_logon
description: Detects failed logon events on Windows systems.
logsource:
    product: windows
    service: security
detection:
    selection:
        EventID: 4625
    filter:
        SubjectUserName|endswith: $
    condition: selection and not filter
"""
MANY_FAILED = """title: Many failed logins
id: 0e95725d-7320-415d-80f7-004da920fc11
correlation:
    type: event_count
    rules:
        - 5638f7c0-ac70-491d-8465-2a65075e0d86
    group-by:
        - ComputerName
    timespan: 1h
    condition:
        gte: 100
"""
MANY_USERS = """title: Failed login
id: 0e95725d-7320-415d-80f7-004da920fc12
correlation:
    type: value_count
    rules:
        - 5638f7c0-ac70-491d-8465-2a65075e0d86
    group-by:
        - ComputerName
        - WorkstationName
    timespan: 1d
    condition:
        field: User
        gte: 100
"""
# The temporal example shows only its correlation section; its title, id and the three rules are ours.
RECON = """title: Reconnaissance commands in a row
id: 7b0a1f9e-4c1d-4f7e-9a63-1d2e3f4a5b6c
correlation:
    type: temporal
    rules:
        - recon_cmd_a
        - recon_cmd_b
        - recon_cmd_c
    group-by:
        - ComputerName
        - User
    timespan: 5m
level: high
---
title: Whoami
name: recon_cmd_a
logsource:
    category: process_creation
    product: windows
detection:
    selection:
        Image|endswith: '\\whoami.exe'
    condition: selection
---
title: Ipconfig all
name: recon_cmd_b
logsource:
    category: process_creation
    product: windows
detection:
    selection:
        Image|endswith: '\\ipconfig.exe'
        CommandLine|contains: '/all'
    condition: selection
---
title: Net user
name: recon_cmd_c
logsource:
    category: process_creation
    product: windows
detection:
    selection:
        Image|endswith:
            - '\\net.exe'
            - '\\net1.exe'
        CommandLine|contains: ' user'
    condition: selection
"""
# The specification's complete example, as it is written there.
FOLLOWED = """title: Correlation - Multiple Failed Logins Followed by Successful Login
id: b180ead8-d58f-40b2-ae54-c8940995b9b6
status: experimental
description: Detects multiple failed logins by a single user followed by a successful login of that user
references:
    - https://reference.com
author: Florian Roth (Nextron Systems)
date: 2023-06-16
correlation:
    type: temporal_ordered
    rules:
        - multiple_failed_login
        - successful_login
    group-by:
        - User
    timespan: 10m
falsepositives:
    - Unlikely
level: high
---
title: Multiple failed logons
id: a8418a5a-5fc4-46b5-b23b-6c73beb19d41
description: Detects multiple failed logins within a certain amount of time
name: multiple_failed_login
correlation:
    type: event_count
    rules:
        - failed_login
    group-by:
        - User
    timespan: 10m
    condition:
        gte: 10
---
title: Single failed login
id: 53ba33fd-3a50-4468-a5ef-c583635cfa92
name: failed_login
logsource:
    product: windows
    service: security
detection:
    selection:
        EventID:
            - 529
            - 4625
    condition: selection
---
title: Successful login
id: 4d0a2c83-c62c-4ed4-b475-c7e23a9269b8
description: Detects a successful login
name: successful_login
logsource:
    product: windows
    service: security
detection:
    selection:
        EventID:
            - 528
            - 4624
    condition: selection
"""
FILES = {"failed_logon.yml": FAILED_LOGON, "mr_many_failed.yml": MANY_FAILED, "mr_many_users.yml": MANY_USERS,
         "mr_recon.yml": RECON, "mr_failed_then_success.yml": FOLLOWED}
CORRELATIONS = {"0e95725d-7320-415d-80f7-004da920fc11", "0e95725d-7320-415d-80f7-004da920fc12",
                "7b0a1f9e-4c1d-4f7e-9a63-1d2e3f4a5b6c", "b180ead8-d58f-40b2-ae54-c8940995b9b6",
                "a8418a5a-5fc4-46b5-b23b-6c73beb19d41"}
# What the specification says fires on the events below (rule, key), and nothing else.
EXPECTED = sorted([
    ("0e95725d-7320-415d-80f7-004da920fc11", "DC01.corp.local"),          # 100 failures on DC01; DC02 99
    ("0e95725d-7320-415d-80f7-004da920fc12", "DC01.corp.local | WS7"),    # 100 users from WS7; WS8 99
    ("7b0a1f9e-4c1d-4f7e-9a63-1d2e3f4a5b6c", "WS7.corp.local | CORP\\jdoe"),  # a, b, c within 5m
    ("b180ead8-d58f-40b2-ae54-c8940995b9b6", "alice"),                   # 10 failures, then success
])
T0 = 1_795_168_800  # 2026-11-20T10:00:00Z, seconds


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(T0 + seconds)) + f".{int(seconds * 1000) % 1000:03d}Z"


def _system(event_id: int, record: int, computer: str, when: str, channel: str, provider: str, guid: str) -> dict:
    return {
        "Provider": {"#attributes": {"Name": provider, "Guid": guid}},
        "EventID": event_id, "Version": 0, "Level": 0, "Task": 12544, "Opcode": 0,
        "Keywords": "0x8010000000000000" if event_id == 4625 else "0x8020000000000000",
        "TimeCreated": {"#attributes": {"SystemTime": when}}, "EventRecordID": record,
        "Execution": {"#attributes": {"ProcessID": 652, "ThreadID": 2928}},
        "Channel": channel, "Computer": computer, "Security": {},
    }


def logon(event_id: int, record: int, user: str, computer: str, workstation: str, when: str) -> dict:
    """A Security 4625 (failed) or 4624 (successful) network logon, as the EVTX renders it."""
    data = {
        "SubjectUserSid": "S-1-0-0", "SubjectUserName": "-", "SubjectDomainName": "-", "SubjectLogonId": "0x0",
        "TargetUserSid": "S-1-0-0" if event_id == 4625 else "S-1-5-21-3623811015-3361044348-30300820-1013",
        "TargetUserName": user, "TargetDomainName": "CORP", "LogonType": "3", "LogonProcessName": "NtLmSsp ",
        "AuthenticationPackageName": "NTLM", "WorkstationName": workstation, "TransmittedServices": "-",
        "LmPackageName": "-", "KeyLength": "0", "ProcessId": "0x0", "ProcessName": "-",
        "IpAddress": "203.0.113.50", "IpPort": "51234",
    }
    if event_id == 4625:
        data.update({"Status": "0xc000006d", "FailureReason": "%%2313", "SubStatus": "0xc000006a"})
    else:
        data.update({"TargetLogonId": "0x8dcdc", "LogonGuid": "{00000000-0000-0000-0000-000000000000}",
                     "ImpersonationLevel": "%%1833", "RestrictedAdminMode": "-", "VirtualAccount": "%%1843",
                     "TargetLinkedLogonId": "0x0", "ElevatedToken": "%%1842"})
    return {"System": _system(event_id, record, computer, when, "Security", "Microsoft-Windows-Security-Auditing",
                              "54849625-5478-4994-A5BA-3E3B0328C30D"),
            "EventData": data}


def process(record: int, computer: str, image: str, command: str, when: str) -> dict:
    """A Sysmon event 1 (process creation), as the EVTX renders it."""
    system = _system(1, record, computer, when, "Microsoft-Windows-Sysmon/Operational", "Microsoft-Windows-Sysmon",
                     "5770385F-C22A-43E0-BF4C-06F5698FFBD9")
    system.update({"Version": 5, "Level": 4, "Task": 1, "Keywords": "0x8000000000000000"})
    return {"System": system, "EventData": {
        "RuleName": "-", "UtcTime": when[:23].replace("T", " "), "ProcessGuid": "{0197231E-005A-6928-A50B-000000000D00}",
        "ProcessId": 4460 + record, "Image": image, "FileVersion": "10.0.19041.1 (WinBuild.160101.0800)",
        "OriginalFileName": image.rsplit("\\", 1)[-1].upper(), "CommandLine": command,
        "CurrentDirectory": "C:\\Users\\jdoe\\", "User": "CORP\\jdoe", "LogonId": "0x3e7", "IntegrityLevel": "Medium",
        "ParentProcessId": 3120, "ParentImage": "C:\\Windows\\System32\\cmd.exe", "ParentCommandLine": "cmd.exe",
    }}


def events() -> list[str]:
    """The lines sent, in time order, each shipper in turn."""
    out: list[tuple[float, dict]] = []
    # event_count / value_count: DC01 100 failures by 100 users from WS7; DC02 99 by 99 users from WS8.
    for i in range(100):
        out.append((i * 6, logon(4625, 1000 + i, f"u{i:03d}", "DC01.corp.local", "WS7", "")))
    for i in range(99):
        out.append((i * 6 + 1, logon(4625, 2000 + i, f"v{i:03d}", "DC02.corp.local", "WS8", "")))
    # temporal_ordered: alice 10 failures then success; bob 9 then success; carol success then 10.
    for i in range(10):
        out.append((60 + i * 10, logon(4625, 3000 + i, "alice", "DC03.corp.local", "WS9", "")))
        out.append((60 + i * 10 + 1, logon(4625, 3100 + i, "carol", "DC03.corp.local", "WS9", "")))
        if i < 9:
            out.append((60 + i * 10 + 2, logon(4625, 3200 + i, "bob", "DC03.corp.local", "WS9", "")))
    out.append((200, logon(4624, 3300, "alice", "DC03.corp.local", "WS9", "")))
    out.append((201, logon(4624, 3301, "bob", "DC03.corp.local", "WS9", "")))
    out.append((30, logon(4624, 3302, "carol", "DC03.corp.local", "WS9", "")))
    # temporal: WS7 runs c, a, b within 5m; WS8 only a and b; WS9 a, b, then c 6 minutes later.
    sysroot = "C:\\Windows\\System32\\"
    recon = {"a": (sysroot + "whoami.exe", "whoami /all"), "b": (sysroot + "ipconfig.exe", "ipconfig /all"),
             "c": (sysroot + "net.exe", "net user /domain")}
    for host, plan in (("WS7.corp.local", (("c", 10), ("a", 70), ("b", 130))),
                       ("WS8.corp.local", (("a", 10), ("b", 20))),
                       ("WS9.corp.local", (("a", 10), ("b", 20), ("c", 400)))):
        for n, (which, at) in enumerate(plan):
            out.append((at, process(4000 + n, host, *recon[which], "")))
    out.sort(key=lambda x: x[0])
    lines = []
    for n, (at, event) in enumerate(out):
        when = _when(at)
        event["System"]["TimeCreated"]["#attributes"]["SystemTime"] = when
        if "UtcTime" in event["EventData"]:
            event["EventData"]["UtcTime"] = when[:23].replace("T", " ")
        lines.append((winlogbeat if n % 2 else nxlog)(event))
    return lines


def _send(srv, lines: list[str]) -> None:
    r = srv.http.post("/api/import/windows", content="\n".join(lines).encode(), headers={"Servicetoken": srv.token})
    assert r.json()["response"]["accepted"] == len(lines), r.text


def _fired(srv, want: int) -> list[tuple[str, str]]:
    """(rule, key) of the correlation rules' behaviors, once ``want`` are there (or 20 s passed)."""
    deadline = time.monotonic() + 20
    query = " OR ".join(f'behaviorRule:"{name}"' for name in sorted(CORRELATIONS))
    while True:
        got = srv.call("ds/fsm_behavior_search", {"options": {
            "range_from": 0, "range_to": 4_000_000_000_000, "fetchLimit": 100, "searchStr": query}}, token=srv.token)
        hits = sorted((h["_source"]["behaviorRule"], h["_source"]["key"]) for h in got["hits"]["hits"])
        if len(hits) >= want or time.monotonic() > deadline:
            time.sleep(0.5 if len(hits) >= want else 0)  # anything more would show now
            return hits if len(hits) < want else _fired_now(srv, query)
        time.sleep(0.2)


def _fired_now(srv, query: str) -> list[tuple[str, str]]:
    got = srv.call("ds/fsm_behavior_search", {"options": {
        "range_from": 0, "range_to": 4_000_000_000_000, "fetchLimit": 100, "searchStr": query}}, token=srv.token)
    return sorted((h["_source"]["behaviorRule"], h["_source"]["key"]) for h in got["hits"]["hits"])


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return events()


@pytest.fixture(scope="module")
def streamed(tmp_path_factory, lines):
    from tests.conftest import running_server  # noqa: PLC0415

    with running_server(tmp_path_factory.mktemp("sigma-correlation")) as srv:
        srv.token = srv.login()
        for text in FILES.values():  # each file as one text, as a user pastes it
            srv.call(DAO, {"action": "add", "sigma": text}, token=srv.token)
        _send(srv, lines)
        yield srv, _fired(srv, len(EXPECTED))


def test_the_specification_examples_fire_as_it_says_from_both_shippers(streamed):
    _, fired = streamed
    assert fired == EXPECTED


def test_a_correlation_file_is_one_unit_and_its_rules_feed_it_only(streamed):
    srv, _ = streamed
    rules = {r["name"]: r for r in srv.call(DAO, {"action": "list"}, token=srv.token)["buckets"]}
    outer = rules["b180ead8-d58f-40b2-ae54-c8940995b9b6"]
    assert outer["correlation"]["type"] == "temporal_ordered" and outer["correlation"]["rules"] == [
        "a8418a5a-5fc4-46b5-b23b-6c73beb19d41", "4d0a2c83-c62c-4ed4-b475-c7e23a9269b8"]
    assert (outer["level"], outer["riskScore"], outer["sigmaId"]) == ("high", 5000, outer["name"])
    assert outer["sigma"].startswith("title: Correlation - Multiple Failed Logins")
    # generate defaults to false: the file's other rules, the inner correlation too, make no behavior.
    for name in ("a8418a5a-5fc4-46b5-b23b-6c73beb19d41", "53ba33fd-3a50-4468-a5ef-c583635cfa92",
                 "4d0a2c83-c62c-4ed4-b475-c7e23a9269b8"):
        assert rules[name]["generate"] is False
    # Rules named only by a Sigma name are stored under it.
    assert {"recon_cmd_a", "recon_cmd_b", "recon_cmd_c"} <= set(rules)
    # The standalone rule the spec's examples name by id still makes its own behaviors.
    assert rules["5638f7c0-ac70-491d-8465-2a65075e0d86"].get("generate", True) is True


def test_rule_test_says_what_one_event_is_to_a_correlation(streamed, lines):
    srv, _ = streamed
    failure = next(line for line in lines if '"alice"' in line and "4625" in line)
    got = srv.call(TEST, {"sigma": FOLLOWED.split("---")[1], "input": failure}, token=srv.token)
    assert got["matched"] and got["key"] == "alice" and not got["wouldFire"]
    assert "matched by 53ba33fd-3a50-4468-a5ef-c583635cfa92, counts for alice" in got["correlationNote"]
    success = next(line for line in lines if '"alice"' in line and "4624" in line)
    quiet = srv.call(TEST, {"sigma": FOLLOWED.split("---")[1], "input": success}, token=srv.token)
    assert not quiet["matched"] and "none of its rules matches" in quiet["correlationNote"]


def test_a_correlation_naming_a_missing_rule_is_refused_naming_it(streamed):
    srv, _ = streamed
    orphan = MANY_FAILED.replace("0e95725d-7320-415d-80f7-004da920fc11", "0e95725d-7320-415d-80f7-004da920fc99") \
        .replace("5638f7c0-ac70-491d-8465-2a65075e0d86", "5638f7c0-ac70-491d-8465-2a65075e0d99")
    message = srv.fail(DAO, {"action": "add", "sigma": orphan}, srv.token, status=400)
    assert "rule not found" in message and "5638f7c0-ac70-491d-8465-2a65075e0d99" in message
    # In seclake's own format, the rule book refuses it, naming what is missing.
    bucket = {"name": "orphan", "behavior": "Orphan", "riskScore": 1,
              "correlation": {"type": "event_count", "rules": ["no-such-rule"], "timespan": "5m",
                              "condition": {"gte": 2}}}
    message = srv.fail(DAO, {"action": "add", "bucket": bucket}, srv.token, status=400)
    assert "no-such-rule" in message and "no such rule" in message
    # And a rule a correlation names cannot be deleted from under it.
    message = srv.fail(DAO, {"action": "delete", "name": "recon_cmd_a"}, srv.token, status=400)
    assert "7b0a1f9e-4c1d-4f7e-9a63-1d2e3f4a5b6c" in message


def test_what_seclake_does_not_run_is_refused_with_its_reason(streamed):
    srv, _ = streamed
    value_sum = MANY_FAILED.replace("event_count", "value_sum").replace("gte: 100", "gte: 100\n        field: KeyLength") \
        .replace("fc11", "fc31")
    assert "correlation type" in srv.fail(DAO, {"action": "add", "sigma": value_sum}, srv.token, status=400)
    extended = RECON.split("---")[0].replace("fc6c\n", "fc6d\n").replace(
        "    timespan: 5m", "    timespan: 5m\n    condition: recon_cmd_a and not recon_cmd_b")
    message = srv.fail(DAO, {"action": "add", "sigma": extended}, srv.token, status=400)
    assert "correlation condition" in message or "invalid Sigma" in message


def test_backfill_gives_what_streaming_gives(tmp_path, lines, streamed):
    """The same lines imported with no Sigma rule, then ``seclake rules import`` (the five files
    together: the correlations find the rules of the other files) and ``seclake rules run``."""
    from tests.conftest import running_server  # noqa: PLC0415

    _, fired = streamed
    data = tmp_path / "data"
    with running_server(data) as srv:
        srv.token = srv.login()
        _send(srv, lines)
        time.sleep(1.5)  # searchable and saved before the server stops
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in FILES.items():
        (repo / name).write_text(text)
    imported = run("rules", "import", str(repo), "--data-dir", str(data))
    assert imported.exit_code == 0, imported.output
    assert "Sigma: 11 rules read, 11 imported, 0 filtered out, 0 skipped" in imported.output, imported.output
    ran = run("rules", "run", "--data-dir", str(data))
    assert ran.exit_code == 0, ran.output
    with running_server(data) as srv:
        srv.token = srv.login()
        assert _fired(srv, len(EXPECTED)) == fired == EXPECTED


def test_import_of_a_lone_correlation_needs_its_rules(tmp_path):
    """A correlation file without the rule it names is skipped with that reason; imported with it, both."""
    from seclake.sigma.importer import read

    (tmp_path / "mr.yml").write_text(MANY_FAILED)
    alone = read([tmp_path / "mr.yml"])
    assert [(s.reason, "5638f7c0-ac70-491d-8465-2a65075e0d86" in s.detail) for s in alone.skipped] == [
        ("rule not found", True)] and alone.rules == []
    (tmp_path / "failed.yml").write_text(FAILED_LOGON)
    both = read([tmp_path])
    assert not both.skipped and sorted(r.name for r in both.rules) == [
        "0e95725d-7320-415d-80f7-004da920fc11", "5638f7c0-ac70-491d-8465-2a65075e0d86"]



def test_a_file_is_imported_whole_or_not_at_all(tmp_path):
    """One document of a correlation's file that cannot run skips the file: none of its rules is imported."""
    from seclake.sigma.importer import read

    broken = RECON.replace("title: Ipconfig all\nname: recon_cmd_b\nlogsource:\n    category: process_creation\n"
                           "    product: windows", "title: Ipconfig all\nname: recon_cmd_b\nlogsource:\n"
                           "    category: process_creation\n    product: macos")
    assert broken != RECON
    (tmp_path / "mr_recon.yml").write_text(broken)
    report = read([tmp_path])
    assert report.rules == [] and [(s.reason, s.file.endswith("mr_recon.yml")) for s in report.skipped] == [
        ("log source not supported", True)]


def test_hostile_correlation_files_are_skipped_with_what_and_where(tmp_path):
    """Cycles, a timespan past seclake's 7 days, too many documents, broken YAML: each file skipped with
    its reason, never a crash or a half import."""
    from seclake.sigma.importer import read

    cycle = ("title: A\nid: 11111111-1111-4111-8111-111111111111\nname: a\ncorrelation:\n  type: temporal\n"
             "  rules: [b, recon_cmd_a]\n  group-by: [User]\n  timespan: 5m\n---\n"
             "title: B\nid: 22222222-2222-4222-8222-222222222222\nname: b\ncorrelation:\n  type: temporal\n"
             "  rules: [a, recon_cmd_a]\n  group-by: [User]\n  timespan: 5m\n---\n" + RECON.split("---\n")[1])
    files = {
        "cycle.yml": cycle,
        "year.yml": FOLLOWED.replace("timespan: 10m\nfalsepositives", "timespan: 1y\nfalsepositives"),
        "many.yml": "\n---\n".join([FAILED_LOGON.replace("5638f7c0", f"{n:08x}") for n in range(70)]),
        "broken.yml": FOLLOWED.replace("    group-by:\n        - User\n    timespan: 10m\nfalse",
                                       "    group-by: [User\n    timespan: 10m\nfalse"),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    report = read([tmp_path])
    assert report.rules == [] and not report.errors
    reasons = {s.file.rsplit("/", 1)[-1]: (s.reason, s.detail) for s in report.skipped}
    assert reasons["cycle.yml"][0] == "invalid Sigma" and "cycle" in reasons["cycle.yml"][1]
    assert reasons["year.yml"][0] == "invalid for seclake" and "7d" in reasons["year.yml"][1]
    assert reasons["many.yml"][0] == "invalid Sigma" and "70 YAML documents" in reasons["many.yml"][1]
    assert reasons["broken.yml"][0] == "invalid Sigma"
