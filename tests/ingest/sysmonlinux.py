"""Sysmon for Linux's syslog lines, rendered as it writes them (shared by the ingest and Sigma tests).

Sysmon for Linux logs each event through syslog (program ``sysmon``) as the
XML Windows renders an event in, on one line: the ``System`` header without
a namespace, then one ``<Data Name=...>`` per field, values XML-escaped.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

_HEADER = ('<Event><System><Provider Name="Linux-Sysmon" Guid="{{ff032593-a8d3-4f13-b0d6-01fc615a0f97}}"/>'
           '<EventID>{id}</EventID><Version>5</Version><Level>4</Level><Task>{id}</Task><Opcode>0</Opcode>'
           '<Keywords>0x8000000000000000</Keywords><TimeCreated SystemTime="{created}"/>'
           '<EventRecordID>{record}</EventRecordID><Correlation/><Execution ProcessID="1102" ThreadID="1102"/>'
           '<Channel>Linux-Sysmon/Operational</Channel><Computer>{host}</Computer><Security UserId="0"/>'
           '</System><EventData>')


def line(event_id: int, utc: str, data: dict[str, str], host: str = "web01", record: int = 14,
         rfc: str = "5424") -> str:
    """A syslog line of one Sysmon for Linux event; ``utc`` as Sysmon writes UtcTime (``2024-05-01 12:07:00.120``)."""
    created = utc.replace(" ", "T") + "000000Z"
    xml = _HEADER.format(id=event_id, created=created, record=record, host=host)
    xml += "".join(f"<Data Name={quoteattr(k)}>{escape(v)}</Data>" for k, v in
                   {"RuleName": "-", "UtcTime": utc, **data}.items())
    xml += "</EventData></Event>"
    if rfc == "5424":
        return f"<14>1 {created[:23]}Z {host} sysmon 1102 - - {xml}"
    return f"<14>May  1 {utc[11:19]} {host} sysmon: {xml}"  # rsyslog's traditional file format


def process(utc: str, image: str, command_line: str, parent: str = "/usr/bin/bash", user: str = "alice",
            **kw) -> str:
    return line(1, utc, {"ProcessGuid": "{a8fa4b5d-0db4-6854-8d8e-0c28645d0000}", "ProcessId": "8246",
                         "Image": image, "FileVersion": "-", "Description": "-", "Product": "-", "Company": "-",
                         "OriginalFileName": "-", "CommandLine": command_line, "CurrentDirectory": "/home/alice",
                         "User": user, "LogonGuid": "{a8fa4b5d-0000-0000-e803-000000000000}", "LogonId": "1000",
                         "TerminalSessionId": "3", "IntegrityLevel": "no level", "Hashes": "-",
                         "ParentProcessGuid": "{a8fa4b5d-0db4-6854-4d8e-0c28645d0000}", "ParentProcessId": "8200",
                         "ParentImage": parent, "ParentCommandLine": parent, "ParentUser": user}, **kw)


def connection(utc: str, image: str, destination: str, port: int, **kw) -> str:
    return line(3, utc, {"ProcessGuid": "{a8fa4b5d-0db4-6854-8d8e-0c28645d0000}", "ProcessId": "8300",
                         "Image": image, "User": "alice", "Protocol": "tcp", "Initiated": "true",
                         "SourceIsIpv6": "false", "SourceIp": "10.1.2.3", "SourceHostname": "-",
                         "SourcePort": "51515", "SourcePortName": "-", "DestinationIsIpv6": "false",
                         "DestinationIp": destination, "DestinationHostname": "-", "DestinationPort": str(port),
                         "DestinationPortName": "-"}, **kw)


def file_created(utc: str, image: str, target: str, **kw) -> str:
    return line(11, utc, {"ProcessGuid": "{a8fa4b5d-0db4-6854-8d8e-0c28645d0000}", "ProcessId": "8400",
                          "Image": image, "TargetFilename": target, "CreationUtcTime": utc, "User": "alice"}, **kw)
