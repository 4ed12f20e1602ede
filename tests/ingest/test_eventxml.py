"""Sysmon for Linux over syslog: its XML events parsed into Sysmon's fields and common names, and
hostile XML never parsed as one (nor raised on)."""

from __future__ import annotations

import pytest

from seclake.ingest import parse_line
from seclake.ingest.eventxml import MAX_DATA, parse
from tests.ingest import sysmonlinux


def _parse(line: str) -> dict:
    record, understood = parse_line(line, vendor="linux", dataset="event", received_ms=1714564801000)
    assert understood
    return record


@pytest.mark.parametrize("rfc", ["5424", "3164"])
def test_a_process_start_gets_sysmons_fields_and_the_common_names(rfc):
    record = _parse(sysmonlinux.process("2024-05-01 12:07:00.120", "/usr/bin/base64", "base64 -d /tmp/p.b64",
                                        rfc=rfc))
    f = record["@fields"]
    assert record["@timestamp"] == 1714565220120  # Sysmon's UtcTime, to the millisecond
    assert (f["EventID"], f["Channel"], f["SourceName"], f["Computer"]) == (
        1, "Linux-Sysmon/Operational", "Linux-Sysmon", "web01")
    assert (f["Image"], f["CommandLine"], f["ParentImage"]) == ("/usr/bin/base64", "base64 -d /tmp/p.b64",
                                                                "/usr/bin/bash")
    assert f["event"]["code"] == "1" and f["event"]["category"] == "process" and f["event"]["type"] == "start"
    assert f["winlog"]["channel"] == "Linux-Sysmon/Operational" and f["host"]["name"] == "web01"
    assert f["process"]["executable"] == "/usr/bin/base64" and f["process"]["name"] == "base64"
    assert f["process"]["command_line"] == "base64 -d /tmp/p.b64" and f["process"]["pid"] == 8246
    assert f["process"]["parent"]["executable"] == "/usr/bin/bash" and f["user"]["name"] == "alice"
    assert f["program"] == "sysmon"


def test_a_file_and_a_connection_event():
    created = _parse(sysmonlinux.file_created("2024-05-01 12:07:01.000", "/usr/bin/wget", "/tmp/x y.sh"))["@fields"]
    assert created["TargetFilename"] == "/tmp/x y.sh" and created["event"]["category"] == "file"
    assert created["file"] == {"path": "/tmp/x y.sh", "name": "x y.sh", "directory": "/tmp", "extension": "sh"}
    connected = _parse(sysmonlinux.connection("2024-05-01 12:07:02.000", "/usr/bin/bash", "203.0.113.50",
                                              4444))["@fields"]
    assert connected["destination"] == {"ip": "203.0.113.50", "port": 4444}
    assert connected["network"]["transport"] == "tcp" and connected["network"]["direction"] == "egress"


def test_escaped_values_come_back_as_sent():
    record = _parse(sysmonlinux.process("2024-05-01 12:07:00.120", "/usr/bin/sh",
                                        'sh -c "echo <x> & id > /tmp/o"'))
    assert record["@fields"]["CommandLine"] == 'sh -c "echo <x> & id > /tmp/o"'


@pytest.mark.parametrize("msg", [
    # entity expansion (billion laughs) and external entities: a DTD is refused
    '<?xml version="1.0"?><!DOCTYPE Event [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    '<Event><System><EventID>1</EventID></System><EventData><Data Name="x">&b;</Data></EventData></Event>',
    '<!DOCTYPE Event [<!ENTITY x SYSTEM "file:///etc/passwd">]><Event><System><EventID>1</EventID></System>'
    '<EventData><Data Name="x">&x;</Data></EventData></Event>',
    "<Event><System><EventID>1</EventID></System><EventData>" + "<Data Name='x'>" * 2000,  # unclosed, deep
    "<Event><System><EventID>x</EventID></System><EventData></EventData></Event>",  # no id
    "<Event><System><EventID>1</EventID></System></Event>",  # no data
    "<Event><System><EventID>1</EventID></System><EventData><Data>no name</Data></EventData></Event>",
    "<Event><System><EventID>1</EventID></System><EventData><Data Name='a'><b/></Data></EventData></Event>",
    "<Event><System><EventID>1</EventID></System><EventData>"
    + "".join(f"<Data Name='d{i}'>v</Data>" for i in range(MAX_DATA + 1)) + "</EventData></Event>",
    "<Other/>",
])
def test_hostile_or_other_xml_is_not_parsed_as_an_event_and_keeps_its_line(msg):
    assert parse(msg) is None
    line = f"<14>1 2024-05-01T12:07:00.120Z web01 sysmon 1102 - - {msg}"
    record = _parse(line)
    assert "EventID" not in record["@fields"] and record["@message"] == line
