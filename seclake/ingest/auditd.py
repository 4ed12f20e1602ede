"""Linux audit (auditd) records in common ECS names.

An audit line is key=value: ``type=USER_LOGIN msg=audit(1714564740.123:456):
pid=1234 uid=0 ... msg='op=login acct="root" exe="/usr/sbin/sshd"
addr=203.0.113.50 res=failed'``. The key=value parser keeps the last
``msg``, so the quoted inner pairs are parsed here and join the record's
own fields (``op``, ``acct``, ``exe``, ``addr``, ``res``...) where the line
has no field of that name; the event time and serial come from the
``audit(...)`` stamp. Values auditd writes in hex (``cmd``, ``proctitle``,
arguments with spaces) are decoded for the common names only; the own
fields keep what auditd wrote. With ``log_format = ENRICHED`` auditd appends
names for ids (``AUID="alice"``); they name the user when ``acct`` does not.
Names follow Elastic's auditd module. docs/fields.md.
"""

from __future__ import annotations

import re
from typing import Any

from seclake.ingest import kv
from seclake.ingest.ecs import compact, ip, number, text

_STAMP = re.compile(r"msg=audit\((\d{9,11}(?:\.\d{1,9})?):(\d{1,20})\)")
_HEX = re.compile(r"(?:[0-9A-F]{2})+")
# type -> (category, type, action); outcome comes from res= or success=.
_TYPES = {
    "USER_LOGIN": ("authentication", "start", "logged-in"),
    "USER_AUTH": ("authentication", "info", "authenticated"),
    "USER_ACCT": ("authentication", "info", "was-authorized"),
    "CRED_ACQ": ("authentication", "info", "acquired-credentials"),
    "USER_START": ("session", "start", "started-session"),
    "USER_END": ("session", "end", "ended-session"),
    "USER_LOGOUT": ("session", "end", "logged-out"),
    "USER_CMD": ("process", "start", "ran-command"),
    "EXECVE": ("process", "start", "executed"),
    "ADD_USER": ("iam", "creation", "added-user-account"),
    "DEL_USER": ("iam", "deletion", "deleted-user-account"),
    "ADD_GROUP": ("iam", "creation", "added-group-account"),
    "USER_CHAUTHTOK": ("iam", "change", "changed-password"),
}
_OUTCOMES = {"success": "success", "yes": "success", "failed": "failure", "no": "failure"}
_MAX_ARGS = 64
_MAX_PIECES = 256  # pieces of one long EXECVE argument (auditd splits at ~7.5 KB; a line is at most 64 KiB)


def matches(fields: dict[str, Any], raw: str) -> bool:
    kind = fields.get("type")
    return isinstance(kind, str) and kind.isupper() and "msg=audit(" in raw


def sender(fields: dict[str, Any]) -> str | None:
    """The host that wrote the record: ``node=`` (audisp's name_format); ``hostname=`` is the remote peer."""
    return _name(fields.get("node"))


