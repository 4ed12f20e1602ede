"""The committed figures' code, served beside this code on the same lake.

The search target "no class slower than the committed figures by more than
10%" compares two commits. Figures from two runs do not compare: this
machine is shared, and the same code's figures moved 2-3x between sessions
(the 2M-line HTTP ingest of the same product code took 110 s one day and
329-334 s another; a fixed loop, ``cpu.loop_seconds``, 79-142 ms within one
hour), while two servers timed in turns see the same machine. So the benchmark
extracts the commit whose figures are committed (``code.commit`` of
``bench-results/<name>.json`` as the current commit holds it) into a
directory of its own, serves a copy of the lake with that code and with
this one, and times the same HTTP bundles on both, alternately.

The baseline runs with this environment's dependencies: a commit that needs
others is not what the target is about (it compares seclake's code). Its
compiled modules (``seclake/native.py``) are this build's where their source
and C declarations are the same at both commits, and are compiled with
Cython otherwise; a module that cannot be compiled runs from its source, and
the report says how many did.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Pairs per class: with the same code on both sides (2M events), the median of
# 40 pairs' ratios read 0.94-1.07x, twice, with the lakes swapped between runs.
PAIRS = 40
# What the target allows.
MAX_RATIO = 1.10


def repository() -> Path:
    import seclake

    return Path(seclake.__file__).resolve().parent.parent


def _git(root: Path, *args: str, text: bool = True) -> Any:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=text, timeout=120)
    if done.returncode != 0:
        why = done.stderr if text else done.stderr.decode(errors="replace")
        raise BaselineUnavailable(f"git {' '.join(args[:2])}: {why.strip()[:300]}")
    return done.stdout


class BaselineUnavailable(Exception):
    """The baseline cannot be measured (no git, no such commit, or it cannot serve this lake)."""


def committed_commit(results_name: str, root: Path | None = None) -> str | None:
    """The commit whose figures ``bench-results/<results_name>.json`` holds at HEAD, if any."""
    root = root or repository()
    try:
        text = _git(root, "show", f"HEAD:bench-results/{results_name}.json")
    except (BaselineUnavailable, OSError, subprocess.SubprocessError):
        return None
    try:
        return (json.loads(text).get("code") or {}).get("commit") or None
    except ValueError:
        return None


@dataclass
class Tree:
    """A commit's seclake package extracted to ``path``, ready to serve."""

    commit: str
    path: Path
    reused: list[str] = field(default_factory=list)  # modules whose build is this one's
    compiled: list[str] = field(default_factory=list)  # modules compiled for the baseline
    interpreted: list[str] = field(default_factory=list)  # modules that run from source there

    def env(self) -> dict[str, str]:
        """Settings of a process that runs this tree's seclake: first on the import path, and
        the working directory off it (``python -m`` puts it first: a benchmark started in a
        checkout would serve the checkout's code)."""
        return {"PYTHONPATH": str(self.path.resolve()), "PYTHONSAFEPATH": "1"}

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "reused": len(self.reused), "compiled": len(self.compiled),
                "interpreted": self.interpreted}


