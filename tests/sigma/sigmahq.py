"""SigmaHQ's rules and regression data (../shared/sigma, DRL 1.1), read in place for tests, and the
recorded Windows events as the two shippers seclake reads would send them.

The archive is never copied into the repository: it is extracted to a
temporary directory per test module (``extract``). Its regression events are
EVTX rendered as ``{"Event": {"System": ..., "EventData": ...}}`` (several
may follow each other in one file); ``winlogbeat`` and ``nxlog`` render one
as the JSON line each shipper sends: Winlogbeat 8's (``winlog.*``, event
data as strings under ``winlog.event_data``, ``event.code``) and NXLog's
``im_msvistalog`` + ``to_json()`` (the event data flat beside NXLog's own
header fields).
"""

from __future__ import annotations

import json
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ARCHIVE = Path(__file__).resolve().parents[2] / ".." / "shared" / "sigma" / "sigmahq-8eaafff.tar.gz"


def extract(into: Path) -> Path:
    """The archive's root directory, extracted under ``into``; skips the test when shared/ is
    absent (fails under CI=true: CI has shared/ beside the project, and must run these)."""
    if not ARCHIVE.exists():
        missing = f"SigmaHQ's archive is not at {ARCHIVE} (shared/ beside the project)"
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(into, filter="data")
    (root,) = [p for p in into.iterdir() if p.is_dir()]
    return root


def rule_files(root: Path) -> dict[str, Path]:
    """Sigma rule id -> its file, over every rules*/ folder."""
    out = {}
    for path in sorted(root.glob("rules*/**/*.yml")):
        m = re.search(r"^id:\s*([0-9a-fA-F-]{36})\s*$", path.read_text(encoding="utf-8"), re.MULTILINE)
        if m:
            out[m.group(1).lower()] = path
    return out


@dataclass(frozen=True)
class Regression:
    folder: str  # relative to regression_data/
    rule_id: str
    events: tuple[dict[str, Any], ...]
    match_count: int  # how many of the events the rule fires on (SigmaHQ's match_count)


def regressions(root: Path) -> list[Regression]:
    """Every regression test that runs (info.yml lists its tests) with its recorded events."""
    out = []
    for info_path in sorted((root / "regression_data").rglob("info.yml")):
        info = yaml.safe_load(info_path.read_text(encoding="utf-8"))
        if not info.get("regression_tests_info"):
            continue  # commented out in SigmaHQ (a raw test, no event)
        events = []
        for path in sorted(info_path.parent.glob("*.json")):
            events.extend(_events(path.read_text(encoding="utf-8")))
        count = sum(int(test.get("match_count", 1)) for test in info["regression_tests_info"])
        for meta in info["rule_metadata"]:
            out.append(Regression(str(info_path.parent.relative_to(root / "regression_data")),
                                  str(meta["id"]).lower(), tuple(events), count))
    return out


def _events(text: str) -> list[dict[str, Any]]:
    """The events of one file: one JSON object, or several one after another."""
    decoder, out, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return out
        obj, at = decoder.raw_decode(text, at)
        out.append(obj["Event"])


def _attrs(node: Any) -> dict[str, Any]:
    return node.get("#attributes", {}) if isinstance(node, dict) else {}


def _text(value: Any) -> str:
    # Both shippers render the XML's text: numbers and booleans arrive as strings.
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict | list) else str(value)


def _data(event: dict[str, Any]) -> dict[str, str]:
    data = event.get("EventData") or {}
    if not data and isinstance(event.get("UserData"), dict):  # e.g. WMI-Activity: <UserData><Op...>fields
        (inner,) = event["UserData"].values()
        data = {k: v for k, v in inner.items() if k != "#attributes"}
    return {k: _text(v) for k, v in data.items() if v is not None and k != "#attributes"}


def winlogbeat(event: dict[str, Any]) -> str:
    """The event as Winlogbeat 8 sends it (its Elasticsearch output's document)."""
    system = event["System"]
    provider = _attrs(system["Provider"])
    when = _attrs(system["TimeCreated"])["SystemTime"]
    execution = _attrs(system.get("Execution"))
    winlog: dict[str, Any] = {
        "api": "wineventlog",
        "channel": system["Channel"],
        "computer_name": system["Computer"],
        "event_id": str(system["EventID"]),
        "provider_name": provider.get("Name"),
        "provider_guid": "{" + provider["Guid"] + "}" if provider.get("Guid") else None,
        "record_id": str(system.get("EventRecordID")),
        "task": str(system.get("Task", "")),
        "opcode": "Info",
        "version": system.get("Version"),
        "process": {"pid": execution.get("ProcessID"), "thread": {"id": execution.get("ThreadID")}},
        "user": {"identifier": _attrs(system.get("Security")).get("UserID")},
        "event_data": _data(event),
    }
    doc = {
        "@timestamp": when,
        "agent": {"type": "winlogbeat", "version": "8.14.0", "name": system["Computer"]},
        "ecs": {"version": "8.0.0"},
        "event": {"code": str(system["EventID"]), "provider": provider.get("Name"), "kind": "event",
                  "created": when},
        "host": {"name": system["Computer"]},
        "log": {"level": "information"},
        "message": f"Event {system['EventID']} from {provider.get('Name')}",
        "winlog": {k: v for k, v in winlog.items() if v is not None},
    }
    return json.dumps(doc)


def nxlog(event: dict[str, Any]) -> str:
    """The event as NXLog sends it (im_msvistalog, to_json()): its header fields, the event data beside."""
    system = event["System"]
    provider = _attrs(system["Provider"])
    when = _attrs(system["TimeCreated"])["SystemTime"]
    execution = _attrs(system.get("Execution"))
    doc: dict[str, Any] = {
        "EventTime": when[:19].replace("T", " "),
        "Hostname": system["Computer"],
        "Keywords": system.get("Keywords"),
        "EventType": "INFO",
        "SeverityValue": 2,
        "Severity": "INFO",
        "EventID": system["EventID"],
        "SourceName": provider.get("Name"),
        "ProviderGuid": "{" + provider["Guid"] + "}" if provider.get("Guid") else None,
        "Version": system.get("Version"),
        "Task": system.get("Task"),
        "OpcodeValue": system.get("Opcode"),
        "RecordNumber": system.get("EventRecordID"),
        "ProcessID": execution.get("ProcessID"),
        "ThreadID": execution.get("ThreadID"),
        "Channel": system["Channel"],
        "UserID": _attrs(system.get("Security")).get("UserID"),
        "Opcode": "Info",
    }
    doc = {k: v for k, v in doc.items() if v is not None}
    doc.update(_data(event))
    doc.update({"EventReceivedTime": when[:19].replace("T", " "), "SourceModuleName": "eventlog",
                "SourceModuleType": "im_msvistalog"})
    return json.dumps(doc)
