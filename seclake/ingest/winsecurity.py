"""Windows events (as NXLog and Winlogbeat send them) in common ECS names.

NXLog's JSON puts the event's data at the top (``EventID``, ``Channel``,
``TargetUserName``, ``IpAddress``...); Winlogbeat nests it under
``winlog.event_data`` with the id in ``winlog.event_id`` (or ``event.code``)
and the channel in ``winlog.channel``. Either way the record keeps what it
has, and gains:

- on every Windows event (any channel): ``event.code``, ``event.provider``,
  ``host.name``, and the channel and id under both shippers' names
  (``winlog.channel`` and ``Channel``, ``event.code`` and ``EventID``), so a
  rule selecting by either finds the events of both shippers;
- for the events below, ``event.*``, ``user.*``, ``source.*``,
  ``process.*`` (4688 with its parent), PowerShell script blocks
  (4103/4104), service installs (7045) and scheduled tasks (4698).

Sysmon's channel has its own module (``sysmon``) built on ``windows_common``
here. Names follow Winlogbeat's own ECS mapping (``event.action`` such as
``logon-failed``). docs/fields.md.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import account, compact, ip, merge

# id -> (category, type, action, outcome or None, who acts, who is acted on)
EVENTS: dict[int, tuple[str, str, str, str | None, str | None, str | None]] = {
    4624: ("authentication", "start", "logged-in", "success", "TargetUserName", None),
    4625: ("authentication", "start", "logon-failed", "failure", "TargetUserName", None),
    4634: ("session", "end", "logged-out", "success", "TargetUserName", None),
    4648: ("authentication", "start", "logged-in-explicit", "success", "SubjectUserName", "TargetUserName"),
    4672: ("iam", "admin", "logged-in-special", "success", "SubjectUserName", None),
    4688: ("process", "start", "created-process", "success", "SubjectUserName", None),
    4698: ("configuration", "creation", "scheduled-task-created", "success", "SubjectUserName", None),
    4720: ("iam", "creation", "added-user-account", "success", "SubjectUserName", "TargetUserName"),
    4726: ("iam", "deletion", "deleted-user-account", "success", "SubjectUserName", "TargetUserName"),
    4740: ("iam", "change", "locked-out-user-account", "success", "SubjectUserName", "TargetUserName"),
}
# Events of other channels, known by the data they carry (their ids are reused across channels:
# 4104 is PowerShell's, 7045 the Service Control Manager's in System).
_POWERSHELL = {4103: "executed-pipeline", 4104: "script-block-logged"}
_NONE = ("", "-", "::1", "127.0.0.1")
# Keys of a record that make an EventID a Windows event id (a JSON line may have an EventID of its own).
_WINDOWS_KEYS = ("TargetUserName", "SubjectUserName", "NewProcessName", "Channel", "SourceName")


def _event_id(fields: dict[str, Any], data: dict[str, Any]) -> int | None:
    winlog = fields.get("winlog")
    for value in (fields.get("EventID"), winlog.get("event_id") if isinstance(winlog, dict) else None,
                  data.get("EventID")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value if 0 <= value < 1_000_000 else None
        if isinstance(value, str) and value.isdigit() and len(value) < 7:
            return int(value)
    return None


def matches(fields: dict[str, Any]) -> bool:
    return "EventID" in fields or isinstance(fields.get("winlog"), dict)


def channel_of(fields: dict[str, Any]) -> str | None:
    """The event's channel (``Security``, ``Microsoft-Windows-Sysmon/Operational``...) by either shipper."""
    winlog = fields.get("winlog")
    value = winlog.get("channel") if isinstance(winlog, dict) else None
    if not _text(value):
        value = fields.get("Channel")
    return value if _text(value) else None


def provider_of(fields: dict[str, Any]) -> str | None:
    """The provider (``Microsoft-Windows-Sysmon``...): Winlogbeat's ``winlog.provider_name``, NXLog's ``SourceName``."""
    winlog = fields.get("winlog")
    value = winlog.get("provider_name") if isinstance(winlog, dict) else None
    if not _text(value):
        value = fields.get("SourceName")
    return value if _text(value) else None


def windows_common(fields: dict[str, Any]) -> tuple[dict[str, Any], int, dict[str, Any]] | None:
    """The event's data (Winlogbeat's ``winlog.event_data``, NXLog's top level), its id, and the common
    names every Windows event gets; None when the record is not a Windows event."""
    winlog = fields.get("winlog")
    data = winlog.get("event_data") if isinstance(winlog, dict) else None
    data = data if isinstance(data, dict) else fields
    event_id = _event_id(fields, data)
    if event_id is None:
        return None
    channel = channel_of(fields)
    if not isinstance(winlog, dict) and not any(k in data for k in _WINDOWS_KEYS):
        return None  # a JSON line with an EventID of its own, not an NXLog Windows event
    common: dict[str, Any] = {"event": {"code": str(event_id), "provider": provider_of(fields)},
                              # Both shippers' names for the channel and id: rules select by either.
                              "winlog": {"channel": channel}, "Channel": channel, "EventID": event_id}
    # The machine that logged the event: Winlogbeat's computer_name, NXLog's Hostname, the event's Computer.
    computer = (winlog.get("computer_name") if isinstance(winlog, dict) else None) or fields.get("Hostname") \
        or fields.get("Computer")
    if _text(computer):
        common["host"] = {"name": computer}
    return data, event_id, common


