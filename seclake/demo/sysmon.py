"""Sysmon events from the workstations, as Winlogbeat and NXLog ship them (JSON lines).

Sysmon is the main Windows detection source (most of SigmaHQ's Windows rules
read it), so the demo and the benchmark carry it beside the Windows logons:
process creations, network connections, DNS queries, file creations, registry
changes, image loads, process access and terminations, in the shares a
workstation's Sysmon with a common configuration writes them. The processes
are the demo world's (``vocabulary.PROCESSES``, also the EDR's), their
network peers and domains the world's: no scenario value (attackers,
needles) ever appears here, so a search for one finds only its episode.

acme and initech ship with Winlogbeat (the event's data under
``winlog.event_data``, ECS's ``event``, ``@timestamp`` ISO 8601), globex with
NXLog's ``im_msvistalog`` JSON (the data at the top, ``EventTime`` local
time without a zone: the hosts run on UTC), both exactly as
``tests/ingest/fixtures/sysmon.json`` has them. The vendor is the Windows
source's (``windows``): seclake tells the shapes apart by content.
"""

from __future__ import annotations

import hashlib
from bisect import bisect
from collections.abc import Callable
from itertools import accumulate
from typing import Any

import orjson

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant, World

VENDOR = "windows"
DATASET = "event"
CHANNEL = "Microsoft-Windows-Sysmon/Operational"
PROVIDER = "Microsoft-Windows-Sysmon"
PROVIDER_GUID = "{5770385F-C22A-43E0-BF4C-06F5698FFBD9}"
NXLOG_TENANTS = frozenset({"globex"})

# Event id, its task name (Winlogbeat's event.action, NXLog's Category), its share of the lines.
EVENTS = (
    (1, "Process Create (rule: ProcessCreate)", 0.22),
    (3, "Network connection detected (rule: NetworkConnect)", 0.22),
    (22, "Dns query (rule: DnsQuery)", 0.14),
    (11, "File created (rule: FileCreate)", 0.13),
    (13, "Registry value set (rule: RegistryEvent)", 0.12),
    (12, "Registry object added or deleted (rule: RegistryEvent)", 0.04),
    (7, "Image loaded (rule: ImageLoad)", 0.07),
    (10, "Process accessed (rule: ProcessAccess)", 0.03),
    (5, "Process terminated (rule: ProcessTerminate)", 0.03),
)
_EVENT_CUM = list(accumulate(share for _, _, share in EVENTS))

# What Windows says of each image of the world (OriginalFileName, Description, Product, Company,
# FileVersion): Sysmon 1 and 7 carry it. The unsigned installer says nothing ("-").
_MS = ("Microsoft® Windows® Operating System", "Microsoft Corporation")
_OFFICE = ("Microsoft Office", "Microsoft Corporation")
PE = {
    "chrome.exe": ("chrome.exe", "Google Chrome", "Google Chrome", "Google LLC", "119.0.6045.160"),
    "svchost.exe": ("svchost.exe", "Host Process for Windows Services", *_MS, "10.0.19041.1 (WinBuild.160101.0800)"),
    "msedge.exe": ("msedge.exe", "Microsoft Edge", "Microsoft Edge", "Microsoft Corporation", "119.0.2151.72"),
    "OUTLOOK.EXE": ("Outlook.exe", "Microsoft Outlook", *_OFFICE, "16.0.16924.20124"),
    "Teams.exe": ("Teams.exe", "Microsoft Teams", "Microsoft Teams", "Microsoft Corporation", "1.6.0.27573"),
    "conhost.exe": ("CONHOST.EXE", "Console Window Host", *_MS, "10.0.19041.1202 (WinBuild.160101.0800)"),
    "taskhostw.exe": ("taskhostw.exe", "Host Process for Windows Tasks", *_MS, "10.0.19041.1806 (WinBuild.160101.0800)"),
    "SearchIndexer.exe": ("SearchIndexer.exe", "Microsoft Windows Search Indexer", *_MS, "7.0.19041.3636 (WinBuild.160101.0800)"),
    "MsMpEng.exe": ("MsMpEng.exe", "Antimalware Service Executable", *_MS, "4.18.23110.3 (WinBuild.160101.0800)"),
    "EXCEL.EXE": ("Excel.exe", "Microsoft Excel", *_OFFICE, "16.0.16924.20124"),
    "WINWORD.EXE": ("WinWord.exe", "Microsoft Word", *_OFFICE, "16.0.16924.20124"),
    "cmd.exe": ("Cmd.Exe", "Windows Command Processor", *_MS, "10.0.19041.3636 (WinBuild.160101.0800)"),
    "powershell.exe": ("PowerShell.EXE", "Windows PowerShell", *_MS, "10.0.19041.3636 (WinBuild.160101.0800)"),
    "OneDrive.exe": ("OneDrive.exe", "Microsoft OneDrive", "Microsoft OneDrive", "Microsoft Corporation", "23.226.1031.0003"),
    "notepad.exe": ("NOTEPAD.EXE", "Notepad", *_MS, "10.0.19041.3570 (WinBuild.160101.0800)"),
    "git.exe": ("git.exe", "Git for Windows", "Git", "The Git Development Community", "2.42.0.2"),
    "Code.exe": ("electron.exe", "Visual Studio Code", "Visual Studio Code", "Microsoft Corporation", "1.84.2"),
    "gpupdate.exe": ("GPUpdate.exe", "Microsoft® Group Policy Update Utility", *_MS, "10.0.19041.1 (WinBuild.160101.0800)"),
    "WmiPrvSE.exe": ("Wmiprvse.exe", "WMI Provider Host", *_MS, "10.0.19041.3636 (WinBuild.160101.0800)"),
    "explorer.exe": ("EXPLORER.EXE", "Windows Explorer", *_MS, "10.0.19041.3636 (WinBuild.160101.0800)"),
    "services.exe": ("services.exe", "Services and Controller app", *_MS, "10.0.19041.3636 (WinBuild.160101.0800)"),
}
_NO_PE = ("-", "-", "-", "-", "-")

