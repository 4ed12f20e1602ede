"""The baseline the no-regression target is timed against: a commit's code, extracted and built
beside this checkout, that a server started from this checkout's directory really runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from seclake import native
from seclake.bench.baseline import BaselineUnavailable, committed_commit, extract, repository


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(repository()), *args], capture_output=True, text=True,
                          check=True).stdout


def test_the_committed_figures_name_their_commit():
    committed = json.loads(_git("show", "HEAD:bench-results/2M-1x.json"))["code"]["commit"]
    assert committed_commit("2M-1x") == committed and len(committed) == 40
    assert committed_commit("no-such-run") is None


def test_a_commit_extracted_runs_its_own_code_with_this_build(tmp_path):
    tree = extract("HEAD", tmp_path / "base")
    assert tree.commit == _git("rev-parse", "HEAD").strip()
    # Modules whose source is the same at HEAD take this build (no compiler run);
    # together with the compiled and the interpreted ones they are every listed module.
    assert len(tree.reused) + len(tree.compiled) + len(tree.interpreted) == len(native.MODULES)
    assert len(tree.reused) >= len(native.compiled()) - len(_changed_sources())
    # Started from this checkout's directory (as the benchmark's servers are), a process
    # with the tree's environment imports the tree's seclake, compiled modules included.
    probe = "import seclake, seclake.storage.document as d; print(seclake.__file__); print(d.__file__)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=repository(), capture_output=True, text=True,
                          env={**os.environ, **tree.env()}, check=True)
    package, document = done.stdout.split()
    assert package == str((tmp_path / "base" / "seclake" / "__init__.py").resolve())
    if "seclake.storage.document" in tree.reused:
        assert document.startswith(str((tmp_path / "base").resolve())) and document.endswith(".so")


def test_an_unknown_commit_is_refused_with_its_name(tmp_path):
    with pytest.raises(BaselineUnavailable, match="rev-parse"):
        extract("no-such-ref-anywhere", tmp_path / "base")


def _changed_sources() -> list[str]:
    """Listed modules the working tree changed since HEAD (they are compiled or interpreted, not reused)."""
    changed = set(_git("diff", "--name-only", "HEAD").split())
    return [n for n in native.MODULES if str(native.source_of(n).relative_to(repository())) in changed]


def test_a_changed_module_without_a_compiler_runs_from_its_source_and_says_so(tmp_path, monkeypatch):
    import importlib.util

    from seclake.bench import baseline

    # As if the commit's search/root.py differed from this checkout's, on a machine without Cython.
    monkeypatch.setattr(baseline, "_unchanged", lambda root, commit, source: source != "seclake/search/root.py")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "Cython" else real_find_spec(name, *a))
    tree = extract("HEAD", tmp_path / "base")
    assert tree.interpreted == ["seclake.search.root"] and "seclake.search.root" not in tree.reused
    assert tree.to_json()["interpreted"] == ["seclake.search.root"]
    probe = "import seclake.search.root as r; print(r.__file__)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=repository(), capture_output=True, text=True,
                          env={**os.environ, **tree.env()}, check=True)
    assert done.stdout.strip() == str((tmp_path / "base" / "seclake" / "search" / "root.py").resolve())
