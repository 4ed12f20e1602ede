"""Sysmon events (Microsoft-Windows-Sysmon/Operational) in common ECS names, from Winlogbeat and NXLog.

Sysmon is the main source of Windows endpoint detections: process
creation (1), network connections (3), image loads (7), remote threads (8),
process access (10), files (11, 15, 23, 26), registry (12-14), pipes (17,
18), DNS queries (22), tampering (25). Its fields are the event's
``EventData`` (``Image``, ``CommandLine``, ``ParentImage``...): Winlogbeat
sends them under ``winlog.event_data``, NXLog at the top of its JSON. The
record keeps them where they came, and gains the ECS names beside them
(after Elastic's Sysmon pipeline and the names pySigma's ECS mapping reads:
``process.executable``, ``process.parent.command_line``,
``process.pe.original_file_name``, ``file.path``, ``registry.path``,
``dns.question.name``...), the same whichever shipper sent the event
(tests/ingest/test_sysmon.py holds both to that). Values that are not what
they claim (a pid that is not a number, an address that is not one) are
left out of the common names, never raised on. docs/fields.md lists them.
"""

from __future__ import annotations

from typing import Any

from seclake.ingest.ecs import account, compact, ip, merge, port, transport
from seclake.ingest.winsecurity import image_name, pid, windows_common

CHANNEL = "Microsoft-Windows-Sysmon/Operational"
PROVIDER = "Microsoft-Windows-Sysmon"
# Sysmon for Linux: the same schema, its own channel (ingest/eventxml.py reads its syslog lines).
LINUX_CHANNEL = "Linux-Sysmon/Operational"
LINUX_PROVIDER = "Linux-Sysmon"

# id -> (category, type): the kind of event, as Elastic's Sysmon pipeline names it.
EVENTS: dict[int, tuple[str, str]] = {
    1: ("process", "start"),
    3: ("network", "connection"),
    5: ("process", "end"),
    6: ("driver", "start"),
    7: ("process", "change"),
    8: ("process", "change"),
    10: ("process", "access"),
    11: ("file", "creation"),
    12: ("registry", "change"),
    13: ("registry", "change"),
    14: ("registry", "change"),
    15: ("file", "creation"),
    17: ("file", "creation"),
    18: ("file", "access"),
    22: ("network", "protocol"),
    23: ("file", "deletion"),
    25: ("process", "change"),
    26: ("file", "deletion"),
}
# Sysmon's task names, the event.action both shippers agree on (Winlogbeat sends it as event.action,
# NXLog as Category); used when neither says.
ACTIONS: dict[int, str] = {
    1: "Process Create (rule: ProcessCreate)",
    3: "Network connection detected (rule: NetworkConnect)",
    5: "Process terminated (rule: ProcessTerminate)",
    6: "Driver loaded (rule: DriverLoad)",
    7: "Image loaded (rule: ImageLoad)",
    8: "CreateRemoteThread detected (rule: CreateRemoteThread)",
    10: "Process accessed (rule: ProcessAccess)",
    11: "File created (rule: FileCreate)",
    12: "Registry object added or deleted (rule: RegistryEvent)",
    13: "Registry value set (rule: RegistryEvent)",
    14: "Registry object renamed (rule: RegistryEvent)",
    15: "File stream created (rule: FileCreateStreamHash)",
    17: "Pipe Created (rule: PipeEvent)",
    18: "Pipe Connected (rule: PipeEvent)",
    22: "Dns query (rule: DnsQuery)",
    23: "File Delete archived (rule: FileDelete)",
    25: "Process Tampering (rule: ProcessTampering)",
    26: "File Delete logged (rule: FileDeleteDetected)",
}
# Sysmon's own EventType values (12-14, 17-18). NXLog has a field of that name too (its severity kind,
# INFO or AUDIT_SUCCESS), which may stand in the record instead: only these are read as Sysmon's.
_REGISTRY_TYPES = {"CreateKey": "creation", "DeleteKey": "deletion", "CreateValue": "creation",
                   "DeleteValue": "deletion", "SetValue": "change", "RenameKey": "change"}
# Registry hives as Sysmon abbreviates them (ECS registry.hive keeps the abbreviation).
_HIVES = ("HKLM", "HKU", "HKCR", "HKCU", "HKCC")
_HASHES = {"MD5": "md5", "SHA1": "sha1", "SHA256": "sha256", "IMPHASH": "imphash"}


