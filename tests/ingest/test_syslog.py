from __future__ import annotations

from seclake.ingest.syslog import looks_like, parse

RECEIVED = 1714564801000  # 2024-05-01T12:00:01Z


def test_pri_gives_facility_and_severity() -> None:
    h = parse("<0>May  1 12:00:00 h p: x", RECEIVED)
    assert h is not None and h.facility == "kern" and h.fields["severity"] == "emerg"
    h = parse("<191>May  1 12:00:00 h p: x", RECEIVED)
    assert h is not None and h.facility == "local7" and h.fields["severity_code"] == 7
    assert parse("<192>May  1 12:00:00 h p: x", RECEIVED) is None


def test_3164_host_and_tag() -> None:
    h = parse("<38>May  1 11:59:58 web01 sshd[4242]: Failed password", RECEIVED)
    assert h is not None
    assert (h.timestamp, h.host, h.fields["program"], h.fields["pid"], h.msg) == (
        1714564798000, "web01", "sshd", "4242", "Failed password",
    )  # fmt: skip


def test_3164_tag_without_host() -> None:
    h = parse("<38>May  1 11:59:58 sshd[4242]: Failed password", RECEIVED)
    assert h is not None and h.host is None and h.fields["program"] == "sshd" and h.msg == "Failed password"
    h = parse("<38>May  1 11:59:58 kernel: oops", RECEIVED)
    assert h is not None and h.host is None and h.fields["program"] == "kernel"


def test_3164_host_without_tag() -> None:
    h = parse("May  1 11:59:58 web01 free text here", RECEIVED)
    assert h is not None and h.host == "web01" and "program" not in h.fields and h.msg == "free text here"
    assert h.facility is None and "severity" not in h.fields


def test_3164_with_year_and_fraction() -> None:
    h = parse("<13>May  1 11:59:58.123 2024 web01 app: x", RECEIVED)
    assert h is not None and h.timestamp == 1714564798123 and h.host == "web01"


def test_3164_path_like_tag() -> None:
    h = parse("<22>May  1 11:59:58 mx postfix/smtpd[77]: connect from x", RECEIVED)
    assert h is not None and h.fields["program"] == "postfix/smtpd" and h.fields["pid"] == "77"


def test_rsyslog_iso_header() -> None:
    h = parse("<13>2024-05-01T13:59:58.5+02:00 web01 app[1]: hi", RECEIVED)
    assert h is not None and h.timestamp == 1714564798500 and h.host == "web01" and h.msg == "hi"


def test_pri_only() -> None:
    h = parse("<13>something else entirely", RECEIVED)
    assert h is not None and h.facility == "user" and h.timestamp is None and h.msg == "something else entirely"


def test_5424_nil_values_and_no_msg() -> None:
    h = parse("<14>1 - - - - - -", RECEIVED)
    assert h is not None
    assert (h.timestamp, h.host, h.msg) == (None, None, "")
    assert h.fields == {"severity": "info", "severity_code": 6}


def test_5424_structured_data() -> None:
    h = parse(r'<165>1 2003-10-11T22:14:15.003Z host app 1 ID [a@1 x="1" y="q\"\]\\"][b z="2"][a@1 x="3"] msg', RECEIVED)
    assert h is not None
    assert h.fields["sd"] == {"a@1": {"x": "3", "y": 'q"]\\'}, "b": {"z": "2"}}
    assert h.msg == "msg"
    assert (h.fields["program"], h.fields["pid"], h.fields["msgid"]) == ("app", "1", "ID")


def test_5424_bom_is_dropped() -> None:
    h = parse("<165>1 2003-10-11T22:14:15.003Z host app - - - \ufeffhello", RECEIVED)
    assert h is not None and h.msg == "hello"


def test_looks_like() -> None:
    assert looks_like("<13>x")
    assert looks_like("May  1 12:00:00 host x")
    assert not looks_like("<html>")
    assert not looks_like("Mayday 1 12:00:00")
    assert not looks_like("Hello world, this is text")
