"""Which records a Sigma ``logsource`` selects, and what a behavior from it is keyed by.

A Sigma rule names its log source abstractly (``product: windows``,
``category: process_creation``; or ``service: security``); the records
seclake stores say where they came from through fields every shipper's
record of that source carries once parsed (docs/fields.md):

* Windows event logs: ``event.code`` (the event id) and ``winlog.channel``
  (the channel), set alike on Winlogbeat and NXLog records by
  ``ingest/winsecurity.py`` and ``ingest/sysmon.py``. Sysmon categories are
  Sysmon's event ids on its channel (the ids are Sysmon's schema, as
  pySigma's Sysmon pipeline lists them); ``process_creation`` is also
  Security 4688, the Windows audit event for the same thing.
* Linux: ``process_creation`` is a process start seen by auditd (EXECVE) or
  Sysmon for Linux (event 1); ``file_event`` and ``network_connection`` are
  Sysmon for Linux's events 11 and 3 (its own names, as Sysmon's rules read
  them); ``service: auditd`` is any auditd record (``observer.product: auditd``).
* Linux syslog services (``sshd``, ``sudo``, ``cron``, ``vsftpd``...): the
  syslog program that wrote the line; ``auth`` the auth/authpriv facilities,
  ``syslog`` any syslog line; ``product: linux`` alone (keyword rules) any
  syslog line or auditd record.
* AWS CloudTrail and Okta: their own record shapes (``eventSource`` +
  ``eventVersion``; ``eventType`` + ``actor``); Azure/Entra ID sign-ins
  (``service: signinlogs``): ``ingest/entra.py``'s records (Graph or the
  Azure Monitor export).
* Zeek (``product: zeek``, ``service`` a Zeek log name): ``event.dataset``
  ``zeek.<log>`` that ``ingest/zeek.py`` sets. FortiGate's ``event`` logs:
  its own ``type`` field.
* The generic network categories, whatever wrote the record, through the
  common names every such parser adds: ``dns`` a DNS query
  (``dns.question.name``: Zeek, Suricata, FortiGate, Sysmon 22), ``proxy`` and
  ``webserver`` an HTTP request (``event.category: web``), ``firewall`` a
  connection seen by a firewall (``event.category: network`` with both
  addresses).

A log source not listed here is ``Unsupported``: its rules are skipped with
that reason at import, never imported to fire on the wrong records.
"""

from __future__ import annotations

from dataclasses import dataclass

from sigma.pipelines.common import windows_logsource_mapping
from sigma.rule import SigmaLogSource

from seclake.query import ast
from seclake.sigma.unsupported import Unsupported

SYSMON_CHANNEL = "Microsoft-Windows-Sysmon/Operational"

# Sigma's generic Windows categories -> Sysmon event ids (Sysmon's schema).
SYSMON_IDS: dict[str, tuple[int, ...]] = {
    "process_creation": (1,),
    "file_change": (2,),
    "network_connection": (3,),
    "sysmon_status": (4, 16),
    "process_termination": (5,),
    "driver_load": (6,),
    "image_load": (7,),
    "create_remote_thread": (8,),
    "raw_access_thread": (9,),
    "process_access": (10,),
    "file_event": (11,),
    "registry_add": (12,),
    "registry_delete": (12,),
    "registry_set": (13,),
    "registry_rename": (14,),
    "registry_event": (12, 13, 14),
    "create_stream_hash": (15,),
    "pipe_created": (17, 18),
    "wmi_event": (19, 20, 21),
    "dns_query": (22,),
    "file_delete": (23, 26),
    "clipboard_capture": (24,),
    "process_tampering": (25,),
    "file_delete_detected": (26,),
    "file_block_executable": (27,),
    "file_block_shredding": (28,),
    "file_executable_detected": (29,),
    "sysmon_error": (255,),
}

# PowerShell's categories: (service whose channels log it, event id).
POWERSHELL_IDS: dict[str, tuple[str, int]] = {
    "ps_module": ("powershell", 4103),
    "ps_script": ("powershell", 4104),
    "ps_classic_start": ("powershell-classic", 400),
    "ps_classic_provider_start": ("powershell-classic", 600),
    "ps_classic_script": ("powershell-classic", 800),
}

