"""The readable message of a JSON event (ingest/message.py): the source's own where it has one,
else a summary line by source; the raw line stays in @message. Every fixture line's message is
in fixtures/<source>.json (test_golden.py); here, one per source and the rules around it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.demo.auth import format_windows, logon_fields
from seclake.demo.edr import format_line as edr_line
from seclake.ingest import parse_line
from seclake.ingest.message import MAX_SUMMARY, readable

RECEIVED = 1714564801000


def _record(line: str, vendor: str = "v", dataset: str = "event") -> dict:
    out = parse_line(line, vendor=vendor, dataset=dataset, received_ms=RECEIVED)
    assert out is not None and out[1], line
    return out[0]


def _message(line: str, **kw) -> str | None:
    return _record(line, **kw)["@fields"].get("message")


def test_a_windows_logon_failure_reads_as_windows_says_it() -> None:
    line = format_windows(RECEIVED, "acme", "DC01.acme.local",
                          logon_fields(4625, "DC01.acme.local", "jdoe", "ACME", ip="10.0.0.5", port=51515))
    record = _record(line, vendor="windows")
    assert record["@fields"]["message"] == "4625 An account failed to log on: ACME\\jdoe from 10.0.0.5 (logon type 3)"
    assert record["@message"] == line  # the raw line, as the interface says


def test_the_sources_own_message_comes_first() -> None:
    rendered = "An account failed to log on.\r\n\r\nSubject:\r\n\tSecurity ID:\t\tS-1-0-0"
    nxlog = {"EventTime": "2026-11-20 10:00:00", "Hostname": "DC01", "EventID": 4625, "Channel": "Security",
             "TargetUserName": "jdoe", "Message": rendered}
    assert _message(json.dumps(nxlog)) == rendered
    winlogbeat = {"@timestamp": "2026-11-20T10:00:00Z", "message": "An account failed to log on.",
                  "winlog": {"channel": "Security", "event_id": "4625", "event_data": {"TargetUserName": "jdoe"}}}
    assert _message(json.dumps(winlogbeat)) == "An account failed to log on."  # its own, untouched
    okta = {"eventType": "user.session.start", "actor": {"alternateId": "a@x.com"}, "published": "2024-05-01T12:00:00Z",
            "displayMessage": "User login to Okta", "outcome": {"result": "FAILURE"}}
    assert _message(json.dumps(okta)) == "User login to Okta"


def test_a_proxy_request_reads_as_its_request_line() -> None:
    squid = {"@timestamp": "2024-05-01T12:00:00Z", "client_ip": "10.1.2.3", "user": "jdoe", "method": "GET",
             "url": "https://example.com/a?b=1", "host": "example.com", "status": 403, "bytes": 120}
    assert _message(json.dumps(squid), vendor="squid") == "GET https://example.com/a?b=1 403 jdoe (10.1.2.3)"


def test_an_edr_process_start_reads_as_who_ran_what() -> None:
    line = edr_line(RECEIVED, "acme", host="WS01", user="ACME\\jdoe", process="C:\\Tools\\mimikatz.exe",
                    cmdline="mimikatz.exe sekurlsa::logonpasswords", parent="C:\\Windows\\System32\\cmd.exe",
                    pid=4, ppid=8, sha256=None, signed=False, integrity="High", sensor="s1")
    assert _message(line, vendor="edr") == \
        "WS01: ACME\\jdoe ran mimikatz.exe sekurlsa::logonpasswords (parent C:\\Windows\\System32\\cmd.exe)"


def test_a_cloud_call_reads_as_its_action_who_where_and_outcome() -> None:
    trail = {"eventVersion": "1.08", "eventSource": "signin.amazonaws.com", "eventName": "ConsoleLogin",
             "eventTime": "2024-05-01T12:00:00Z", "userIdentity": {"type": "IAMUser", "userName": "alice"},
             "sourceIPAddress": "203.0.113.5", "errorMessage": "Failed authentication",
             "responseElements": {"ConsoleLogin": "Failure"}}
    assert _message(json.dumps(trail)) == "ConsoleLogin: alice from 203.0.113.5 (failure: Failed authentication)"


def test_no_message_is_made_up_or_overwritten() -> None:
    # A JSON line of no known shape shows its raw line; a record sent with its own @message has one.
    assert _message('{"a": 1, "b": "two"}') is None
    shaped = {"@message": "my own words", "@fields": {"EventID": 4625, "TargetUserName": "jdoe", "Channel": "Security"}}
    record = _record(json.dumps(shaped))
    assert record["@message"] == "my own words" and "message" not in record["@fields"]
    # The line's own message field stays, whatever it holds.
    odd = {"EventID": 4625, "TargetUserName": "jdoe", "Channel": "Security", "message": {"nested": True}}
    assert _message(json.dumps(odd)) == {"nested": True}
    # A flow's row is made of its ends: no message.
    proxy = '{"method": "GET", "url": "http://x/", "sip": "10.0.0.1", "dip": "10.0.0.2"}'
    assert "message" not in _record(proxy, dataset="flow")["@fields"]
    # Syslog, CEF and key=value lines read as they are: their @message is the line.
    assert "message" not in _record("<38>May  1 11:59:58 bastion sshd[1]: Failed password for root from 1.2.3.4 port 22 ssh2")["@fields"]


def test_a_summary_is_one_bounded_line_of_hostile_values() -> None:
    edr = {"@timestamp": 1, "host": "WS\r\n01", "user": ["not", "text"], "process": "x.exe",
           "cmdline": "a\tb\nc " + "x" * 10_000, "parent": {"an": "object"}}
    message = _message(json.dumps(edr))
    assert "\n" not in message and "\t" not in message and "\r" not in message
    assert message.startswith("WS 01: ran a b c xxx") and len(message) <= MAX_SUMMARY


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["EventID", "Channel", "TargetUserName", "IpAddress", "LogonType", "method",
                                        "url", "status", "process", "cmdline", "parent", "host", "user", "event",
                                        "winlog", "Message", "eventType", "actor", "published"]),
                       st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
                                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                                    max_leaves=8)))
def test_any_record_gives_text_or_nothing(fields: dict) -> None:
    message = readable(fields)
    assert message is None or isinstance(message, str)


def test_json_in_syslog_gets_its_message_too() -> None:
    body = json.dumps({"EventID": 4625, "Channel": "Security", "TargetUserName": "jdoe",
                       "Message": "An account failed to log on."})
    record = _record(f"<14>May  1 11:58:13 DC01 nxlog: {body}")
    assert record["@fields"]["message"] == "An account failed to log on." and record["@message"].startswith("<14>")