def matches(fields: dict[str, Any]) -> bool:
    """A Sysmon event by either shipper: its channel or its provider says so."""
    winlog = fields.get("winlog")
    if isinstance(winlog, dict):
        return winlog.get("channel") == CHANNEL or winlog.get("provider_name") == PROVIDER
    return "EventID" in fields and (fields.get("Channel") in (CHANNEL, LINUX_CHANNEL)
                                    or fields.get("SourceName") in (PROVIDER, LINUX_PROVIDER))


def enrich(fields: dict[str, Any], dataset: str = "event") -> Any:
    """Add the common names to the ``@fields`` of a Sysmon event (in place); returns its time."""
    found = windows_common(fields)
    if found is None:
        return None
    data, event_id, common = found
    known = EVENTS.get(event_id)
    if known is not None:
        category, kind = known
        action = _action(fields, event_id)
        common["event"].update({"category": category, "type": kind, "action": action})
        common.update(_of(event_id, data))
        sysmon_type = data.get("EventType")
        # A hostile line's EventType may be a list or an object: only a string names a type.
        if category == "registry" and isinstance(sysmon_type, str) and sysmon_type in _REGISTRY_TYPES:
            common["event"]["type"] = _REGISTRY_TYPES[sysmon_type]
    merge(fields, compact(common))
    # Sysmon's UtcTime is UTC to the millisecond; NXLog's EventTime is the sender's local time without a
    # zone, to the second. (A @timestamp the shipper sent, as Winlogbeat does, wins over both.)
    return _utc(data.get("UtcTime")) or fields.get("EventTime")


def _action(fields: dict[str, Any], event_id: int) -> str:
    """The task name: Winlogbeat's event.action or winlog.task, NXLog's Category, else Sysmon's own."""
    winlog = fields.get("winlog")
    for value in (winlog.get("task") if isinstance(winlog, dict) else None, fields.get("Category")):
        if isinstance(value, str) and value.endswith(")") and "(rule: " in value:
            return value
    return ACTIONS[event_id]


def _of(event_id: int, data: dict[str, Any]) -> dict[str, Any]:
    """The ECS names of one Sysmon event's data."""
    out: dict[str, Any] = {}
    if event_id in (8, 10):  # the acting process is the source; the target stays in the event's own fields
        out["process"] = _process(data, "Source")
        if event_id == 10:
            out["process"]["thread"] = {"id": pid(data.get("SourceThreadId"))}
        out["user"] = account(data.get("SourceUser"))
    elif event_id != 6:  # a driver load has no process
        out["process"] = _process(data, "")
        out["user"] = account(data.get("User"))
    if event_id == 1:
        process = out["process"]
        process["command_line"] = _str(data.get("CommandLine"))
        process["working_directory"] = _str(data.get("CurrentDirectory"))
        process["pe"] = _pe(data)
        process["hash"], imphash = _hashes(data.get("Hashes"))
        process["pe"]["imphash"] = imphash
        process["parent"] = _process(data, "Parent")
        process["parent"]["command_line"] = _str(data.get("ParentCommandLine"))
    elif event_id == 3:
        out["source"] = _end(data, "Source")
        out["destination"] = _end(data, "Destination")
        initiated = data.get("Initiated")
        out["network"] = {"transport": transport(data.get("Protocol")),
                          "direction": {"true": "egress", "false": "ingress"}.get(str(initiated).lower()),
                          "type": {"true": "ipv6", "false": "ipv4"}.get(str(data.get("SourceIsIpv6")).lower())}
    elif event_id in (6, 7):  # the driver or module loaded
        loaded = _str(data.get("ImageLoaded"))
        hashes, imphash = _hashes(data.get("Hashes"))
        out["file"] = {"path": loaded, "name": image_name(loaded), "hash": hashes, "pe": {**_pe(data),
                       "imphash": imphash},
                       "code_signature": {"signed": _flag(data.get("Signed")), "subject_name": _str(data.get("Signature")),
                                          "status": _str(data.get("SignatureStatus"))}}
    elif event_id in (11, 15, 23, 26):
        target = _str(data.get("TargetFilename"))
        hashes, _imphash = _hashes(data.get("Hashes") or data.get("Hash"))
        out["file"] = {"path": target, "name": image_name(target), "directory": _directory(target),
                       "extension": _extension(target), "hash": hashes}
    elif event_id in (12, 13, 14):
        out["registry"] = _registry(data, event_id)
    elif event_id in (17, 18):
        out["file"] = {"name": _str(data.get("PipeName"))}
    elif event_id == 22:
        out["dns"] = {"question": {"name": _str(data.get("QueryName"))},
                      "resolved_ip": _resolved(data.get("QueryResults")),
                      "response_code": "NOERROR" if str(data.get("QueryStatus")) == "0" else None}
        out["network"] = {"protocol": "dns"}
    return out


