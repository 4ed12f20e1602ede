"""An event in the Windows event XML rendering, as Sysmon for Linux writes it into syslog.

Sysmon for Linux (Microsoft's port of Sysmon) logs each event to syslog,
program ``sysmon``, as one line of the XML Windows renders an event in::

    <Event><System><Provider Name="Linux-Sysmon" .../><EventID>11</EventID>...
    <Channel>Linux-Sysmon/Operational</Channel><Computer>web-1</Computer>...</System>
    <EventData><Data Name="Image">/usr/bin/curl</Data><Data Name="TargetFilename">/tmp/x</Data>...
    </EventData></Event>

The fields come out as NXLog sends a Windows event: the ``System`` header
as ``EventID``, ``Channel``, ``Computer``, ``SourceName`` (the provider),
``EventRecordID``, and every ``Data`` at the top under its own name, so
ingest/sysmon.py adds the same common names as for Windows Sysmon and a
Sigma rule reads Sysmon's own names (``Image``, ``TargetFilename``).

A line is hostile until parsed: defusedxml refuses DTDs and entities (no
entity expansion, nothing fetched), and anything but an ``Event`` element
with at most ``MAX_DATA`` plain-text ``Data`` items is not this format
(None: the line keeps its text, searchable as any syslog line).
"""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

MAX_DATA = 256  # Sysmon's largest event (process creation) has 24 Data items
MAX_NAME = 100
_NS = "{http://schemas.microsoft.com/win/2004/08/events/event}"  # Windows writes the namespace; Sysmon for Linux does not
# The System header's elements kept as NXLog names them.
_HEADER = {"EventID": "EventID", "Version": "Version", "Level": "Level", "Task": "Task", "Opcode": "Opcode",
           "Keywords": "Keywords", "EventRecordID": "EventRecordID", "Channel": "Channel",
           "Computer": "Computer"}


def looks_like(msg: str) -> bool:
    return msg.startswith("<Event>") or msg.startswith("<Event ")


def parse(msg: str) -> dict[str, Any] | None:
    """The fields of one ``<Event>`` line, or None when it is not one."""
    try:
        root = fromstring(msg, forbid_dtd=True)
    except (ParseError, DefusedXmlException, ValueError):
        return None
    if _local(root.tag) != "Event":
        return None
    fields: dict[str, Any] = {}
    system, data = _child(root, "System"), _child(root, "EventData")
    if system is None or data is None:
        return None
    for element in system:
        name = _local(element.tag)
        if name in _HEADER and element.text and not len(element):
            fields[_HEADER[name]] = element.text.strip()
        elif name == "Provider" and element.get("Name"):
            fields["SourceName"] = element.get("Name")
        elif name == "Execution":
            for attribute, key in (("ProcessID", "ExecutionProcessID"), ("ThreadID", "ExecutionThreadID")):
                if element.get(attribute):
                    fields[key] = element.get(attribute)
        elif name == "TimeCreated" and element.get("SystemTime"):
            fields["TimeCreated"] = element.get("SystemTime")
    event_id = fields.get("EventID")
    if not (isinstance(event_id, str) and event_id.isdigit() and len(event_id) < 7):
        return None
    fields["EventID"] = int(event_id)
    items = list(data)
    if len(items) > MAX_DATA:
        return None
    for item in items:
        name = item.get("Name")
        if _local(item.tag) != "Data" or not name or len(name) > MAX_NAME or len(item):
            return None
        fields.setdefault(name, item.text or "")
    return fields


def _local(tag: Any) -> str:
    return tag[len(_NS):] if isinstance(tag, str) and tag.startswith(_NS) else tag if isinstance(tag, str) else ""


def _child(parent: Element, name: str) -> Element | None:
    return next((c for c in parent if _local(c.tag) == name), None)