# DLLs the processes load (Sysmon 7), with what Windows says of them and their signature.
DLLS = (
    (r"C:\Windows\System32\ntdll.dll", "ntdll.dll", "NT Layer DLL"),
    (r"C:\Windows\System32\kernel32.dll", "kernel32", "Windows NT BASE API Client DLL"),
    (r"C:\Windows\System32\ws2_32.dll", "ws2_32.dll", "Windows Socket 2.0 32-Bit DLL"),
    (r"C:\Windows\System32\crypt32.dll", "CRYPT32.DLL", "Crypto API32"),
    (r"C:\Windows\System32\winhttp.dll", "winhttp.dll", "Windows HTTP Services"),
    (r"C:\Windows\System32\dnsapi.dll", "dnsapi", "DNS Client API DLL"),
    (r"C:\Windows\System32\amsi.dll", "AMSI.DLL", "Anti-Malware Scan Interface"),
)

# Registry values the processes set (Sysmon 13: TargetObject, Details); {sid} is the user's.
REGISTRY = (
    (r"HKU\{sid}\Software\Microsoft\Windows\CurrentVersion\Explorer\RecentDocs\.docx\MRUListEx", "Binary Data"),
    (r"HKU\{sid}\Software\Microsoft\Office\16.0\Common\Roaming\Identities\Count", "DWORD (0x00000003)"),
    (r"HKLM\System\CurrentControlSet\Services\bam\State\UserSettings\{sid}\\Device\HarddiskVolume3\Windows\System32\notepad.exe", "Binary Data"),
    (r"HKU\{sid}\Software\Microsoft\Windows\CurrentVersion\Explorer\UserAssist\{{CEBFF5CD-ACE2-4F4F-9178-9926F41749EA}}\Count\HRZR_PGYFRFFVBA", "Binary Data"),
    (r"HKLM\SOFTWARE\Microsoft\Windows Defender\Signature Updates\SignaturesLastUpdated", "QWORD (0x01da1c3b-0x6f0e8a10)"),
    (r"HKU\{sid}\Software\Google\Chrome\BLBeacon\state", "DWORD (0x00000001)"),
)
REGISTRY_KEYS = (
    r"HKU\{sid}\Software\Microsoft\Windows\CurrentVersion\Explorer\SessionInfo\1\ApplicationViewManagement",
    r"HKLM\System\CurrentControlSet\Services\Tcpip\Parameters\Interfaces\{{8A1F1E53-6C0B-4F0B-9B0D-2C1F5E7A9D10}}",
)

# Files the processes write (Sysmon 11), under the user's profile; {user} and {n} filled in.
FILES = (
    r"C:\Users\{user}\AppData\Local\Google\Chrome\User Data\Default\Cache\Cache_Data\f_{n:06x}",
    r"C:\Users\{user}\AppData\Local\Microsoft\Windows\INetCache\IE\{n:08X}.tmp",
    r"C:\Users\{user}\AppData\Local\Temp\~DF{n:04X}.tmp",
    r"C:\Users\{user}\Documents\Report {n}.docx",
    r"C:\Users\{user}\AppData\Roaming\Microsoft\Windows\Recent\Report {n}.lnk",
    r"C:\Windows\Prefetch\SVCHOST.EXE-{n:08X}.pf",
)

