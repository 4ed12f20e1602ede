"""Linux authentication lines (sshd, sudo, su) in Elastic Common Schema names.

A syslog line from these programs keeps its own fields (``program``,
``pid``, and the key=value pairs of PAM lines) and gains the common ones,
nested under ``@fields`` so that ``user.name:admin``, ``source.ip:...``
and ``event.outcome:failure`` find the same thing in every source:

- ``event.category`` (``authentication``, ``session``, ``process``),
  ``event.type``, ``event.action``, ``event.outcome``, ``event.reason``;
- ``user.name``, ``user.target.name``; ``source.ip``, ``source.port``;
- ``process.name``, ``process.pid``, ``process.command_line`` (sudo).

ECS makes ``event.category``/``event.type`` arrays; a single keyword is
the same value to a query, and the one-column peers of the benchmark
need one, so they are plain strings here.

The patterns are anchored, use no nested quantifiers, and run on the
message part only (at most ``MAX_LINE_CHARS``), so a hostile line costs
linear time. A line none of them knows gets no common fields; it is never
rejected for that.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from seclake.ingest.ecs import ip

_ADDR = r"(?P<ip>[0-9A-Fa-f:.]+)"
_PORT = r"(?: port (?P<port>\d{1,5}))?"

# (pattern, what it means); the first match wins.
_SSHD: list[tuple[re.Pattern[str], dict[str, str]]] = [
    (re.compile(rf"Accepted (?P<method>[\w/-]+) for (?P<user>\S+) from {_ADDR}{_PORT}"),
     {"category": "authentication", "type": "start", "action": "ssh_login", "outcome": "success"}),
    (re.compile(rf"Failed (?P<method>[\w/-]+) for (?P<invalid>invalid user )?(?P<user>\S+) from {_ADDR}{_PORT}"),
     {"category": "authentication", "type": "start", "action": "ssh_login", "outcome": "failure"}),
    (re.compile(rf"Invalid user (?P<user>\S*) from {_ADDR}{_PORT}"),
     {"category": "authentication", "type": "start", "action": "ssh_login", "outcome": "failure",
      "reason": "invalid user"}),
    (re.compile(rf"Disconnected from (?:(?:authenticating|invalid) )?user (?P<user>\S+) {_ADDR}{_PORT}"),
     {"category": "session", "type": "end", "action": "ssh_disconnect"}),
    (re.compile(rf"(?:Received disconnect|Disconnected) from {_ADDR}{_PORT}"),
     {"category": "session", "type": "end", "action": "ssh_disconnect"}),
    (re.compile(rf"Connection closed by (?:(?:authenticating|invalid) user (?P<user>\S+) )?{_ADDR}{_PORT}"),
     {"category": "session", "type": "end", "action": "ssh_disconnect"}),
]

_SUDO_RAN = re.compile(r"\s*(?P<user>\S+) : (?:(?P<failure>[^;]*?) ; )?TTY=\S* ; PWD=\S* ; USER=(?P<target>\S+) ;"
                       r"(?: [A-Z]+=\S* ;)* COMMAND=(?P<command>.+)")
_PAM = re.compile(r"pam_unix\((?P<service>[\w-]+):(?P<kind>auth|session)\): (?P<what>.*)")
_SESSION = re.compile(r"session (?P<state>opened|closed) for user (?P<target>[^\s(]+)(?:\(uid=\d+\))?(?: by (?P<user>[^\s(]*))?")
_SU_OLD = re.compile(r"(?P<ok>Successful|FAILED) su for (?P<target>\S+) by (?P<user>\S+)")


def fields_of(program: Any, message: str) -> dict[str, Any] | None:
    """The common fields a line of ``program`` carries, or None."""
    if not isinstance(program, str):
        return None
    parse = _PROGRAMS.get(program.lower())
    return parse(message) if parse is not None else None


def _sshd(message: str) -> dict[str, Any] | None:
    for pattern, meaning in _SSHD:
        m = pattern.match(message)
        if m is None:
            continue
        out = _event(meaning)
        groups = m.groupdict()
        if groups.get("invalid"):
            out["event"]["reason"] = "invalid user"
        if groups.get("method"):  # Elastic's name for it: password, publickey, keyboard-interactive...
            out["system"] = {"auth": {"ssh": {"method": groups["method"]}}}
        _who(out, groups.get("user"), groups.get("ip"), groups.get("port"))
        return out
    return _pam(message)


def _sudo(message: str) -> dict[str, Any] | None:
    m = _SUDO_RAN.match(message)
    if m is None:
        return _pam(message)
    failure = m.group("failure")
    if failure:
        out = _event({"category": "authentication", "type": "start", "action": "sudo", "outcome": "failure",
                      "reason": failure.strip()})
    else:
        out = _event({"category": "process", "type": "start", "action": "sudo", "outcome": "success"})
    out["user"] = {"name": m.group("user"), "target": {"name": m.group("target")}}
    out["process"] = {"command_line": m.group("command").strip()}
    return out


def _su(message: str) -> dict[str, Any] | None:
    m = _SU_OLD.match(message)
    if m is not None:
        out = _event({"category": "authentication", "type": "start", "action": "su",
                      "outcome": "success" if m.group("ok") == "Successful" else "failure"})
        out["user"] = {"name": m.group("user"), "target": {"name": m.group("target")}}
        return out
    return _pam(message)


def _pam(message: str) -> dict[str, Any] | None:
    m = _PAM.match(message)
    if m is None:
        return None
    what, service = m.group("what"), m.group("service")
    if m.group("kind") == "session":
        s = _SESSION.match(what)
        if s is None:
            return None
        out = _event({"category": "session", "type": "start" if s.group("state") == "opened" else "end",
                      "action": f"{service}_session"})
        user = {"target": {"name": s.group("target")}}
        if s.group("user"):
            user["name"] = s.group("user")
        out["user"] = user
        return out
    if not what.startswith("authentication failure"):
        return None
    # The key=value pairs (ruser, rhost, user) are the line's own fields already.
    pairs = dict(re.findall(r"(\w+)=(\S*)", what))
    out = _event({"category": "authentication", "type": "start", "action": f"{service}_auth", "outcome": "failure"})
    _who(out, pairs.get("ruser") or None, pairs.get("rhost") or None, None)
    if pairs.get("user"):
        out.setdefault("user", {})["target"] = {"name": pairs["user"]}
    return out


def _event(meaning: dict[str, str]) -> dict[str, Any]:
    return {"event": dict(meaning)}


def _who(out: dict[str, Any], user: str | None, address: str | None, port: str | None) -> None:
    if user:
        out["user"] = {"name": user}
    if ip(address) is not None:
        source: dict[str, Any] = {"ip": address}
        if port:
            source["port"] = int(port)
        out["source"] = source


_PROGRAMS: dict[str, Callable[[str], dict[str, Any] | None]] = {"sshd": _sshd, "sudo": _sudo, "su": _su}