def _process(data: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A process by the names Sysmon gives it (``Image``, ``ParentImage``, ``SourceImage``...)."""
    image = _str(data.get(f"{prefix}Image"))
    # Sysmon spells the GUID ProcessGuid, ParentProcessGuid and SourceProcessGUID.
    guid = data.get(f"{prefix}ProcessGuid") or data.get(f"{prefix}ProcessGUID")
    return {"executable": image, "name": image_name(image), "pid": pid(data.get(f"{prefix}ProcessId")),
            "entity_id": _str(guid)}


def _pe(data: dict[str, Any]) -> dict[str, Any]:
    return {"original_file_name": _str(data.get("OriginalFileName")), "description": _str(data.get("Description")),
            "product": _str(data.get("Product")), "company": _str(data.get("Company")),
            "file_version": _str(data.get("FileVersion"))}


def _hashes(value: Any) -> tuple[dict[str, Any], str | None]:
    """``SHA1=5E4F...,MD5=FAB4...,IMPHASH=C324...`` -> ({"sha1": "5e4f...", "md5": ...}, imphash),
    lower case as ECS writes hashes; an unknown or empty algorithm is left out."""
    out: dict[str, Any] = {}
    if not isinstance(value, str):
        return out, None
    for part in value[:1024].split(","):
        name, sep, digest = part.partition("=")
        key = _HASHES.get(name.strip().upper())
        digest = digest.strip()
        if sep and key and digest and len(digest) <= 128 and all(c in "0123456789abcdefABCDEF" for c in digest):
            out[key] = digest.lower()
    return out, out.pop("imphash", None)


def _end(data: dict[str, Any], side: str) -> dict[str, Any]:
    """One end of a network connection (``SourceIp``, ``SourcePort``, ``SourceHostname``)."""
    return {"ip": ip(data.get(f"{side}Ip")), "port": port(data.get(f"{side}Port")),
            "domain": _str(data.get(f"{side}Hostname"))}


def _registry(data: dict[str, Any], event_id: int) -> dict[str, Any]:
    """``HKLM\\System\\CurrentControlSet\\Services\\x\\ImagePath`` -> hive ``HKLM``, key
    ``System\\...\\x``, value ``ImagePath`` (a value's events: 13, and 12/14 on a value)."""
    target = _str(data.get("TargetObject"))
    if target is None:
        return {}
    hive, _sep, rest = target.partition("\\")
    out: dict[str, Any] = {"path": target, "hive": hive if hive.upper() in _HIVES else None}
    on_value = event_id == 13 or data.get("EventType") in ("DeleteValue", "CreateValue")
    if on_value and "\\" in rest:
        out["key"], _sep, out["value"] = rest.rpartition("\\")
    else:
        out["key"] = rest or None
    details = _str(data.get("Details"))
    if event_id == 13 and details is not None:
        out["data"] = {"strings": [details]}
    return out


def _resolved(value: Any) -> list[str] | None:
    """The addresses among Sysmon's ``QueryResults`` (``type:  5 x.example;::ffff:192.0.2.10;``)."""
    if not isinstance(value, str):
        return None
    found: list[str] = []
    for part in value[:4096].split(";"):
        address = ip(part.strip().removeprefix("::ffff:"))
        if address is not None and address not in found:
            found.append(address)
    return found or None


def _directory(path: str | None) -> str | None:
    """A Windows path's directory; a Linux one's (Sysmon for Linux) when it has no backslash."""
    if path is None:
        return None
    separator = "\\" if "\\" in path else "/" if path.startswith("/") else None
    return (path.rsplit(separator, 1)[0] or separator) if separator else None


def _extension(path: str | None) -> str | None:
    name = image_name(path)
    if name is None or "." not in name:
        return None
    extension = name.rsplit(".", 1)[1]
    return extension.lower() if 0 < len(extension) <= 16 else None


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(value.lower()) if isinstance(value, str) else None


def _str(value: Any) -> str | None:
    """Text that says something (Sysmon writes ``-`` for an empty value); a number as its text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) and value and value != "-" else None


def _utc(value: Any) -> str | None:
    """Sysmon's ``UtcTime`` (``2024-05-01 11:58:00.123``) as an ISO time in UTC."""
    if not isinstance(value, str) or len(value) != 23 or value[10] != " ":
        return None
    return value.replace(" ", "T") + "Z"