def _guid(rnd: Callable[[], float]) -> str:
    """A Sysmon process GUID ({8-4-4-4-12} hex digits), from two draws (one per digit was most of a line's cost)."""
    a, b = int(rnd() * 2**52), int(rnd() * 2**52)
    h = f"{a:013X}{b:013X}{a ^ b:06X}"[:32]
    return f"{{{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}}}"


def _file_name(path: str) -> str:
    return path.rsplit("\\", 1)[-1]


def _hashes(image: str) -> str:
    """Sysmon's Hashes for a file: the same file always has the same hashes."""
    h = hashlib.sha256(image.encode()).hexdigest().upper()
    return f"SHA1={h[:40]},MD5={h[24:56]},SHA256={h},IMPHASH={h[8:40]}"


class Sysmon(Source):
    """One Sysmon event of a workstation, in its tenant's shipper's shape."""

    vendor = VENDOR
    dataset = DATASET

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self._hashes = {p[0]: _hashes(p[0]) for p in world.processes.values}
        self._dll_hashes = {d[0]: _hashes(d[0]) for d in DLLS}
        # A stable SID per tenant; the user's RID from the name.
        self._sid = {t.name: f"S-1-5-21-{1000000000 + i * 7919}-{2000000000 + i * 104729}-{3000000000 + i * 1299709}"
                     for i, t in enumerate(world.tenants)}
        self._records: dict[str, int] = {}

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        w = self.w
        image, parent, cmdline, signed = w.processes.draw(rnd)
        i = tn.ws.draw(rnd)
        host = f"{tn.workstations[i]}.{tn.domain}"
        system = parent.endswith(("services.exe", "svchost.exe"))
        owner = tn.owners[i]
        user = "NT AUTHORITY\\SYSTEM" if system else f"{tn.netbios}\\{owner}"
        sid = f"{self._sid[tn.name]}-{1100 + sum(map(ord, owner)) % 8000}"
        pid = 4 * int(1 + rnd() * 8000)
        utc = f"{m.date} {m.time_at(ts)}.{ts % 1000:03d}"
        eid, task, _ = EVENTS[min(bisect(_EVENT_CUM, rnd() * _EVENT_CUM[-1]), len(EVENTS) - 1)]
        data: dict[str, Any] = {"RuleName": "-", "UtcTime": utc}
        if eid == 10:
            target, _, _, _ = w.processes.draw(rnd)
            data.update(SourceProcessGUID=_guid(rnd), SourceProcessId=str(pid), SourceThreadId=str(4 * int(1 + rnd() * 4000)),
                        SourceImage=image, TargetProcessGUID=_guid(rnd), TargetProcessId=str(4 * int(1 + rnd() * 8000)),
                        TargetImage=target, GrantedAccess="0x1000" if rnd() < 0.7 else "0x1400",
                        CallTrace=r"C:\Windows\SYSTEM32\ntdll.dll+9d1e4|C:\Windows\System32\KERNELBASE.dll+2c13e",
                        SourceUser=user, TargetUser=user)
        else:
            data.update(ProcessGuid=_guid(rnd), ProcessId=str(pid), Image=image)
        if eid == 1:
            pe = PE.get(_file_name(image), _NO_PE)
            data.update(FileVersion=pe[4], Description=pe[1], Product=pe[2], Company=pe[3], OriginalFileName=pe[0],
                        CommandLine=cmdline,
                        CurrentDirectory="C:\\Windows\\system32\\" if system else f"C:\\Users\\{owner}\\",
                        User=user, LogonGuid=_guid(rnd), LogonId="0x3e7" if system else f"0x{int(rnd() * 0xFFFFFF):x}",
                        TerminalSessionId="0" if system else "1", IntegrityLevel="System" if system else "Medium",
                        Hashes=self._hashes[image], ParentProcessGuid=_guid(rnd),
                        ParentProcessId=str(4 * int(1 + rnd() * 2000)), ParentImage=parent,
                        ParentCommandLine=parent if not parent.endswith("explorer.exe") else "C:\\Windows\\Explorer.EXE",
                        ParentUser=user)
        elif eid == 3:
            service, port, proto = w.services.draw(rnd)
            internal = rnd() < 0.3
            dst = tn.servers.draw(rnd).ip if internal else w.external_ips.draw(rnd)
            data.update(User=user, Protocol="udp" if proto == 17 else "tcp", Initiated="true", SourceIsIpv6="false",
                        SourceIp=tn.workstation_ips[i], SourceHostname=host, SourcePort=str(49152 + int(rnd() * 16000)),
                        SourcePortName="-", DestinationIsIpv6="false", DestinationIp=dst, DestinationHostname="-",
                        DestinationPort=str(port or 443), DestinationPortName=service.lower())
        elif eid == 22:
            query = w.domains.draw(rnd)[0]
            a = w.external_ips.draw(rnd)
            data.update(QueryName=query, QueryStatus="0", QueryResults=f"::ffff:{a};", User=user)
        elif eid == 11:
            path = FILES[int(rnd() * len(FILES))].format(user=owner, n=int(rnd() * 0xFFFFFF))
            data.update(TargetFilename=path, CreationUtcTime=utc, User=user)
        elif eid == 13:
            target, details = REGISTRY[int(rnd() * len(REGISTRY))]
            data = {"EventType": "SetValue", **data, "TargetObject": target.format(sid=sid), "Details": details,
                    "User": user}
        elif eid == 12:
            data = {"EventType": "CreateKey", **data,
                    "TargetObject": REGISTRY_KEYS[int(rnd() * len(REGISTRY_KEYS))].format(sid=sid), "User": user}
        elif eid == 7:
            dll, original, description = DLLS[int(rnd() * len(DLLS))]
            data.update(ImageLoaded=dll, FileVersion="10.0.19041.3636 (WinBuild.160101.0800)", Description=description,
                        Product=_MS[0], Company=_MS[1], OriginalFileName=original, Hashes=self._dll_hashes[dll],
                        Signed="true", Signature="Microsoft Windows", SignatureStatus="Valid", User=user)
        elif eid == 5:
            data["User"] = user
        # Each host numbers its records (Winlogbeat's record_id, NXLog's RecordNumber).
        record = self._records.get(host) or 400_000 + int(rnd() * 100_000)
        record += 1
        self._records[host] = record
        if tn.name in NXLOG_TENANTS:
            return _nxlog(m, ts, host, eid, task, record, data)
        return _winlogbeat(m, ts, host, eid, task, record, data)


