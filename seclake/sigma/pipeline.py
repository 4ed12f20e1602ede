"""seclake's pySigma processing pipelines: Sigma's field names -> the fields seclake stores.

SigmaHQ writes Windows rules on the event's own names (Sysmon's ``Image``,
``CommandLine``; 4688's ``NewProcessName``). seclake keeps every record's
native fields as the shipper sent them (docs/fields.md): NXLog puts them at
the top (``@fields.Image``), Winlogbeat under ``winlog.event_data``
(``@fields.winlog.event_data.Image``). A native name therefore maps to both
places: a rule finds the same event whichever shipper sent it, and
its value is compared as it came (never a value an ECS mapping rewrote,
such as ``user.name`` without the domain Sigma's ``User`` carries).

The event's header is the exception: ``EventID`` is ``event.code`` and
``Channel`` is ``winlog.channel``, which the Windows parsers set alike on
both shippers' records. For ``process_creation`` (Sysmon 1 or Security
4688), Sysmon's ``Image``/``ParentImage`` also read 4688's
``NewProcessName``/``ParentProcessName`` (pySigma's own Windows audit
pipeline maps them so).

Linux process rules read the ECS names auditd's parser gives; a field with
no such name is not guessed: the rule is skipped (``Unsupported``).
CloudTrail, Okta, auditd, Zeek, FortiGate and Linux syslog rules use the
source's own names, which seclake keeps as they are (Zeek's http rules also
use the proxy names ``c-uri``, ``c-useragent``: mapped to Zeek's columns).

Azure sign-in rules are written on Log Analytics' ``SigninLogs`` columns
(``ResultType``, ``Status``, ``DeviceDetail.trusttype``,
``AuthenticationRequirement``), a few on the Azure Monitor export's names
(``resultType``, ``properties.appId``); seclake stores the sign-in as Graph
or the export sends it (ingest/entra.py). A column is the Graph property of
the same name (``AuthenticationRequirement`` is ``authenticationRequirement``,
nested names spelled as Graph spells them whatever Sigma's case), read at the
top (Graph) or under ``properties`` (the export); ``ResultType``,
``ResultDescription`` and ``Status`` are the error code, failure reason and
outcome, which Graph keeps under ``status``.

Sigma's generic categories (``dns``, ``proxy``, ``webserver``, ``firewall``)
use Sigma's own taxonomy (``c-uri``, ``cs-method``, ``query``, ``dst_port``),
no vendor's: they map to the ECS names the parsers add, and a name without
one skips the rule.

A field with several places is mapped to ONE name joining them with ``|``
(``Image|winlog.event_data.Image``), which the backend reads as "the value
at whichever of these the record has": a value test is true at any of them,
``null`` (absent) only when none has it. pySigma's own one-to-many mapping
would OR every test, so ``User: null`` would hold for every record (each
has one of the two places empty).

Windows Defender names its event data with blanks (``Threat Name``); Sigma
writes them without (``ThreatName``), so for that service the blank form is
one more place.
"""

from __future__ import annotations

import re

from sigma.processing.pipeline import ProcessingItem, ProcessingPipeline
from sigma.processing.transformations import FieldFunctionTransformation

from seclake.sigma.unsupported import Unsupported

WINLOGBEAT = "winlog.event_data."
PLACES = "|"  # joins the places of one field (backend.paths splits them)
WINDOWS_HEADER: dict[str | None, str | list[str]] = {
    "EventID": "event.code",
    "Channel": "winlog.channel",
    "Provider_Name": "SourceName|winlog.provider_name",
    "Computer": "Hostname|winlog.computer_name",
}
# Sysmon's process names -> 4688's, for process_creation.
AUDIT_PROCESS = {"Image": "NewProcessName", "ParentImage": "ParentProcessName"}

LINUX_PROCESS: dict[str | None, str | list[str]] = {
    "Image": "process.executable",
    "CommandLine": "process.command_line",
    "ParentImage": "process.parent.executable",
    "ParentCommandLine": "process.parent.command_line",
    "ProcessId": "process.pid",
    "ParentProcessId": "process.parent.pid",
    "User": "user.name",
    "CurrentDirectory": "process.working_directory",
}


# Sysmon for Linux's LogonId is the audit login id (auid), which auditd's SYSCALL records carry.
LINUX_PROCESS["LogonId"] = "user.audit.id"

# Sigma's taxonomy for the generic categories -> the ECS names the parsers add (docs/fields.md).
_HTTP: dict[str | None, str | list[str]] = {
    "c-uri": "url.original", "cs-uri": "url.original", "cs-uri-query": "url.original",
    "c-uri-query": "url.query", "c-uri-stem": "url.path", "cs-uri-stem": "url.path",
    "c-uri-extension": "url.extension", "c-useragent": "user_agent.original",
    "cs-user-agent": "user_agent.original", "cs-method": "http.request.method", "cs-host": "url.domain",
    "r-dns": "url.domain", "sc-status": "http.response.status_code", "cs-referrer": "http.request.referrer",
    "cs-referer": "http.request.referrer", "cs-username": "user.name", "src_ip": "source.ip",
    "c-ip": "source.ip", "dst_ip": "destination.ip", "dst_port": "destination.port",
}
CATEGORY_FIELDS: dict[str, dict[str | None, str | list[str]]] = {
    "proxy": _HTTP,
    "webserver": _HTTP,
    # answer: Zeek's answers column and Suricata's answers hold every answer (TXT too), not just addresses.
    "dns": {"query": "dns.question.name", "record_type": "dns.question.type",
            "answer": "dns.resolved_ip|answers|dns.answers.rdata", "src_ip": "source.ip", "dst_ip": "destination.ip",
            "response_code": "dns.response_code"},
    # blocked: a firewall's own field of that name (Sigma's rule reads action, or blocked where a firewall has it).
    "firewall": {"src_ip": "source.ip", "dst_ip": "destination.ip", "src_port": "source.port",
                 "dst_port": "destination.port", "action": "event.action", "blocked": "blocked"},
}

