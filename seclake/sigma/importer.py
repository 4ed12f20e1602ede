"""Rule files in, rules out: Sigma and seclake YAML side by side, with a report of what was skipped.

``read(paths, ...)`` takes files, directories (walked: a SigmaHQ ``rules*/``
tree as it is) and zip files (a SigmaHQ release zip as it is, read in place,
never extracted). Each text is told apart by content: a Sigma rule has
``detection:`` and ``logsource:`` at its top level; anything else is read as
seclake's own rule format (docs/rules.md).

A Sigma rule that cannot run as Sigma means it is *skipped* with its file and
reason (``Unsupported``): a SigmaHQ tree holds rules for sources seclake does
not parse, and one of them must not stop the others. A seclake rule file
that is invalid is an *error*, as ``seclake rules import`` always had it: the
caller imports nothing then. Filters (status, level, tags) apply to Sigma
rules only, before conversion.
"""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from seclake.detect.rule import MAX_FILE_BYTES, Rule, RuleFileError, rule_from_dict, rules_from_yaml
from seclake.errors import ValidationFailed
from seclake.sigma.conversion import LEVEL_SCORES, parse, rule_dict
from seclake.sigma.correlation import Known, known, references, unit_dicts
from seclake.sigma.unsupported import Unsupported

SUFFIXES = (".yml", ".yaml")
MAX_FILES = 100_000  # a zip bomb of tiny members stops here, said so
LEVELS = tuple(LEVEL_SCORES)  # informational < low < medium < high < critical
_TOP_KEY = re.compile(r"^([A-Za-z_]+)\s*:", re.MULTILINE)


def is_sigma(text: str) -> bool:
    """Whether a rule text is Sigma (top-level ``detection`` and ``logsource``, or a ``correlation``
    with ``title``) rather than seclake's own format (which has ``behavior`` and ``keyField``)."""
    keys = set(_TOP_KEY.findall(text))
    return ("detection" in keys and "logsource" in keys) or ("correlation" in keys and "title" in keys)


@dataclass(frozen=True)
class Skipped:
    file: str
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Filters:
    """Which Sigma rules to import: statuses (any of), a lowest level, tags (any of, by prefix)."""

    statuses: frozenset[str] = frozenset()
    min_level: str | None = None
    tags: tuple[str, ...] = ()

    def refuses(self, status: str | None, level: str | None, tags: list[str]) -> str | None:
        """Why a rule is left out, or None."""
        if self.statuses and (status or "") not in self.statuses:
            return f"status {status or 'none'} not in {', '.join(sorted(self.statuses))}"
        if self.min_level and LEVELS.index(level or "medium") < LEVELS.index(self.min_level):
            return f"level {level or 'none'} below {self.min_level}"
        if self.tags and not any(t.lower().startswith(want.lower()) for t in tags for want in self.tags):
            return f"no tag {' or '.join(self.tags)}"
        return None


@dataclass
class Report:
    rules: list[Rule] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    filtered: list[Skipped] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # invalid seclake rule files: nothing should be imported
    files: int = 0
    sigma: int = 0

    def by_reason(self) -> Counter[str]:
        return Counter(s.reason for s in self.skipped)


def texts(paths: Iterable[Path]) -> Iterator[tuple[str, str | None, str | None]]:
    """(display name, text, problem) of every rule file under ``paths``: files, directories, zips."""
    count = 0
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES + (".zip",)
                           and not any(part.startswith(".") for part in p.relative_to(path).parts))
        else:
            files = [path]
        for file in files:
            if file.suffix == ".zip":
                yield from _zip(file)
                continue
            count += 1
            if count > MAX_FILES:
                yield str(file), None, f"more than {MAX_FILES} files; the rest are not read"
                return
            yield (str(file), *_read(file))


def _read(path: Path) -> tuple[str | None, str | None]:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        return None, f"cannot be read ({e.strerror or e})"
    return _decode(raw)


def _decode(raw: bytes) -> tuple[str | None, str | None]:
    if len(raw) > MAX_FILE_BYTES:
        return None, f"is larger than {MAX_FILE_BYTES} bytes"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "is not UTF-8"


def _zip(path: Path) -> Iterator[tuple[str, str | None, str | None]]:
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        yield str(path), None, f"is not a readable zip file ({e})"
        return
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir() and m.filename.endswith(SUFFIXES)
                   and not any(part.startswith(".") for part in m.filename.split("/"))]
        for n, member in enumerate(members):
            display = f"{path.name}:{member.filename}"
            if n >= MAX_FILES:
                yield display, None, f"more than {MAX_FILES} files in the zip; the rest are not read"
                return
            if member.file_size > MAX_FILE_BYTES:  # said by the zip; the read below is bounded anyway
                yield display, None, f"is larger than {MAX_FILE_BYTES} bytes"
                continue
            try:
                with archive.open(member) as f:
                    raw = f.read(MAX_FILE_BYTES + 1)
            except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError) as e:
                yield display, None, f"cannot be read from the zip ({e})"
                continue
            yield (display, *_decode(raw))


