"""The rule book: the behavior rules of a deployment, one YAML file each.

Rules live under ``<data dir>/rules/<name>.yaml`` so an admin can read,
diff and edit them with ordinary tools; the API edits the same files. Every
write is atomic (temp file, fsync, rename, fsync of the directory): a crash
leaves the old file or the new one, never half of one.

An invalid file never takes the service down: ``load`` keeps the valid rules
and returns one message per bad file (file and line) for the log.

``version`` grows on every change, so the detector knows when to recompile.
Files changed by anyone else (an admin's editor, another API node of a
cluster writing the shared directory) are read again by ``refresh``, which
the detector runs before each batch and readers run before each read: a
stat of the directory's rule files, a reload only when one changed.
A rule's name is its file name, so names are checked strictly (no path
separators, no leading dot) before they come near the file system.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from importlib import resources
from pathlib import Path

import yaml

from seclake.detect.rule import NAME_PATTERN, Rule, RuleFileError, load_rule_file
from seclake.errors import Conflict, NotFound, ValidationFailed

SUFFIX = ".yaml"

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


class RuleBook:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._lock = threading.RLock()
        self._rules: dict[str, Rule] = {}
        self._files: dict[str, Path] = {}  # the file each rule was read from or written to
        self.version = 0
        # What the rule files looked like at the last load; None before the first.
        self._stamp: tuple | None = None

    # -- loading ----------------------------------------------------------

    def install_starter_pack(self) -> int:
        """Copy the shipped rules into an empty (or missing) rules directory; how many were copied.

        Only on first start: once the directory holds a rule file, deleted
        starter rules stay deleted.
        """
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            if any(p.name.endswith(SUFFIX) for p in self.directory.iterdir()):
                return 0
            copied = 0
            for src in starter_pack():
                self._write_bytes(self.directory / src.name, src.read_bytes())
                copied += 1
            return copied

    def load(self) -> list[str]:
        """(Re)load every rule file; the error messages of the files left out."""
        errors: list[str] = []
        loaded: dict[str, Rule] = {}
        files: dict[str, Path] = {}
        with self._lock:
            # Taken first: a file changed while loading is read again next time.
            self._stamp = self._disk_stamp()
            if not self.directory.is_dir():
                self._rules, self._files = {}, {}
                self.version += 1
                return errors
            for path in sorted(self.directory.iterdir()):
                if not path.name.endswith(SUFFIX) or path.name.startswith("."):
                    continue  # temp files of an interrupted write, editor backups
                display = f"{self.directory.name}/{path.name}"
                try:
                    rules = load_rule_file(path, display)
                except RuleFileError as e:
                    errors.append(e.message)
                    continue
                for rule in rules:
                    if rule.name in loaded:
                        errors.append(f"{display}: rule {rule.name!r} is defined twice; this one is ignored")
                        continue
                    loaded[rule.name] = rule
                    files[rule.name] = path
            self._rules, self._files = loaded, files
            self.version += 1
        return errors

    def refresh(self) -> list[str]:
        """Reload when a rule file changed on disk since the last load (a no-op before the first)."""
        with self._lock:
            if self._stamp is None or self._disk_stamp() == self._stamp:
                return []
            errors = self.load()
        for problem in errors:
            log.warning("rule file skipped: %s", problem)
        return errors

    def _disk_stamp(self) -> tuple:
        # Every write is a rename of a new file, so (name, inode, mtime, size)
        # changes with any change.
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return ()
        out = []
        for e in entries:
            if e.name.endswith(SUFFIX) and not e.name.startswith("."):
                try:
                    st = e.stat()
                except OSError:
                    continue  # deleted while listing: the next refresh sees it gone
                out.append((e.name, st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(sorted(out))

    def _own_change(self, before: tuple | None, name: str) -> None:
        """After writing or deleting file ``name``: keep the stamp current if only that file changed.

        If anything else changed meanwhile, the stamp stays old and the next
        refresh reloads everything.
        """
        if before is None or before != self._stamp:
            return
        after = self._disk_stamp()
        if [e for e in before if e[0] != name] == [e for e in after if e[0] != name]:
            self._stamp = after

    # -- reading ----------------------------------------------------------

    def rules(self) -> list[Rule]:
        with self._lock:
            self.refresh()
            return sorted(self._rules.values(), key=lambda r: r.name)

    def enabled(self) -> list[Rule]:
        return [r for r in self.rules() if r.enabled]

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
            self.refresh()
            if rule.name in self._rules or self._path(rule.name).exists():
                raise Conflict(f"a rule named {rule.name!r} exists already")
            self._save(rule)
            return rule

    def update(self, rule: Rule) -> Rule:
        check_name(rule.name)
        with self._lock:
            self.refresh()
            if rule.name not in self._rules:
                raise NotFound(f"no rule named {rule.name!r}")
            self._save(rule)
            return rule

    def toggle(self, name: str, enabled: bool) -> Rule:
        with self._lock:
            rule = self.get(name)
            if rule.enabled == enabled:
                return rule
            changed = rule.with_enabled(enabled)
            self._save(changed)
            return changed

    def delete(self, name: str) -> Rule:
        check_name(name)
        with self._lock:
            rule = self.get(name)
            path = self._own_file(name)
            before = self._disk_stamp()
            path.unlink(missing_ok=True)
            self._fsync_dir()
            self._own_change(before, path.name)
            del self._rules[name]
            self._files.pop(name, None)
            self.version += 1
            return rule

    # -- files ------------------------------------------------------------

    def _path(self, name: str) -> Path:
        check_name(name)
        path = self.directory / f"{name}{SUFFIX}"
        # The name pattern already rules out separators; this is the second lock on the door.
        if path.parent != self.directory:
            raise ValidationFailed("name", f"{name[:60]!r} is not a rule name")
        return path

    def _own_file(self, name: str) -> Path:
        """The file that holds rule ``name`` and nothing else, to rewrite or delete.

        An admin may keep several rules in one hand-written file; the API
        will not rewrite such a file (it would lose the admin's comments and
        layout), so a change to one of its rules is refused with the file named.
        """
        path = self._files.get(name) or self._path(name)
        sharing = [n for n, p in self._files.items() if p == path and n != name]
        if sharing:
            raise Conflict(
                f"rule {name!r} is defined in {self.directory.name}/{path.name} together with "
                f"{len(sharing)} other rule(s); edit that file and reload"
            )
        return path

    def _save(self, rule: Rule) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._own_file(rule.name) if rule.name in self._rules else self._path(rule.name)
        text = yaml.safe_dump(rule.to_dict(), sort_keys=False, allow_unicode=True, width=100)
        before = self._disk_stamp()
        self._write_bytes(path, text.encode("utf-8"))
        self._own_change(before, path.name)
        self._rules[rule.name] = rule
        self._files[rule.name] = path
        self.version += 1

    def _write_bytes(self, path: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._fsync_dir()

    def _fsync_dir(self) -> None:
        try:
            fd = os.open(self.directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass  # some file systems cannot fsync a directory
        finally:
            os.close(fd)