def common_of(fields: dict[str, Any], raw: str) -> tuple[dict[str, Any], str | None]:
    """Join the inner ``msg='...'`` pairs to ``fields``; return the common names and the event time."""
    stamp = _STAMP.search(raw)
    inner = fields.get("msg")
    if isinstance(inner, str) and "=" in inner and not inner.startswith("audit("):
        for key, value in (kv.parse(inner) or {}).items():
            fields.setdefault(key, value)
    kind = fields["type"]
    category, event_type, action = _TYPES.get(kind, (None, None, kind.lower()[:64]))
    if kind == "SYSCALL" and fields.get("syscall") in ("59", "execve"):
        category, event_type, action = "process", "start", "executed"
    result = fields.get("res") if "res" in fields else fields.get("success")
    acting = _name(fields.get("AUID")) or _name(fields.get("UID"))
    account = _name(fields.get("acct"))
    if category == "iam":  # the account added or changed is the target; who did it acts
        user = {"name": acting, "target": {"name": account or _name(fields.get("id"))}}
    else:
        user = {"name": account or acting, "id": text(fields.get("uid"))}
    # The login (audit) id follows a user through su and sudo; the effective id is who the process runs as.
    auid = text(fields.get("auid"))
    user["audit"] = {"id": auid if auid not in ("4294967295", "unset") else None}
    user["effective"] = {"id": text(fields.get("euid"))}
    exe = _decoded(fields.get("exe"))
    args = _args(fields)
    program = args[0] if args else None
    if exe is None and program is not None and program.startswith("/"):
        exe = program  # an EXECVE or PROCTITLE naming the program by its path
    common = {
        "event": {"category": category, "type": event_type, "action": action,
                  "outcome": _OUTCOMES.get(result) if isinstance(result, str) else None,
                  "sequence": number(stamp.group(2)) if stamp else None},
        "user": user,
        "source": {"ip": ip(fields.get("addr")),
                   "address": _name(fields.get("hostname")) if not ip(fields.get("addr")) else None},
        "process": {"pid": number(fields.get("pid")), "executable": exe,
                    "name": _decoded(fields.get("comm")) or (exe or program or "").rsplit("/", 1)[-1] or None,
                    "command_line": " ".join(args) if args else _command_line(fields),
                    "args": args, "args_count": len(args) if args else None,
                    "parent": {"pid": number(fields.get("ppid"))},
                    "working_directory": _decoded(fields.get("cwd")) if kind == "CWD" else None},
        "observer": {"vendor": "Linux", "product": "auditd"},
        "host": {"name": sender(fields)},
    }
    return compact(common), stamp.group(1) if stamp else None


def _name(value: Any) -> str | None:
    name = _decoded(value)
    return None if name in (None, "?", "unset", "(unknown)", "4294967295") else name


def _decoded(value: Any) -> str | None:
    """An auditd value: hex (how auditd writes text with spaces or quotes) is decoded."""
    value = text(value)
    if value is None or value == "?":
        return None
    if len(value) >= 2 and len(value) % 2 == 0 and _HEX.fullmatch(value):
        try:
            return bytes.fromhex(value).replace(b"\x00", b" ").decode("utf-8", "replace").strip() or None
        except ValueError:
            return None
    return value


def _args(fields: dict[str, Any]) -> list[str] | None:
    """The arguments of an EXECVE record (``a0``..``aN``; an argument too long for one record comes in
    pieces ``aN[0]``, ``aN[1]``... after ``aN_len``) or of a PROCTITLE (``proctitle``, hex with NUL
    between the arguments), at most ``_MAX_ARGS``, decoded."""
    kind = fields.get("type")
    if kind == "PROCTITLE":
        title = text(fields.get("proctitle"))
        if title is None:
            return None
        if len(title) % 2 == 0 and _HEX.fullmatch(title):
            raw = bytes.fromhex(title)
            parts = [part.decode("utf-8", "replace") for part in raw.split(b"\x00")[:_MAX_ARGS]]
        else:
            parts = [title]  # printable: auditd wrote it as is (quotes already taken off)
        return [part for part in parts if part] or None
    if kind != "EXECVE":
        return None
    count = min(number(fields.get("argc")) or 0, _MAX_ARGS)
    args = []
    for i in range(count):
        value = fields.get(f"a{i}")
        if value is None and f"a{i}[0]" in fields:
            pieces = []
            for j in range(_MAX_PIECES):
                piece = fields.get(f"a{i}[{j}]")
                if piece is None:
                    break
                pieces.append(_piece(piece))
            arg = "".join(pieces).strip() or None
        else:
            arg = _decoded(value)
        if arg:
            args.append(arg)
    return args or None


def _piece(value: Any) -> str:
    """One piece of a long EXECVE argument, decoded alone (hex or quoted, each piece as auditd wrote it)."""
    value = text(value)
    if value is None:
        return ""
    if len(value) % 2 == 0 and _HEX.fullmatch(value):
        return bytes.fromhex(value).replace(b"\x00", b" ").decode("utf-8", "replace")
    return value


def _command_line(fields: dict[str, Any]) -> str | None:
    if fields.get("type") == "EXECVE":
        count = number(fields.get("argc")) or 0
        args = [_decoded(fields.get(f"a{i}")) for i in range(min(count, _MAX_ARGS))]
        if any(args):
            return " ".join(arg for arg in args if arg)
    return _decoded(fields.get("cmd")) or _decoded(fields.get("proctitle"))
