"""Windows Security events (as NXLog and Winlogbeat send them) in common ECS names.

NXLog's JSON puts the event's data at the top (``EventID``,
``TargetUserName``, ``IpAddress``...); Winlogbeat nests it under
``winlog.event_data`` with the id in ``winlog.event_id`` (or
``event.code``). Either way the record keeps what it has, and gains
``event.*``, ``user.*``, ``source.*`` and ``process.*`` for the events
below; other ids get only ``event.code``. Names follow Winlogbeat's own
ECS mapping (``event.action`` such as ``logon-failed``). docs/fields.md.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import ip, merge

# id -> (category, type, action, outcome or None, who acts, who is acted on)
EVENTS: dict[int, tuple[str, str, str, str | None, str | None, str | None]] = {
    4624: ("authentication", "start", "logged-in", "success", "TargetUserName", None),
    4625: ("authentication", "start", "logon-failed", "failure", "TargetUserName", None),
    4634: ("session", "end", "logged-out", "success", "TargetUserName", None),
    4648: ("authentication", "start", "logged-in-explicit", "success", "SubjectUserName", "TargetUserName"),
    4672: ("iam", "admin", "logged-in-special", "success", "SubjectUserName", None),
    4688: ("process", "start", "created-process", "success", "SubjectUserName", None),
    4720: ("iam", "creation", "added-user-account", "success", "SubjectUserName", "TargetUserName"),
    4726: ("iam", "deletion", "deleted-user-account", "success", "SubjectUserName", "TargetUserName"),
    4740: ("iam", "change", "locked-out-user-account", "success", "SubjectUserName", "TargetUserName"),
}
_NONE = ("", "-", "::1", "127.0.0.1")


def _event_id(fields: dict[str, Any], data: dict[str, Any]) -> int | None:
    winlog = fields.get("winlog")
    for value in (fields.get("EventID"), winlog.get("event_id") if isinstance(winlog, dict) else None,
                  data.get("EventID")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isdigit() and len(value) < 7:
            return int(value)
    return None


def matches(fields: dict[str, Any]) -> bool:
    return "EventID" in fields or isinstance(fields.get("winlog"), dict)


def enrich(fields: dict[str, Any], dataset: str = "event") -> Any:
    """Add the common names to the ``@fields`` of a Windows Security event (in place); returns its time."""
    winlog = fields.get("winlog")
    data = winlog.get("event_data") if isinstance(winlog, dict) else None
    data = data if isinstance(data, dict) else fields
    event_id = _event_id(fields, data)
    if event_id is None or not any(k in data for k in ("TargetUserName", "SubjectUserName", "NewProcessName")):
        return None
    common: dict[str, Any] = {"event": {"code": str(event_id)}}
    # The machine that logged the event: Winlogbeat's computer_name, NXLog's Hostname, the event's Computer.
    computer = (winlog.get("computer_name") if isinstance(winlog, dict) else None) or fields.get("Hostname") \
        or fields.get("Computer")
    if _text(computer):
        common["host"] = {"name": computer}
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
            process: dict[str, Any] = {}
            if _text(data.get("NewProcessName")):
                process["executable"] = data["NewProcessName"]
                process["name"] = data["NewProcessName"].replace("/", "\\").rsplit("\\", 1)[-1]
            if _text(data.get("CommandLine")):
                process["command_line"] = data["CommandLine"]
            if process:
                common["process"] = process
    merge(fields, common)
    # NXLog's EventTime has no zone (the sender's local time); taken as UTC like every zoneless time.
    return fields.get("EventTime")


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and value != "-"
