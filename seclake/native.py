"""The modules on the per-record path, compiled by Cython when seclake is installed.

Every record ingested goes through parsing, normalization, rule matching, the
write-ahead log and document building: plain Python doing dict, set and
string work, run on the server's one GIL thread and in the build workers.
Cython compiles those modules unchanged (``setup.py``; the ``.py`` files stay
the definition, with no Cython-only syntax), which removes the interpreter's
dispatch around that work: measured over HTTP on 196k demo lines with the
starter rules, 1.15-1.19x events/s to searchable, and 1.13-1.16x records/s
for split building (``python -m seclake.bench.splitbuild``). The search path
(query parsing and compiling, leaves, the root's merge, hit wrapping) is
compiled too: 1-2% per search request, the rest of which is the engine and
the HTTP layer.

A module may have C types declared beside it (``storage/document.pxd``,
``record/flatten.pxd``); its ``.py`` file stays the definition all the same,
and a ``.pxd`` edit is rebuilt by ``make`` like a source edit (the finder
below judges staleness by the ``.py`` only: a ``.pxd`` changes types, not
what the module computes).

An install without a C compiler, or a module whose build failed, runs the
``.py`` file: the same results, slower. So does a compiled module whose
source changed since it was built (an editable checkout being worked on):
the finder installed by ``seclake/__init__.py`` loads the source instead of
a stale build, and ``make test`` rebuilds. ``SECLAKE_NATIVE=0`` runs every
module from its source (to compare, or to debug with Python's tools).

This file is read by ``setup.py`` before seclake's dependencies exist: it
imports nothing but the standard library.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

# Dotted names; the order does not matter. Modules holding pydantic models,
# HTTP routes or command-line definitions stay interpreted: their time is
# per request, not per record, and they lean on introspection.
MODULES = (
    "seclake.ingest.asa",
    "seclake.ingest.auditd",
    "seclake.ingest.authlog",
    "seclake.ingest.cef",
    "seclake.ingest.cloudtrail",
    "seclake.ingest.ecs",
    "seclake.ingest.entra",
    "seclake.ingest.fortigate",
    "seclake.ingest.jsonl",
    "seclake.ingest.kv",
    "seclake.ingest.leef",
    "seclake.ingest.message",
    "seclake.ingest.netflow",
    "seclake.ingest.okta",
    "seclake.ingest.panos",
    "seclake.ingest.parser",
    "seclake.ingest.reader",
    "seclake.ingest.record",
    "seclake.ingest.suricata",
    "seclake.ingest.sysmon",
    "seclake.ingest.syslog",
    "seclake.ingest.sysmon",
    "seclake.ingest.timestamp",
    "seclake.ingest.vendor",
    "seclake.ingest.winsecurity",
    "seclake.ingest.zeek",
    "seclake.record.dataset",
    "seclake.record.flatten",
    "seclake.record.identity",
    "seclake.record.jsontype",
    "seclake.record.moment",
    "seclake.record.value",
    "seclake.query.ast",
    "seclake.query.cost",
    "seclake.query.datemath",
    "seclake.query.gate",
    "seclake.query.limits",
    "seclake.query.matcher",
    "seclake.query.parser",
    "seclake.query.pattern",
    "seclake.query.tantivy_compiler",
    "seclake.search.histogram",
    "seclake.search.leaf",
    "seclake.search.memory",
    "seclake.search.plan",
    "seclake.search.pruning",
    "seclake.search.root",
    "seclake.api.hitwrapper",
    "seclake.detect.correlation",
    "seclake.detect.detector",
    "seclake.detect.rule",
    "seclake.detect.ruleindex",
    "seclake.detect.ruleset",
    "seclake.detect.signal",
    "seclake.detect.state",
    "seclake.storage.catalog",
    "seclake.storage.customers",
    "seclake.storage.document",
    "seclake.storage.fieldmap",
    "seclake.storage.flusher",
    "seclake.storage.recordstore",
    "seclake.storage.shape",
    "seclake.storage.split",
    "seclake.storage.wal",
    "seclake.service.ingestion",
)
_NAMES = frozenset(MODULES)
ROOT = Path(__file__).resolve().parent.parent
# A wheel's files are written one after another, in any order: a source
# written up to this long after its build is not taken for an edit.
SLACK_SECONDS = 2.0


def source_of(name: str, root: Path = ROOT) -> Path:
    return root.joinpath(*name.split(".")).with_suffix(".py")


def extension_of(name: str, root: Path = ROOT) -> Path | None:
    """The built extension of a module, if there is one beside its source."""
    source = source_of(name, root)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = source.with_suffix(suffix)
        if path.exists():
            return path
    return None


def stale(source: Path, extension: Path) -> bool:
    """Whether a source was changed after its extension was built."""
    return source.stat().st_mtime > extension.stat().st_mtime + SLACK_SECONDS


def wanted() -> bool:
    return os.environ.get("SECLAKE_NATIVE", "1") != "0"


def build_of(name: str, root: Path = ROOT) -> Path | None:
    """The build a listed module runs as, or None: it runs from its source
    (no build, one older than the source, or SECLAKE_NATIVE=0)."""
    extension = extension_of(name, root)
    if extension is None or not wanted():
        return None
    source = source_of(name, root)
    return None if source.exists() and stale(source, extension) else extension


def compiled() -> list[str]:
    """The listed modules that run (or will run) compiled in this process."""
    return [name for name in MODULES if build_of(name) is not None]


def interpreted() -> list[str]:
    """The listed modules that run from their source: no build, a stale one, or SECLAKE_NATIVE=0."""
    done = set(compiled())
    return [name for name in MODULES if name not in done]


class SourceFirst:
    """Loads a listed module from its ``.py`` when its build must not be used.

    Python's own finder prefers an extension to a source of the same name
    whatever their ages; this finder runs before it, for the listed modules
    only, and answers None (Python's way) when the build is good. (A finder
    needs only ``find_spec``: importlib.abc would cost every process,
    spawned build workers included, ~7 ms of imports.)"""

    def __init__(self, names: frozenset[str] = _NAMES, root: Path = ROOT):
        self.names, self.root = names, root

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names:
            return None
        source = source_of(fullname, self.root)
        if build_of(fullname, self.root) is not None or extension_of(fullname, self.root) is None \
                or not source.exists():
            return None  # Python's own finder: the build, or the only file there is
        return importlib.util.spec_from_file_location(fullname, source)


def install() -> None:
    """Put the finder first (once)."""
    if not any(isinstance(f, SourceFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, SourceFirst())


def building(root: Path = ROOT) -> bool:
    """Whether ``build()`` is compiling right now (``make run`` starts it in the background)."""
    try:
        os.kill(int((root / "build" / "native" / "running").read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _built_in(lib: Path, name: str, root: Path) -> Path | None:
    """A module's up-to-date build in ``lib`` (setuptools' build dir), or None."""
    source = source_of(name, root)
    for built in lib.joinpath(*name.split(".")[:-1]).glob(name.rsplit(".", 1)[1] + ".*"):
        if built.suffix in (".so", ".pyd") and not stale(source, built):
            return built
    return None


def build(echo=print, root: Path = ROOT) -> int:
    """Compile every listed module beside its source, telling how far it is.

    ``make`` runs this apart from ``pip install`` (which installs with
    ``SECLAKE_NATIVE=0``), so one compile serves ``make run`` and ``make test``
    alike and a first ``make run`` need not wait for it (it runs it in the
    background: the next start runs compiled). Each extension is built in
    ``build/native`` and then renamed into place, so a process importing a
    module meanwhile (a server started from the sources, its spawned workers)
    finds the old file or the whole new one, never half of one. Returns the
    number of modules that run compiled afterwards."""
    import shutil
    import subprocess
    import time

    started, wall = time.monotonic(), time.time()
    stage = root / "build" / "native"
    lib = stage / "lib"  # kept: setuptools rebuilds only what changed since
    lib.mkdir(parents=True, exist_ok=True)
    todo = [name for name in MODULES if build_of(name, root) is None]
    if not todo:
        echo(f"compiled modules: all {len(MODULES)} up to date")
        return len(MODULES)
    # What setuptools will compile: the modules whose build in lib is missing or older than
    # the source (a first build compiles all of them, then copies in those missing here).
    compiling = [name for name in MODULES if _built_in(lib, name, root) is None]
    echo(f"compiling {len(compiling)} of {len(MODULES)} modules with Cython (seclake/native.py says why); "
         f"log: {stage.relative_to(root) / 'build.log'}")
    marker = stage / "running"  # building() tells a server started meanwhile
    marker.write_text(str(os.getpid()))
    env = dict(os.environ, SECLAKE_NATIVE="1")
    command = [sys.executable, str(root / "setup.py"), "build_ext", "--build-lib", str(lib),
               "--build-temp", str(stage / "temp")]
    with open(stage / "build.log", "wb") as log:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        shown = -1
        while process.poll() is None:
            time.sleep(0.5)
            done = sum(1 for so in lib.rglob("*.so") if so.stat().st_mtime >= wall)
            if done != shown:
                shown = done
                echo(f"  compiled {done}/{len(compiling)} ({time.monotonic() - started:.0f} s)")
    placed = 0
    for name in todo:
        built = _built_in(lib, name, root)  # None: its compile failed (build.log says why)
        if built is not None:
            target = source_of(name, root).with_name(built.name)
            partial = target.with_name(target.name + ".partial")
            shutil.copy2(built, partial)
            os.replace(partial, target)  # atomic: an importer never meets half a file
            placed += 1
    marker.unlink(missing_ok=True)
    seconds = time.monotonic() - started
    if process.returncode != 0 or placed < len(todo):
        echo(f"compiled {placed} of {len(todo)} modules in {seconds:.0f} s; the others run from their "
             f"sources (slower, same results): see {stage / 'build.log'}")
    else:
        echo(f"compiled {placed} modules in {seconds:.0f} s")
    return len(MODULES) - len([name for name in MODULES if build_of(name, root) is None])


if __name__ == "__main__":
    if sys.argv[1:] == ["build"]:  # make: compile the listed modules in place
        build(lambda line: print(line, flush=True))
    else:  # the compiled modules' sources, for the Makefile's stamps
        print(" ".join(str(source_of(name).relative_to(ROOT)) for name in MODULES))
