"""The readable message of a JSON event: ECS ``message``, kept in ``@fields.message``.

A JSON event's ``@message`` is its raw line (http-interface.md 2.6: the raw
event message), which for a Windows, proxy or EDR record is a screenful of
braces. Kibana shows ECS's ``message`` instead, "optimized for viewing in a
log viewer"; seclake does the same: the raw line stays in ``@message``
(searched as text, as before), and the line a person reads goes to
``@fields.message``, which the web's rows show where it is text.

Where it comes from, first that applies (docs/fields.md, "The message"):

- the source's own message: Winlogbeat's ``message`` (already the field:
  left as it is, as any JSON line's own ``message``), NXLog's ``Message``
  (the event's rendered text), Okta's ``displayMessage``;
- else a summary line made of the source's fields and the common names the
  source module added: a Windows event's id, its title and who, from where
  (``4625 An account failed to log on: CORP\\jdoe from 10.0.0.5 (logon type 3)``),
  a Sysmon event's title and object, a proxy's request line (``GET
  https://x/ 200 jdoe``), an EDR's process line (``WS01: CORP\\jdoe ran
  cmd.exe /c whoami (parent C:\\Windows\\explorer.exe)``), and for any other
  record with common names (CloudTrail, Entra ID, Okta, Zeek, Suricata) its
  action, user, ends and outcome (``ConsoleLogin: alice from 203.0.113.5
  (failure: Failed authentication)``);
- else nothing: a JSON record of no known shape shows its raw line.

Only records whose line is their ``@message`` get one (a record sent with
its own ``@message`` has its message already), events only (a flow's row is
made of its ends), and a field the line has is never overwritten. Records
stored before keep what they have. Hostile values give nothing rather than
an error (``ecs.text``), and a summary is at most ``MAX_SUMMARY`` characters.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import text

FIELD = "message"
# A summary is a line to read: 1,000 characters hold any real one; a longer
# command line is cut (the whole stays in its own field and in @message).
MAX_SUMMARY = 1000
_PART = 400  # one value in a summary

# The first line Windows renders for these events (the event's message text).
WINDOWS_TITLES = {
    4103: "Executing Pipeline",
    4104: "Creating Scriptblock text",
    4624: "An account was successfully logged on",
    4625: "An account failed to log on",
    4634: "An account was logged off",
    4648: "A logon was attempted using explicit credentials",
    4672: "Special privileges assigned to new logon",
    4688: "A new process has been created",
    4698: "A scheduled task was created",
    4720: "A user account was created",
    4726: "A user account was deleted",
    4740: "A user account was locked out",
    7045: "A service was installed in the system",
}
SYSMON_TITLES = {
    1: "Process Create", 2: "File creation time changed", 3: "Network connection detected",
    5: "Process terminated", 6: "Driver loaded", 7: "Image loaded", 8: "CreateRemoteThread detected",
    9: "RawAccessRead detected", 10: "Process accessed", 11: "File created",
    12: "Registry object added or deleted", 13: "Registry value set", 14: "Registry object renamed",
    15: "File stream created", 17: "Pipe Created", 18: "Pipe Connected", 22: "Dns query",
    23: "File Delete archived", 24: "Clipboard changed", 25: "Process Tampering", 26: "File Delete logged",
}
_OWN = ("Message", "displayMessage")  # NXLog's rendered text, Okta's
_PARTS: dict[str, tuple[str, ...]] = {}  # a common name's parts, split once (the names are this module's)
_MISSING = object()


def add(fields: dict[str, Any]) -> None:
    """Put the readable message in ``fields`` (a JSON event's ``@fields``, common names added),
    unless it has a ``message`` of its own or no message can be said of it."""
    if FIELD in fields:
        return
    line = readable(fields)
    if line:
        fields[FIELD] = line


def readable(fields: dict[str, Any]) -> str | None:
    """The source's own message, else a summary line, else None (module doc)."""
    for key in _OWN:
        own = fields.get(key)
        if isinstance(own, str) and own.strip():
            return own
    line = _windows(fields) or _proxy(fields) or _edr(fields) or _common(fields)
    if line and len(line) > MAX_SUMMARY:
        line = line[: MAX_SUMMARY - 1] + "…"
    return line


def get(fields: dict[str, Any], path: str) -> Any:
    """The value at a dotted common name, nested (``user: {name}``) or kept beside a plain value
    of the line as a dotted key (``"user.name"``: ``ecs.merge``); None when absent."""
    parts = _PARTS.get(path)
    if parts is None:
        parts = _PARTS[path] = tuple(path.split("."))
    node: Any = fields
    i, n = 0, len(parts)
    while i < n:
        if node.__class__ is not dict:
            return None
        value = node.get(parts[i], _MISSING)
        if value is not _MISSING and (i == n - 1 or value.__class__ is dict):
            node, i = value, i + 1
            continue
        for j in range(n, i + 1, -1):  # not an object here: a dotted key, the longest first
            value = node.get(".".join(parts[i:j]), _MISSING)
            if value is not _MISSING:
                node, i = value, j
                break
        else:
            return None
    return node


def _t(fields: dict[str, Any], path: str) -> str | None:
    """A common name as text to show: strings and numbers, cut to ``_PART``; "-" is none (Windows)."""
    value = get(fields, path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    value = text(value)
    if value is None or value == "-":
        return None
    value = " ".join(value.split())  # a row is one line: no CR/LF/tabs from a hostile value
    return value if len(value) <= _PART else value[: _PART - 1] + "…"


def _account(fields: dict[str, Any], name: str = "user.name", domain: str = "user.domain") -> str | None:
    user = _t(fields, name)
    if user is None:
        return None
    where = _t(fields, domain)
    return f"{where}\\{user}" if where and "@" not in user else user


def _end(fields: dict[str, Any], side: str) -> str | None:
    address = _t(fields, f"{side}.ip") or _t(fields, f"{side}.address") or _t(fields, f"{side}.domain")
    port = _t(fields, f"{side}.port")
    if address is None:
        return None
    if port is None:
        return address
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def _joined(head: str, details: list[str | None]) -> str:
    said = [d for d in details if d]
    return f"{head}: {' '.join(said)}" if said else head


def _windows(fields: dict[str, Any]) -> str | None:
    """A Windows event (any shipper; the common names winsecurity and sysmon add): id, title, who and what."""
    code = _t(fields, "event.code")
    if get(fields, "EventID") is None or code is None or not code.isdigit():
        return None  # winsecurity gives every Windows event both (and a line with an EventID of its own neither)
    event_id = int(code)
    channel = _t(fields, "winlog.channel") or ""
    sysmon = "sysmon" in channel.lower() or "sysmon" in (_t(fields, "event.provider") or "").lower()
    title = (SYSMON_TITLES if sysmon else WINDOWS_TITLES).get(event_id) or _t(fields, "event.action")
    head = f"{event_id} {title}" if title else f"{event_id} {channel}".rstrip()
    category = _t(fields, "event.category")
    user = _account(fields)
    if category in ("authentication", "session") or event_id in (4672, 4720, 4726, 4740):
        target = _t(fields, "user.target.name")
        source = _t(fields, "source.ip")
        logon = _t(fields, "LogonType") or _t(fields, "winlog.event_data.LogonType")
        if category == "iam" and target:  # an account created, deleted, locked out: it, by whom
            return _joined(head, [target, f"by {user}" if user else None])
        return _joined(head, [user, f"as {target}" if target else None, f"from {source}" if source else None,
                              f"(logon type {logon})" if logon else None])
    if category == "process" and _t(fields, "powershell.file.script_block_text"):
        return _joined(head, [user, _t(fields, "powershell.file.script_block_text")])
    return _joined(head, _object(fields, user))


def _object(fields: dict[str, Any], user: str | None) -> list[str | None]:
    """What an event with common names did, by its category: a process run, a connection, a file..."""
    category = _t(fields, "event.category")
    if category == "process":
        if _t(fields, "event.type") == "start":
            ran = _t(fields, "process.command_line") or _t(fields, "process.executable") or _t(fields, "process.name")
            parent = _t(fields, "process.parent.executable") or _t(fields, "process.parent.name")
            return [user, f"ran {ran}" if ran else None, f"(parent {parent})" if parent else None]
        # Ended, loaded an image, opened another process: the process, then what it acted on.
        acted = _t(fields, "file.path") or _t(fields, "TargetImage") or _t(fields, "winlog.event_data.TargetImage")
        return [user, _t(fields, "process.executable") or _t(fields, "process.name"), f"→ {acted}" if acted else None]
    if category == "network":
        source, destination = _end(fields, "source"), _end(fields, "destination")
        query = _t(fields, "dns.question.name")
        return [_t(fields, "process.name") or user, source, f"→ {destination}" if destination else None,
                f"query {query}" if query else None]
    for path in ("registry.path", "file.path", "service.name", "dns.question.name", "url.full", "url.original"):
        value = _t(fields, path)
        if value:
            return [user, value]
    return [user]


def _proxy(fields: dict[str, Any]) -> str | None:
    """A proxy's access record (Squid's JSON, and the like): the request line, status and user."""
    method, url = _t(fields, "method"), _t(fields, "url")
    if method is None or url is None or not method.isalpha():
        return None
    status = _t(fields, "status")
    user = _t(fields, "user")
    client = _t(fields, "client_ip")
    return " ".join(x for x in (method.upper(), url, status, user, f"({client})" if client else None) if x)


def _edr(fields: dict[str, Any]) -> str | None:
    """An EDR's process event (a flat record with the process, its command line or parent, the host)."""
    process = fields.get("process")
    if not isinstance(process, str) or not ("cmdline" in fields or "parent" in fields):
        return None
    ran = _t(fields, "cmdline") or _t(fields, "process")
    parent = _t(fields, "parent")
    host, user = _t(fields, "host"), _t(fields, "user")
    said = " ".join(x for x in (user, f"ran {ran}", f"(parent {parent})" if parent else None) if x)
    return f"{host}: {said}" if host else said


def _common(fields: dict[str, Any]) -> str | None:
    """Any other record with common names: its action, who, the ends, and how it ended."""
    head = _t(fields, "event.action") or _t(fields, "rule.name") or _t(fields, "event.dataset")
    if head is None:
        return None
    if _t(fields, "event.kind") == "alert" and _t(fields, "rule.name"):
        head = f"alert {_t(fields, 'rule.name')}"
    user = _account(fields)
    source, destination = _end(fields, "source"), _end(fields, "destination")
    outcome, reason = _t(fields, "event.outcome"), _t(fields, "event.reason")
    return _joined(head, [
        user,
        f"from {source}" if source else None,
        f"to {destination}" if destination else None,
        _t(fields, "url.full") or _t(fields, "dns.question.name"),
        f"({outcome}: {reason})" if outcome and reason else f"({outcome})" if outcome else None,
    ])