WINDOWS_CHANNELS: dict[str, tuple[str, ...]] = {
    service: (channels,) if isinstance(channels, str) else tuple(channels)
    for service, channels in windows_logsource_mapping.items()
}

# The field a behavior is keyed by, per kind of source (docs/detections.md).
HOST_KEY = ("host.name", "host")
USER_KEY = ("user.name", "username")
SOURCE_KEY = ("source.ip", "ip")
# A syslog line's host: every line has its sender, not every parser names a host.name.
SENDER_KEY = ("@sender", "host")


# Every record of ingest/auditd.py says so (docs/fields.md).
_AUDITD = ast.Term("@fields.observer.product", "auditd")
# Sysmon for Linux (ingest/eventxml.py): Sysmon's schema on its own channel.
_LINUX_SYSMON = ast.Term("@fields.winlog.channel", "Linux-Sysmon/Operational")
LINUX_SYSMON_IDS: dict[str, tuple[int, ...]] = {"file_event": (11,), "network_connection": (3,)}
# A syslog line names the program that wrote it (ingest/syslog.py).
_SYSLOG = ast.Exists("@fields.program")
# Sigma's Linux services -> the syslog programs that write them (the names the daemons log under).
LINUX_PROGRAMS: dict[str, tuple[str, ...]] = {
    "sshd": ("sshd",),
    "sudo": ("sudo",),
    "cron": ("cron", "crond", "anacron"),
    "vsftpd": ("vsftpd",),
    "clamav": ("clamd", "freshclam", "clamscan", "clamonacc"),
    "guacamole": ("guacd", "guacamole"),
}
# Web servers' own logs (service with no product): their error log lines, sent through syslog.
WEB_SERVER_PROGRAMS: dict[str, tuple[str, ...]] = {"apache": ("apache", "apache2", "httpd"), "nginx": ("nginx",)}
# Zeek's logs seclake names (ingest/zeek.py: event.dataset zeek.<log>); Sigma's zeek services are log names.
ZEEK_LOGS = frozenset({"conn", "dns", "http", "ssl", "notice", "smb_files", "dce_rpc", "kerberos", "rdp",
                       "x509"})
_WEB = ast.Term("@fields.event.category", "web")


@dataclass(frozen=True)
class Source:
    """What one Sigma log source is in seclake's records."""

    family: str  # the field-name family the pipeline maps with (pipeline.py): windows, linux, entra, proxy...
    selector: ast.Node  # the records it selects
    key_field: str
    key_type: str
    category: str | None = None
    service: str | None = None


def _term(path: str, value: str | int) -> ast.Node:
    return ast.Term(path, str(value))


def _any(path: str, values: tuple[str | int, ...]) -> ast.Node:
    return ast.or_(*(_term(path, v) for v in values))


def _windows_event(channels: tuple[str, ...], ids: tuple[int, ...] = ()) -> ast.Node:
    return ast.and_(_any("@fields.event.code", ids) if ids else ast.MatchAll(),
                    _any("@fields.winlog.channel", channels))