def extract(ref: str, dest: Path, root: Path | None = None) -> Tree:
    """Extract ``ref``'s seclake package to ``dest`` and give it compiled modules."""
    root = root or repository()
    commit = _git(root, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = _git(root, "archive", "--format=tar", commit, "seclake", text=False)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    tree = Tree(commit, dest)
    _build(tree, root)
    return tree


def _listed(tree: Path) -> list[str]:
    """The modules ``tree``'s seclake/native.py compiles, as paths of their sources."""
    done = subprocess.run([sys.executable, str(tree / "seclake" / "native.py")], capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        raise BaselineUnavailable(f"its seclake/native.py failed: {done.stderr.strip()[-300:]}")
    return done.stdout.split()


def _build(tree: Tree, root: Path) -> None:
    from seclake import native

    todo = []
    for source in _listed(tree.path):
        name = source.removesuffix(".py").replace("/", ".")
        mine = root / source
        build = native.extension_of(name, root)
        if build is not None and mine.exists() and not native.stale(mine, build) \
                and _unchanged(root, tree.commit, source):
            # A copy is newer than its source (git archive dates files at the commit), so the
            # finder (native.py) takes it for a good build.
            shutil.copyfile(build, (tree.path / source).with_name(build.name))
            tree.reused.append(name)
        else:
            todo.append((name, source))
    if todo:
        _compile(tree, todo)


def _unchanged(root: Path, commit: str, source: str) -> bool:
    """Whether a module's source and C declarations are the same at ``commit`` as in the working tree."""
    paths = [source, source.removesuffix(".py") + ".pxd"]
    done = subprocess.run(["git", "-C", str(root), "diff", "--quiet", commit, "--", *paths], capture_output=True,
                          timeout=60)
    return done.returncode == 0


def _compile(tree: Tree, todo: list[tuple[str, str]]) -> None:
    """Compile the modules that differ, with setup.py's directives and flags (-O2, no debug symbols)."""
    if importlib.util.find_spec("Cython") is None:  # the bench extra installs it
        tree.interpreted += [name for name, _ in todo]
        return
    env = {**os.environ, "CFLAGS": "-O2 -g0"}
    done = subprocess.run(
        [sys.executable, "-m", "Cython.Build.Cythonize", "-3", "-X", "annotation_typing=False", "-i",
         "-j", str(os.cpu_count() or 1), *[source for _, source in todo]],
        cwd=tree.path, capture_output=True, text=True, timeout=1800, env=env,
    )
    for name, source in todo:
        built = any((tree.path / source).with_suffix(s).exists() for s in _suffixes())
        (tree.compiled if done.returncode == 0 and built else tree.interpreted).append(name)


def _suffixes() -> list[str]:
    return list(importlib.machinery.EXTENSION_SUFFIXES)


def loaded_from(pid: int) -> list[str]:
    """The directories a process loaded seclake's compiled modules from (its memory map)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return []
    roots = {line.split()[-1].split("/seclake/")[0] for line in maps.splitlines() if "/seclake/" in line
             and line.rstrip().endswith(".so")}
    return sorted(roots)


def copy_lake(data_dir: Path, dest: Path) -> None:
    """A copy of a stopped server's data directory (database and lake) for the baseline to serve."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(data_dir, dest)


def side_by_side(server: Any, http: Any, tree: Tree, workdir: Path, classes: list, pairs: int = PAIRS) -> dict[str, Any]:
    """Time every HTTP class on ``server`` (this code, reached through the
    engine ``http``) and on a copy of its lake served by ``tree``, in pairs
    of alternating order (the second of a pair finds the CPU caches warm).

    ``server`` is stopped for the copy and started again; ``http`` is
    reopened on it. Answers are compared: a baseline that answers otherwise
    (a fix since) is reported, not a failure of this run.
    """
    from seclake.bench.agree import differences
    from seclake.bench.engines import HttpEngine
    from seclake.bench.runner import _turns
    from seclake.bench.server import Server

    copy = workdir / "baseline-lake"
    server.stop()
    try:
        copy_lake(server.data_dir, copy)
    finally:
        server.start()
        http.reopen(server.url, server.token or "")
    base = Server(copy, workdir / "baseline-server.log", env=tree.env())
    try:
        base.start()
    except RuntimeError as e:
        shutil.rmtree(copy, ignore_errors=True)
        raise BaselineUnavailable(f"its server did not start on this lake: {e}") from None
    out: dict[str, Any] = {**tree.to_json(), "pairs": pairs, "classes": {}, "loaded_from": loaded_from(base.proc.pid)}
    try:
        old = HttpEngine(base.url, base.token or "", http.ids)
        timed = []
        for qc in [c for c in classes if "http" in c.engines]:
            try:
                for _ in range(2):  # warm both, and compare their answers
                    mine = http.run(qc)
                    theirs = old.run(qc)
            except Exception as e:  # noqa: BLE001 - the baseline cannot answer it (a call, a syntax it lacks)
                out["classes"][qc.name] = {"error": f"{type(e).__name__}: {e}"[:300]}
                continue
            out["classes"][qc.name] = {"differences": differences(mine, theirs)}
            timed.append(qc)
        # In rounds over the classes, as the wire pairs (runner.py): a burst of the machine's
        # other work falls on a few pairs of each class, not on every pair of one.
        took = {qc.name: {"current": [], "baseline": []} for qc in timed}
        engines = {"current": http, "baseline": old}
        for i in range(pairs):
            for qc in timed:
                for name in _turns(list(engines), i):  # each first in turn, as in the wire pairs
                    started = time.perf_counter()
                    engines[name].run(qc)
                    took[qc.name][name].append(time.perf_counter() - started)
        for name, t in took.items():
            # Judged on the pairs' own ratios: the two of a pair ran back to back, so a drift
            # of the machine's speed over the stage weighs on both (the same code on both sides,
            # 2M events: pair ratios 0.94-1.07, ratios of the medians 0.97-1.13).
            out["classes"][name].update(current=statistics.median(t["current"]),
                                        baseline=statistics.median(t["baseline"]),
                                        ratio=statistics.median([c / b for c, b in zip(t["current"], t["baseline"])]))
        old.close()
    finally:
        base.stop()
        shutil.rmtree(copy, ignore_errors=True)
    return out
