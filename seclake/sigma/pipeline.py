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
CloudTrail, Okta and auditd rules use the source's own names, which seclake
keeps as they are.

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
        raise Unsupported("field not mapped", f"{family} records have no field for Sigma's {name!r}")
    return fail


def pipeline(family: str, category: str | None = None, service: str | None = None) -> ProcessingPipeline:
    """The processing pipeline for rules of one source family (``logsource.Source.family``).

    A new one per conversion: pySigma keeps what a pipeline applied in it.
    """
    if family == "windows":
        transformation = _windows(category, service)
    elif family == "linux":
        transformation = FieldFunctionTransformation(mapping=LINUX_PROCESS, transform_func=_unmapped("linux process"))
    else:  # auditd, cloudtrail, okta: the source's own names, kept as they came
        transformation = FieldFunctionTransformation(mapping={}, transform_func=lambda name: name)
    return ProcessingPipeline(
        name=f"seclake {family}" + (f" {category}" if category else ""),
        priority=20,
        items=[ProcessingItem(identifier=f"seclake_{family}_fields", transformation=transformation)],
    )