# Zeek http rules written with the proxy names.
ZEEK_HTTP = {"c-uri": "uri", "cs-uri": "uri", "c-useragent": "user_agent", "cs-method": "method",
             "cs-host": "host", "sc-status": "status_code"}

# Log Analytics' SigninLogs columns that are not the Graph property of the same name.
ENTRA_COLUMNS = {
    "resulttype": "status.errorCode|properties.status.errorCode|resultType",
    "resultdescription": "status.failureReason|properties.status.failureReason|resultDescription",
    # The portal's Status (Success, Failure, Interrupted) with its details; ingest/entra.py's outcome is it.
    "status": ("event.outcome|status.failureReason|status.additionalDetails|properties.status.failureReason"
               "|properties.status.additionalDetails"),
    "username": "userPrincipalName|properties.userPrincipalName",
    "clientapp": "clientAppUsed|properties.clientAppUsed",
    "calleripaddress": "callerIpAddress|ipAddress|properties.ipAddress",
}
# Sign-in fields without a counterpart: NetworkLocationDetails is a list (Log Analytics compares its JSON
# text, '[]'), ActivityDetails is no sign-in column.
ENTRA_UNMAPPED = {"networklocationdetails", "activitydetails"}
# Graph's signIn property names (https://learn.microsoft.com/graph/api/resources/signin), by lower case:
# Sigma writes them in several cases (DeviceDetail.trusttype).
_GRAPH_NAMES = {n.lower(): n for n in (
    "id createdDateTime userDisplayName userPrincipalName userId appId appDisplayName ipAddress clientAppUsed "
    "correlationId conditionalAccessStatus isInteractive riskDetail riskLevelAggregated riskLevelDuringSignIn "
    "riskState riskEventTypes riskEventTypes_v2 resourceDisplayName resourceId status errorCode failureReason "
    "additionalDetails deviceDetail deviceId displayName operatingSystem browser isCompliant isManaged trustType "
    "location city state countryOrRegion geoCoordinates appliedConditionalAccessPolicies "
    "authenticationRequirement authenticationDetails authenticationMethodsUsed homeTenantId resourceTenantId "
    "userType crossTenantAccessType tokenIssuerType userAgent mfaDetail servicePrincipalId servicePrincipalName "
    "authenticationProtocol signInEventTypes incomingTokenType clientCredentialType originalRequestId").split()}


def _entra(name: str) -> str:
    """A Sigma sign-in field -> its places in Graph's shape and the export's (``properties.``)."""
    lowered = name.lower()
    if lowered.startswith("properties."):
        name, lowered = name[len("properties."):], lowered[len("properties."):]
    if lowered in ENTRA_UNMAPPED:
        raise Unsupported("field not mapped", f"Entra ID sign-ins have no field for Sigma's {name!r}")
    if lowered in ENTRA_COLUMNS:
        return ENTRA_COLUMNS[lowered]
    graph = ".".join(_GRAPH_NAMES.get(part.lower(), part[:1].lower() + part[1:]) for part in name.split("."))
    return PLACES.join((graph, "properties." + graph))


def _native(name: str) -> list[str]:
    return [name, WINLOGBEAT + name]


_WORD_START = re.compile(r"(?<=[a-z])(?=[A-Z])")


def _windows(category: str | None, service: str | None) -> FieldFunctionTransformation:
    mapping: dict[str | None, str | list[str]] = dict(WINDOWS_HEADER)
    if category == "process_creation":
        for sysmon, audit in AUDIT_PROCESS.items():
            mapping[sysmon] = PLACES.join(_native(sysmon) + _native(audit))

    def places(name: str) -> str:
        found = _native(name)
        if service == "windefend" and _WORD_START.search(name):
            found += _native(_WORD_START.sub(" ", name))
        return PLACES.join(found)

    return FieldFunctionTransformation(mapping=mapping, transform_func=places)


def _unmapped(family: str):
    def fail(name: str | None) -> str:
        raise Unsupported("field not mapped", f"{family} have no field for Sigma's {name!r}")
    return fail


def pipeline(family: str, category: str | None = None, service: str | None = None) -> ProcessingPipeline:
    """The processing pipeline for rules of one source family (``logsource.Source.family``).

    A new one per conversion: pySigma keeps what a pipeline applied in it.
    """
    if family == "windows":
        transformation = _windows(category, service)
    elif family == "linux":
        transformation = FieldFunctionTransformation(mapping=LINUX_PROCESS,
                                                     transform_func=_unmapped("linux process records"))
    elif family == "entra":
        transformation = FieldFunctionTransformation(mapping={}, transform_func=_entra)
    elif family in CATEGORY_FIELDS:
        transformation = FieldFunctionTransformation(mapping=CATEGORY_FIELDS[family],
                                                     transform_func=_unmapped(f"{family} records"))
    elif family == "zeek":
        transformation = FieldFunctionTransformation(mapping=ZEEK_HTTP if service == "http" else {},
                                                     transform_func=lambda name: name)
    else:  # auditd, cloudtrail, okta, fortigate, syslog: the source's own names, kept as they came
        transformation = FieldFunctionTransformation(mapping={}, transform_func=lambda name: name)
    return ProcessingPipeline(
        name=f"seclake {family}" + (f" {category}" if category else ""),
        priority=20,
        items=[ProcessingItem(identifier=f"seclake_{family}_fields", transformation=transformation)],
    )
