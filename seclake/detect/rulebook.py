"""The rule book: the behavior rules of a deployment, kept in the metadata database.

One row per rule in ``rules`` (the rule as ``Rule.to_dict()`` gives it),
and one counter, ``rule_generation``, bumped in the same transaction as
every change. So every API node of a cluster (PostgreSQL) reads and edits
the same rules, and a crash leaves the old rule or the new one, never half.

Each read (``rules``, ``get``...) and each detection batch first reads the
counter (one tiny query, ``refresh``) and reloads the rules only when it
moved: a change made through any node applies to the next read and the
next import everywhere, without a restart. ``version`` is the counter the
rules in memory were read at, so the detector knows when to recompile.

Changes lock the counter row first, so the changes of all nodes run one
after the other: two nodes adding one name give one rule and one Conflict.

First start (``seed``): the rules that ``<data dir>/rules/*.yaml`` held
when rules were files are imported once, or the shipped starter pack when
there are none; the counter row remembers it was done, so deleted starter
rules stay deleted and that directory is not read again. Detection as code
goes through ``read_rule_files`` (validate every file first) and
``import_rules`` (one transaction), and ``export``.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Set
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import yaml
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from seclake.db.database import Database
from seclake.db.models import RuleGeneration, StoredRule
from seclake.detect.rule import NAME_PATTERN, Rule, RuleFileError, load_rule_file, rule_from_dict
from seclake.errors import Conflict, LimitExceeded, NotFound, QueryError, ValidationFailed

SUFFIX = ".yaml"
COUNTER = "rule_generation"

log = logging.getLogger("seclake.rules")


def check_name(name: object, where: str = "name") -> str:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        shown = repr(name)[:60] if isinstance(name, str) else type(name).__name__
        raise ValidationFailed(where, f"{shown} is not a rule name; it must match {NAME_PATTERN.pattern}")
    return name


def starter_pack() -> list[Path]:
    """The rule files shipped with seclake."""
    pack = resources.files("seclake.detect") / "rules"
    return sorted(Path(str(p)) for p in pack.iterdir() if p.name.endswith(SUFFIX))


def rule_files(paths: Iterable[Path]) -> list[Path]:
    """The files named, and the ``*.yaml`` files of the directories named (not hidden ones: editor backups)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(
                p for p in sorted(path.iterdir()) if p.name.endswith(SUFFIX) and not p.name.startswith(".")
            )
        else:
            out.append(path)
    return out


def read_rule_files(paths: Iterable[Path]) -> tuple[list[Rule], list[str]]:
    """The valid rules of these files (or directories), and one message per problem (file and line).

    A name defined twice is a problem of the second file; its first
    definition is kept.
    """
    rules: dict[str, Rule] = {}
    origin: dict[str, str] = {}
    errors: list[str] = []
    for path in rule_files(paths):
        display = f"{path.parent.name}/{path.name}"
        try:
            found = load_rule_file(path, display)
        except RuleFileError as e:
            errors.append(e.message)
            continue
        for rule in found:
            if rule.name in rules:
                errors.append(f"{display}: rule {rule.name!r} is defined twice (first in {origin[rule.name]}); this one is ignored")
                continue
            rules[rule.name] = rule
            origin[rule.name] = display
    return list(rules.values()), errors


def rule_yaml(rule: Rule) -> str:
    """A rule as a YAML file: the shape of the starter pack's files, read back by ``load_rule_file``."""
    return yaml.safe_dump(rule.to_dict(), sort_keys=False, allow_unicode=True, width=100)


class Seeded(NamedTuple):
    """What the first start put in the rule book."""

    source: str  # "legacy" (the rules directory) or "starter" (the shipped pack)
    count: int
    errors: list[str]  # files of the rules directory left out


class Imported(NamedTuple):
    added: int
    updated: int
    unchanged: int
    deleted: int