def enrich(fields: dict[str, Any], dataset: str = "event") -> Any:
    """Add the common names to the ``@fields`` of a Windows event (in place); returns its time."""
    found = windows_common(fields)
    if found is None:
        return None
    data, event_id, common = found
    known = EVENTS.get(event_id)
    if known is not None:
        category, kind, action, outcome, actor, target = known
        common["event"].update({"category": category, "type": kind, "action": action})
        if outcome:
            common["event"]["outcome"] = outcome
        user: dict[str, Any] = {}
        if _text(data.get(actor)):
            user["name"] = data[actor]
            domain = data.get("TargetDomainName" if actor == "TargetUserName" else "SubjectDomainName")
            if _text(domain):
                user["domain"] = domain
        if target and _text(data.get(target)):
            user["target"] = {"name": data[target]}
        if user:
            common["user"] = user
        address = ip(data.get("IpAddress"))
        if address is not None and address not in _NONE:
            source: dict[str, Any] = {"ip": address}
            port = data.get("IpPort")
            if isinstance(port, int) or (isinstance(port, str) and port.isdigit() and len(port) < 6):
                source["port"] = int(port)
            common["source"] = source
        if event_id == 4688:
            common["process"] = _process_created(data)
    elif event_id in _POWERSHELL and ("ScriptBlockText" in data or "Payload" in data or "ContextInfo" in data):
        more = _powershell(fields, data, event_id)
        common["event"].update(more.pop("event"))
        common.update(more)
    elif event_id == 7045 and _text(data.get("ServiceName")):
        more = _service_installed(data)
        common["event"].update(more.pop("event"))
        common.update(more)
    merge(fields, compact(common))
    # NXLog's EventTime has no zone (the sender's local time); taken as UTC like every zoneless time.
    return fields.get("EventTime")


def image_name(path: Any) -> str | None:
    """The file name of a Windows path (``C:\\Windows\\System32\\cmd.exe`` -> ``cmd.exe``)."""
    if not _text(path):
        return None
    return path.replace("/", "\\").rsplit("\\", 1)[-1] or None


def pid(value: Any) -> int | None:
    """A process id as Windows writes it: decimal (Sysmon ``4460``) or hex (Security ``0x1a2c``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < 2**32 else None
    if isinstance(value, str) and 0 < len(value) <= 10:
        try:
            n = int(value, 16) if value[:2] in ("0x", "0X") else int(value) if value.isdigit() else None
        except ValueError:
            return None
        return n if n is not None and n < 2**32 else None
    return None


def _process_created(data: dict[str, Any]) -> dict[str, Any]:
    """4688: the new process (``NewProcessName``, ``NewProcessId``) and its creator (``ParentProcessName``,
    ``ProcessId``); the parent's command line is not in the event."""
    return {
        "executable": data.get("NewProcessName") if _text(data.get("NewProcessName")) else None,
        "name": image_name(data.get("NewProcessName")),
        "command_line": data.get("CommandLine") if _text(data.get("CommandLine")) else None,
        "pid": pid(data.get("NewProcessId")),
        "parent": {"executable": data.get("ParentProcessName") if _text(data.get("ParentProcessName")) else None,
                   "name": image_name(data.get("ParentProcessName")),
                   "pid": pid(data.get("ProcessId"))},
    }


def _powershell(fields: dict[str, Any], data: dict[str, Any], event_id: int) -> dict[str, Any]:
    """4104 (a script block: its text, id and file; the user the event names) and 4103 (a pipeline run:
    ``ContextInfo``'s ``Host Application``, ``User`` and ``Command Name``), Elastic's ``powershell.*`` names."""
    common: dict[str, Any] = {"event": {"category": "process", "type": "info", "action": _POWERSHELL[event_id]}}
    if event_id == 4104:
        path = data.get("Path")
        common["powershell"] = {"file": {"script_block_text": data.get("ScriptBlockText"),
                                         "script_block_id": data.get("ScriptBlockId")}}
        common["file"] = {"path": path if _text(path) else None, "name": image_name(path)}
        # The event's user (its System Security UserID, resolved): Winlogbeat's winlog.user, NXLog's
        # AccountName and Domain.
        winlog = fields.get("winlog")
        user = winlog.get("user") if isinstance(winlog, dict) else None
        if isinstance(user, dict):
            common["user"] = {"name": user.get("name"), "domain": user.get("domain")}
        elif _text(fields.get("AccountName")):
            common["user"] = {"name": fields.get("AccountName"), "domain": fields.get("Domain")}
        return common
    context = data.get("ContextInfo")
    info: dict[str, str] = {}
    if isinstance(context, str):  # "        Host Application = powershell.exe -nop\r\n        User = CORP\\jdoe..."
        for line in context.splitlines():
            name, sep, value = line.partition("=")
            if sep and name.strip() and value.strip():
                info.setdefault(name.strip(), value.strip())
    common["powershell"] = {"command": {"name": info.get("Command Name"), "type": info.get("Command Type")}}
    common["process"] = {"command_line": info.get("Host Application")}
    common["user"] = account(info.get("User"))
    return common


def _service_installed(data: dict[str, Any]) -> dict[str, Any]:
    """7045 (Service Control Manager, System): the service installed."""
    # ImagePath (a command, not always a path) and AccountName (the account the service runs as; NXLog
    # has an AccountName of its own, the event's user) stay the event's own fields only.
    return {
        "event": {"category": "configuration", "type": "creation", "action": "service-installed"},
        "service": {"name": data.get("ServiceName"), "type": data.get("ServiceType")},
    }


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and value != "-"