def _winlogbeat(m: Minute, ts: int, host: str, eid: int, task: str, record: int, data: dict[str, Any]) -> str:
    """A Winlogbeat 8 event as its JSON output writes it (one line)."""
    at = m.iso_at(ts)
    short = host.split(".", 1)[0]
    return orjson.dumps({
        "@timestamp": at,
        "event": {"action": task, "code": str(eid), "created": at, "kind": "event", "provider": PROVIDER},
        "log": {"level": "information"},
        "winlog": {"api": "wineventlog", "channel": CHANNEL, "computer_name": host, "event_data": data,
                   "event_id": str(eid), "opcode": "Info", "process": {"pid": 3544, "thread": {"id": 4272}},
                   "provider_guid": PROVIDER_GUID.lower(), "provider_name": PROVIDER, "record_id": str(record),
                   "task": task, "user": {"domain": "NT AUTHORITY", "identifier": "S-1-5-18", "name": "SYSTEM",
                                          "type": "User"}, "version": 5},
        "ecs": {"version": "8.0.0"},
        "agent": {"type": "winlogbeat", "version": "8.13.4", "name": short},
    }).decode()


def _nxlog(m: Minute, ts: int, host: str, eid: int, task: str, record: int, data: dict[str, Any]) -> str:
    """NXLog's im_msvistalog record as its to_json() writes it (one line): the event's data at the top."""
    local = f"{m.date} {m.time_at(ts)}"
    head: dict[str, Any] = {
        "EventTime": local, "Hostname": host, "Keywords": "0x8000000000000000",
        "EventType": data.pop("EventType", "INFO"), "SeverityValue": 2, "Severity": "INFO", "EventID": eid,
        "SourceName": PROVIDER, "ProviderGuid": PROVIDER_GUID, "Version": 5, "TaskValue": eid, "OpcodeValue": 0,
        "RecordNumber": record, "ExecutionProcessID": 3544, "ExecutionThreadID": 4272, "Channel": CHANNEL,
        "Domain": "NT AUTHORITY", "AccountName": "SYSTEM", "UserID": "S-1-5-18", "AccountType": "User",
        "Category": task, "Opcode": "Info",
    }
    head.update(data)
    head.update(EventReceivedTime=local, SourceModuleName="sysmon", SourceModuleType="im_msvistalog")
    return orjson.dumps(head).decode()