def read(paths: Iterable[Path], filters: Filters = Filters(), *, key_field: str | None = None,
         key_type: str | None = None, enabled: bool = True,
         known: Callable[[], Iterable[Rule]] = lambda: ()) -> Report:
    """Every rule under ``paths``, the Sigma rules skipped (by reason) or filtered out, the invalid files.

    A Sigma file holding a correlation is converted as a unit (every rule of it, or none:
    ``correlation.unit_dicts``) after the other files, so it can name rules of other files of the
    import, or ``known()`` ones (the rule book's; asked only if such a file is read)."""
    report = Report()
    names: dict[str, str] = {}
    deferred: list[tuple[str, str]] = []

    def add(display: str, found: list[Rule]) -> None:
        for rule in found:
            if rule.name in names:
                report.errors.append(f"{display}: rule {rule.name!r} is defined twice (first in {names[rule.name]})")
                continue
            names[rule.name] = display
            report.rules.append(rule)

    for display, text, problem in texts(paths):
        report.files += 1
        if text is None:
            report.errors.append(f"{display}: {problem}")
            continue
        if is_sigma(text):
            if _CORRELATION.search(text) or _SEVERAL.search(text):
                deferred.append((display, text))
                continue
            report.sigma += 1
            found = _sigma(display, text, filters, key_field, key_type, enabled, report)
            found = [found] if found is not None else []
        else:
            try:
                found = rules_from_yaml(text, display)
            except RuleFileError as e:
                report.errors.append(e.message)
                continue
        add(display, found)
    # Units naming rules of other units are read once those are in: rounds until none is added.
    outcome: dict[str, list[Rule] | Skipped | None] = {}
    stored = list(known()) if deferred else []
    while deferred:
        index = references_index([*report.rules, *stored])  # an imported rule over its stored self
        progress, left = False, []
        for display, text in deferred:
            got = _unit(display, text, filters, key_field, key_type, enabled, index.get)
            if isinstance(got, Skipped) and got.reason == "rule not found":
                left.append((display, text))
                outcome[display] = got
                continue
            outcome[display], progress = got, True
            if isinstance(got, list):
                add(display, got)
        deferred = left if progress else []
    for display, got in outcome.items():
        if got is None:
            continue
        report.sigma += len(got) if isinstance(got, list) else 1  # a skipped unit counts as one
        if isinstance(got, Skipped):
            (report.filtered if got.reason == "filtered" else report.skipped).append(got)
    return report


_CORRELATION = re.compile(r"^correlation\s*:", re.MULTILINE)
_SEVERAL = re.compile(r"^---", re.MULTILINE)


def references_index(rules: Iterable[Rule]) -> dict[str, Known]:
    """What each reference a correlation may use (a seclake name, a Sigma id or name) means: the rule's ``Known``."""
    out: dict[str, Known] = {}
    for rule in rules:
        text = rule.sigma.text if rule.sigma is not None else None
        k = known(rule.name, text, rule.correlation.group_by if rule.correlation is not None else None)
        for ref in references(rule.name, text):
            out.setdefault(ref, k)
    return out


def _unit(display: str, text: str, filters: Filters, key_field: str | None, key_type: str | None, enabled: bool,
          lookup) -> list[Rule] | Skipped:
    """The rules of one Sigma file converted as a unit (a correlation and its rules): all, or why none."""
    try:
        dicts = unit_dicts(text, key_field=key_field, key_type=key_type, enabled=enabled, lookup=lookup)
        heads = [d for d in dicts if d.get("generate", True)] or dicts
        whys = [filters.refuses(d.get("status"), d.get("level"), d.get("tags") or []) for d in heads]
        if all(why is not None for why in whys):
            return Skipped(display, "filtered", str(whys[0]))
        return [rule_from_dict(d, "") for d in dicts]
    except Unsupported as e:
        return Skipped(display, e.reason, e.detail)
    except ValidationFailed as e:
        return Skipped(display, "invalid for seclake", e.message)


def _sigma(display: str, text: str, filters: Filters, key_field: str | None, key_type: str | None,
           enabled: bool, report: Report) -> Rule | None:
    try:
        rule = parse(text)
        why = filters.refuses(rule.status.name.lower() if rule.status else None,
                              rule.level.name.lower() if getattr(rule, "level", None) else None,
                              [str(t) for t in rule.tags])
        if why is not None:
            report.filtered.append(Skipped(display, "filtered", why))
            return None
        return rule_from_dict(rule_dict(text, key_field=key_field, key_type=key_type, enabled=enabled), "")
    except Unsupported as e:
        report.skipped.append(Skipped(display, e.reason, e.detail))
    except ValidationFailed as e:
        report.skipped.append(Skipped(display, "invalid for seclake", e.message))
    return None