class RuleBook:
    def __init__(self, db: Database, legacy_directory: Path | None = None, cache_directory: Path | None = None):
        self.db = db
        # Where rules were files before they moved to the database (read once, by ``seed``).
        self.legacy_directory = Path(legacy_directory) if legacy_directory is not None else None
        # Sigma rules' trees converted by earlier starts (sigma/treecache.py): a start with SigmaHQ's rules
        # converted each again (~20 s).
        self.trees = None
        if cache_directory is not None:
            from seclake.sigma.treecache import TreeCache

            self.trees = TreeCache(Path(cache_directory))
        self._lock = threading.RLock()
        self._rules: dict[str, Rule] = {}
        # The counter the rules in memory were read at; -1: never read.
        self.version = -1

    # -- first start ------------------------------------------------------

    def seed(self) -> Seeded | None:
        """On the first start only: import the legacy rule files, else the starter pack.

        Marked done in the same transaction, so of several nodes starting at
        once exactly one imports, and a crash leaves the book unseeded and
        empty, to be seeded at the next start. A book that holds rules
        already (added before any seeding) is only marked. None when it was
        seeded before.
        """
        # Seeded before (every start but the first): the files are not read.
        # Reading and checking them took ~40 ms of every command's start.
        with self.db.session() as s:
            if s.scalar(select(RuleGeneration.seeded_on).where(RuleGeneration.id == 1)) is not None:
                return None
        legacy = self.legacy_directory
        if legacy is not None and legacy.is_dir() and rule_files([legacy]):
            source = "legacy"
            rules, errors = read_rule_files([legacy])
        else:
            source = "starter"
            rules, errors = read_rule_files(starter_pack())
        with self._lock:
            with self.db.session(write=True) as s:
                generation = self._locked_counter(s)
                if generation.seeded_on is not None:
                    return None
                now = datetime.now(UTC)
                generation.seeded_on = now
                if s.scalar(select(StoredRule.name).limit(1)) is not None:
                    return Seeded(source, 0, [])
                for rule in rules:
                    s.add(StoredRule(name=rule.name, document=rule.to_dict(), created_on=now, updated_on=now))
                if rules:
                    self._bump(generation)
            self.load()
        return Seeded(source, len(rules), errors)

    # -- loading ----------------------------------------------------------

    def load(self) -> list[str]:
        """(Re)read every rule; one message per stored rule left out (invalid under this version's checks)."""
        errors: list[str] = []
        loaded: dict[str, Rule] = {}
        with self._lock:
            with self.db.session() as s:
                # The counter first: rows newer than it only cause one reload
                # more, while a counter newer than the rows would hide a change.
                value = s.scalar(select(RuleGeneration.value).where(RuleGeneration.id == 1)) or 0
                rows = s.execute(select(StoredRule.name, StoredRule.document).order_by(StoredRule.name)).all()
            trees = self.trees
            if trees is not None:
                trees.begin()
            for name, document in rows:
                try:
                    rule = self._stored(document)
                    if rule.name != name:
                        raise ValidationFailed("name", f"{rule.name!r} differs from the row's name")
                except (ValidationFailed, QueryError, LimitExceeded) as e:
                    errors.append(f"stored rule {name!r}: {e.message}")
                    continue
                loaded[name] = rule
            if trees is not None:
                trees.save()
            self._rules = loaded
            self.version = value
        return errors

    def refresh(self) -> list[str]:
        """Reload when the rules changed (on any node) since the last read: one small query otherwise."""
        value = self.db.read_counter(COUNTER)
        with self._lock:
            if value == self.version:
                return []
            errors = self.load()
        for problem in errors:
            log.warning("rule skipped: %s", problem)
        return errors

    # -- reading ----------------------------------------------------------

    def rules(self) -> list[Rule]:
        with self._lock:
            self.refresh()
            return sorted(self._rules.values(), key=lambda r: r.name)

    def enabled(self) -> list[Rule]:
        return [r for r in self.rules() if r.enabled]

    def generation(self) -> tuple[int, list[Rule]]:
        """(version, the enabled rules) read together: the rules are those of that version."""
        with self._lock:
            rules = self.enabled()
            return self.version, rules

    def get(self, name: str) -> Rule:
        rule = self.get_or_none(name)
        if rule is None:
            raise NotFound(f"no rule named {str(name)[:100]!r}")
        return rule

    def get_or_none(self, name: str) -> Rule | None:
        with self._lock:
            self.refresh()
            return self._rules.get(name)

    # -- changing ---------------------------------------------------------

    def add(self, rule: Rule) -> Rule:
        check_name(rule.name)
        with self._lock:
            try:
                with self.db.session(write=True) as s:
                    generation = self._locked_counter(s)
                    if s.get(StoredRule, rule.name) is not None:
                        raise Conflict(f"a rule named {rule.name!r} exists already")
                    _check_references(s, [rule])
                    now = datetime.now(UTC)
                    s.add(StoredRule(name=rule.name, document=rule.to_dict(), created_on=now, updated_on=now))
                    s.flush()
                    value = self._bump(generation)
            except IntegrityError:
                # Only if the counter lock was bypassed; the primary key still keeps one rule.
                raise Conflict(f"a rule named {rule.name!r} exists already") from None
            self._settle(value, {rule.name: rule})
            return rule

    def update(self, rule: Rule) -> Rule:
        check_name(rule.name)
        with self._lock:
            with self.db.session(write=True) as s:
                generation, row = self._existing(s, rule.name)
                document = rule.to_dict()
                if row.document == document:
                    return rule
                _check_references(s, [rule])
                row.document, row.updated_on = document, datetime.now(UTC)
                value = self._bump(generation)
            self._settle(value, {rule.name: rule})
            return rule

    def toggle(self, name: str, enabled: bool) -> Rule:
        check_name(name)
        with self._lock:
            with self.db.session(write=True) as s:
                generation, row = self._existing(s, name)
                # The stored rule, not the one in memory: another node may have changed it.
                rule = self._stored(row.document)
                if rule.enabled == enabled:
                    return rule
                changed = rule.with_enabled(enabled)
                row.document, row.updated_on = changed.to_dict(), datetime.now(UTC)
                value = self._bump(generation)
            self._settle(value, {name: changed})
            return changed

    def toggle_many(self, names: list[str], enabled: bool) -> list[Rule]:
        """Enable or disable every rule of ``names`` in one transaction and one
        new version: enabling 3,000 Sigma rules one call each would build the
        rule index 3,000 times. All or nothing: one unknown name refuses all.
        The rules that changed, in the order named."""
        for name in names:
            check_name(name)
        with self._lock:
            with self.db.session(write=True) as s:
                generation = self._locked_counter(s)
                rows = {row.name: row for row in s.query(StoredRule).filter(StoredRule.name.in_(set(names)))}
                missing = [name for name in names if name not in rows]
                if missing:
                    raise NotFound(f"no rule named {missing[0]!r}" + (f" (nor {len(missing) - 1} other names)"
                                                                      if len(missing) > 1 else ""))
                changes: dict[str, Rule | None] = {}
                now = datetime.now(UTC)
                for name in dict.fromkeys(names):
                    rule = self._stored(rows[name].document)
                    if rule.enabled != enabled:
                        changed = rule.with_enabled(enabled)
                        rows[name].document, rows[name].updated_on = changed.to_dict(), now
                        changes[name] = changed
                if not changes:
                    return []
                value = self._bump(generation)
            self._settle(value, changes)
            return [rule for rule in changes.values() if rule is not None]

    def delete(self, name: str) -> Rule:
        check_name(name)
        with self._lock:
            with self.db.session(write=True) as s:
                generation, row = self._existing(s, name)
                # A stored rule this version finds invalid cannot be deleted by name;
                # `update` or `seclake rules import --replace` replaces it.
                rule = self._stored(row.document)
                _check_referrers(s, {name})
                s.delete(row)
                value = self._bump(generation)
            self._settle(value, {name: None})
            return rule

    def import_rules(self, rules: list[Rule], *, replace: bool = False) -> Imported:
        """Add the new rules and update the changed ones in one transaction.

        With ``replace``, rules not among ``rules`` are deleted too: the book
        becomes exactly what was imported (a rules repository's contents).
        """
        for rule in rules:
            check_name(rule.name)
        names = [r.name for r in rules]
        if len(set(names)) != len(names):
            raise ValidationFailed("rules", "a rule name is imported twice")
        added = updated = unchanged = deleted = 0
        with self._lock:
            with self.db.session(write=True) as s:
                generation = self._locked_counter(s)
                stored = {row.name: row for row in s.scalars(select(StoredRule))}
                now = datetime.now(UTC)
                for rule in rules:
                    document = rule.to_dict()
                    row = stored.get(rule.name)
                    if row is None:
                        s.add(StoredRule(name=rule.name, document=document, created_on=now, updated_on=now))
                        added += 1
                    elif row.document != document:
                        row.document, row.updated_on = document, now
                        updated += 1
                    else:
                        unchanged += 1
                # With replace the book becomes exactly ``rules``: what they name must be among them.
                _check_references(s, rules, also=set(names), stored=not replace)
                if replace:
                    gone = sorted(set(stored) - set(names))
                    if gone:
                        s.execute(delete(StoredRule).where(StoredRule.name.in_(gone)))
                    deleted = len(gone)
                if added or updated or deleted:
                    self._bump(generation)
            self.load()
        return Imported(added, updated, unchanged, deleted)

    def export(self, directory: Path) -> list[Path]:
        """Write one YAML file per rule, ``<name>.yaml``, into ``directory``; the files written."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for rule in self.rules():
            # Names match NAME_PATTERN (no separator, no leading dot): a plain file name.
            path = directory / f"{check_name(rule.name)}{SUFFIX}"
            _write_atomically(path, rule_yaml(rule).encode("utf-8"))
            written.append(path)
        return written

    def _stored(self, document) -> Rule:
        """A stored rule, its Sigma tree from the cache when a start converted it before."""
        return rule_from_dict(document, "", sigma_trees=self.trees.selector if self.trees is not None else None)

    # -- the counter ------------------------------------------------------

    @staticmethod
    def _locked_counter(s: Session) -> RuleGeneration:
        """The counter row, locked until the transaction ends: rule changes of all nodes run in turn.

        SQLite ignores FOR UPDATE; its write transactions begin IMMEDIATE,
        which serializes them the same way.
        """
        generation = s.scalar(select(RuleGeneration).where(RuleGeneration.id == 1).with_for_update())
        if generation is None:
            raise RuntimeError("the rule_generation row is missing; run the database migrations")
        return generation

    def _existing(self, s: Session, name: str) -> tuple[RuleGeneration, StoredRule]:
        """The counter (locked) and the row of rule ``name``; NotFound when there is none."""
        generation = self._locked_counter(s)
        row = s.get(StoredRule, name)
        if row is None:
            raise NotFound(f"no rule named {name!r}")
        return generation, row

    @staticmethod
    def _bump(generation: RuleGeneration) -> int:
        generation.value += 1
        return generation.value

    def _settle(self, value: int, changes: dict[str, Rule | None]) -> None:
        """After committing change ``value``: apply it in memory, or reload if others changed rules too."""
        if value != self.version + 1:
            self.load()
            return
        for name, rule in changes.items():
            if rule is None:
                self._rules.pop(name, None)
            else:
                self._rules[name] = rule
        self.version = value


def _check_references(s: Session, rules: Iterable[Rule], also: Set[str] = frozenset(), stored: bool = True) -> None:
    """Refuse a correlation rule naming a rule the book will not hold (stored, or among ``also``): it
    could never fire, and a typo in a rule's name would go unnoticed (docs/rules.md)."""
    for rule in rules:
        if rule.correlation is None:
            continue
        wanted = [n for n in rule.correlation.rules if n not in also]
        have = set(s.scalars(select(StoredRule.name).where(StoredRule.name.in_(wanted)))) if wanted and stored \
            else set()
        missing = [n for n in wanted if n not in have]
        if missing:
            raise ValidationFailed("correlation.rules",
                                   f"rule {rule.name!r} names {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}: "
                                   f"no such rule{'s' if len(missing) > 1 else ''} in the rule book")


def _check_referrers(s: Session, gone: Set[str]) -> None:
    """Refuse to remove rules a remaining correlation rule names (it would lose what it counts)."""
    for name, document in s.execute(select(StoredRule.name, StoredRule.document)):
        if name in gone or not isinstance(document, dict) or not isinstance(document.get("correlation"), dict):
            continue
        refs = document["correlation"].get("rules")
        named = sorted(gone & set(refs if isinstance(refs, list) else []))
        if named:
            raise ValidationFailed("name", f"{', '.join(named[:5])}: the correlation rule {name!r} names "
                                           f"{'them' if len(named) > 1 else 'it'}; change or delete {name!r} first")


def _write_atomically(path: Path, data: bytes) -> None:
    """Temp file, fsync, rename: an interrupted export leaves no half rule file under a rule's name."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
