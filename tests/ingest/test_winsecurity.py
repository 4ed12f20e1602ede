"""Windows events beyond Sysmon, from Winlogbeat and NXLog: 4688 with its parent, PowerShell 4103/4104,
7045 service installs, 4698 scheduled tasks, and the channel and id every Windows event carries under both
shippers' names. Golden records: fixtures/winsecurity.{txt,json}."""

from __future__ import annotations

import json
import time
from pathlib import Path

from seclake.ingest import parse_line
from seclake.ingest.winsecurity import pid

FIXTURES = Path(__file__).parent / "fixtures"
LINES = (FIXTURES / "winsecurity.txt").read_text(encoding="utf-8").splitlines()
# Lines 10-19: 4688, 4104, 4103, 7045, 4698, each from NXLog then Winlogbeat.
PAIRS = [(9 + 2 * i, 10 + 2 * i) for i in range(5)]


def _fields(line: str) -> dict:
    record, understood = parse_line(line, vendor="windows", dataset="event", received_ms=1714564801000)
    assert understood
    return record["@fields"]


def _common(fields: dict) -> dict:
    out = {key: fields.get(key) for key in ("process", "user", "file", "service", "powershell", "host",
                                             "EventID", "Channel")}
    # event.action and event.outcome: Winlogbeat sends its own (the task name), which stays.
    out["event"] = {key: fields["event"].get(key) for key in ("code", "provider", "category", "type")}
    out["channel"] = fields["winlog"]["channel"]
    return out


def test_both_shippers_give_the_same_common_names():
    for nxlog, beat in PAIRS:
        assert _common(_fields(LINES[nxlog])) == _common(_fields(LINES[beat])), f"lines {nxlog + 1}, {beat + 1}"


def test_process_creation_names_its_parent():
    process = _fields(LINES[9])["process"]
    assert process == {
        "executable": "C:\\Windows\\System32\\rundll32.exe", "name": "rundll32.exe",
        "command_line": "rundll32.exe C:\\Users\\carol\\AppData\\Local\\Temp\\x.dll,DllRegisterServer",
        "pid": 0x1A2C,
        "parent": {"executable": "C:\\Program Files\\Microsoft Office\\root\\Office16\\WINWORD.EXE",
                   "name": "WINWORD.EXE", "pid": 0x2EF0}}
    assert [pid(v) for v in ("0x1a2c", "4460", 12, "0xZZ", "-1", "0x" + "f" * 20, True, None)] == \
        [0x1A2C, 4460, 12, None, None, None, None, None]


def test_powershell_service_and_task_events():
    block = _fields(LINES[11])
    assert block["powershell"]["file"]["script_block_text"].startswith("IEX (New-Object Net.WebClient)")
    assert block["file"]["path"].endswith("stage.ps1") and block["user"] == {"name": "carol", "domain": "CORP"}
    pipeline = _fields(LINES[13])
    assert pipeline["powershell"]["command"] == {"name": "Invoke-WebRequest", "type": "Cmdlet"}
    assert pipeline["process"]["command_line"].endswith("-Uri http://198.51.100.23/b")
    assert pipeline["user"] == {"name": "carol", "domain": "CORP"}
    service = _fields(LINES[15])
    assert service["service"] == {"name": "PSEXESVC", "type": "user mode service"}
    assert service["event"]["action"] == "service-installed" and service["ImagePath"] == "%SystemRoot%\\PSEXESVC.exe"
    task = _fields(LINES[17])
    assert task["event"]["action"] == "scheduled-task-created" and task["TaskName"] == "\\Microsoft\\Windows\\Updater"


def test_every_windows_event_carries_its_channel_and_id_under_both_names():
    for line in LINES:
        fields = _fields(line)
        assert fields["winlog"]["channel"] == fields["Channel"]
        assert fields["event"]["code"] == str(fields["EventID"])
    # A JSON line with an EventID of its own that is no Windows event gets none of it.
    other = _fields('{"EventID": 7, "app": "billing", "msg": "invoice sent"}')
    assert "event" not in other and "winlog" not in other


def test_a_hostile_context_info_costs_linear_time():
    event = json.loads(LINES[13])  # NXLog's 4103
    started = time.perf_counter()
    for context in ("=" * 20_000 + "\r\n" + " " * 20_000, "\n" * 20_000, "        User = " + "\\" * 20_000):
        event["ContextInfo"] = context
        fields = _fields(json.dumps(event))
        assert fields["ContextInfo"] == context and fields["event"]["action"] == "executed-pipeline"
    assert time.perf_counter() - started < 1.0