def resolve(logsource: SigmaLogSource) -> Source:
    """The seclake source of a Sigma rule's log source; ``Unsupported`` if there is none."""
    product, category, service = logsource.product, logsource.category, logsource.service
    if product == "windows":
        return _windows(category, service)
    if product == "linux":
        if category == "process_creation" and service is None:
            # auditd's EXECVE and SYSCALL execve records (ingest/auditd.py), or Sysmon for Linux's
            # event 1: a process start on Linux, both with the ECS names the linux pipeline reads.
            selector = ast.and_(ast.or_(_AUDITD, _LINUX_SYSMON), _term("@fields.event.category", "process"),
                                _term("@fields.event.type", "start"))
            return Source("linux", selector, *HOST_KEY, category)
        if category in LINUX_SYSMON_IDS and service is None:
            # Sysmon for Linux's own names (Image, TargetFilename, DestinationIp), kept as sent.
            selector = ast.and_(_any("@fields.event.code", LINUX_SYSMON_IDS[category]), _LINUX_SYSMON)
            return Source("sysmon_linux", selector, *HOST_KEY, category)
        if service == "auditd" and category is None:
            return Source("auditd", _AUDITD, *HOST_KEY)
        if category is None:
            return _linux_service(service)
    if product == "aws" and service == "cloudtrail":
        selector = ast.and_(ast.Exists("@fields.eventSource"), ast.Exists("@fields.eventVersion"))
        return Source("cloudtrail", selector, *USER_KEY)
    if product == "okta" and service == "okta":
        selector = ast.and_(ast.Exists("@fields.eventType"), ast.Exists("@fields.actor"))
        return Source("okta", selector, *USER_KEY)
    if product == "azure" and service == "signinlogs" and category is None:
        return Source("entra", ast.Term("@fields.observer.product", "Entra ID"), *USER_KEY, service=service)
    if product == "zeek" and category is None and service in ZEEK_LOGS:
        selector = ast.and_(ast.Term("@fields.observer.product", "Zeek"),
                            _term("@fields.event.dataset", f"zeek.{service}"))
        return Source("zeek", selector, *SOURCE_KEY, service=service)
    if product == "fortigate" and service == "event" and category is None:
        # FortiGate's event logs (configuration changes, admin logins): its own type=event.
        selector = ast.and_(ast.Term("@fields.observer.product", "FortiGate"), _term("@fields.type", "event"))
        return Source("fortigate", selector, *USER_KEY, service=service)
    if product is None and category is None and service in WEB_SERVER_PROGRAMS:
        return Source("syslog", _any("@fields.program", WEB_SERVER_PROGRAMS[service]), *SENDER_KEY, service=service)
    if product is None and service is None and category in ("dns", "proxy", "webserver", "firewall"):
        return _network(category)
    raise Unsupported("log source not supported", _describe(logsource))


def _linux_service(service: str | None) -> Source:
    """Linux logs other than auditd: syslog lines, by the program (service) that wrote them."""
    if service is None:  # product: linux alone: keywords over any Linux log
        return Source("syslog", ast.or_(_SYSLOG, _AUDITD), *SENDER_KEY)
    if service == "syslog":
        return Source("syslog", _SYSLOG, *SENDER_KEY, service=service)
    if service == "auth":  # /var/log/auth.log: what the auth and authpriv facilities log
        return Source("syslog", ast.and_(_SYSLOG, _any("@facility", ("auth", "authpriv"))), *SENDER_KEY,
                      service=service)
    programs = LINUX_PROGRAMS.get(service)
    if programs is None:
        raise Unsupported("log source not supported", f"product=linux, service={service}")
    return Source("syslog", _any("@fields.program", programs), *SENDER_KEY, service=service)


def _network(category: str) -> Source:
    """Sigma's generic network categories: records of any parser, through the common names."""
    if category == "dns":
        selector = ast.Exists("@fields.dns.question.name")
    elif category == "firewall":
        selector = ast.and_(ast.Term("@fields.event.category", "network"), ast.Exists("@fields.source.ip"),
                            ast.Exists("@fields.destination.ip"))
    else:  # proxy, webserver: an HTTP request, as a proxy, a web server or a sensor on the wire saw it
        selector = _WEB
    return Source(category, selector, *SOURCE_KEY, category)


def _windows(category: str | None, service: str | None) -> Source:
    if category is None and service is not None:
        channels = WINDOWS_CHANNELS.get(service)
        if channels is None:
            raise Unsupported("log source not supported", f"product=windows, service={service}")
        return Source("windows", _windows_event(channels), *HOST_KEY, service=service)
    if category in POWERSHELL_IDS and service in (None, POWERSHELL_IDS[category][0]):
        channel_service, event_id = POWERSHELL_IDS[category]
        return Source("windows", _windows_event(WINDOWS_CHANNELS[channel_service], (event_id,)), *HOST_KEY, category)
    if category in SYSMON_IDS and service in (None, "sysmon"):
        selector = _windows_event((SYSMON_CHANNEL,), SYSMON_IDS[category])
        if category == "process_creation":
            # Windows' own audit of process starts: the same category, the fields under other names (pipeline.py).
            selector = ast.or_(selector, _windows_event(("Security",), (4688,)))
        return Source("windows", selector, *HOST_KEY, category)
    raise Unsupported("log source not supported", f"product=windows, category={category}"
                      + (f", service={service}" if service else ""))


def _describe(logsource: SigmaLogSource) -> str:
    parts = [f"{k}={v}" for k, v in (("product", logsource.product), ("category", logsource.category),
                                     ("service", logsource.service)) if v]
    return ", ".join(parts) or "none given"
