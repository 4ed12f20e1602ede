"""The per-record path runs compiled (seclake/native.py), computing exactly what its sources define."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seclake import native

# Demo lines of every vendor through parsing, document building and the
# starter rules; prints a digest of everything computed, and which of the
# listed modules ran compiled.
_RUN = textwrap.dedent(r"""
    import hashlib, json, sys
    import orjson
    from seclake import native
    from seclake.bench.data import lines
    from seclake.detect.rulebook import read_rule_files, starter_pack
    from seclake.ingest.parser import parse_line
    from seclake.query.matcher import RecordView
    from seclake.record.dataset import DATASETS
    from seclake.storage.document import Documents
    from seclake.record.dataset import time_of

    rules, problems = read_rule_files(starter_pack())
    assert rules and not problems, problems
    digest = hashlib.sha256()
    builders, matched, records = {}, 0, 0

    def put(value):
        digest.update(orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))

    for n, line in enumerate(lines(events=int(sys.argv[1]), days=3)):
        parsed = parse_line(line.line, vendor=line.vendor, dataset=line.dataset, received_ms=1_700_000_000_000,
                            customer=line.customer)
        if parsed is None:
            put(None)
            continue
        record, understood = parsed
        records += 1
        put([record, understood])
        dataset = DATASETS[line.dataset]
        documents = builders.setdefault(line.dataset, Documents(dataset, 3))
        doc = documents.document(record, n, time_of(record, dataset))
        put({k: sorted(map(str, v)) if isinstance(v, list) else v for k, v in doc.items()})
        view = RecordView(record, dataset)
        for rule in rules:
            if rule.dataset == line.dataset:
                hit = rule.matcher()(view)
                matched += hit
                put([rule.name, hit, hit and rule.key_of(record)])
    for name, documents in sorted(builders.items()):
        put([name, vars(documents.fields), documents.shapes.to_json()])
    ran = [m for m in native.MODULES
           if m in sys.modules and not sys.modules[m].__file__.endswith(".py")]
    print(json.dumps({"digest": digest.hexdigest(), "records": records, "matched": matched, "compiled": ran}))
""")


def _run(native_on: bool, events: int = 6000) -> dict:
    env = dict(os.environ, SECLAKE_NATIVE="1" if native_on else "0", PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, "-c", _RUN, str(events)], env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_compiled_path_computes_what_the_sources_define():
    if not native.compiled():
        if os.environ.get("CI"):
            pytest.fail(f"no compiled module in this install (interpreted: {native.interpreted()}); "
                        "setup.py builds them with Cython and a C compiler")
        pytest.skip("seclake was installed without its compiled modules (no C compiler?)")
    compiled = _run(True)
    interpreted = _run(False)
    assert interpreted["compiled"] == []
    # Every listed module the run imports is the build, not the source.
    assert "seclake.storage.document" in compiled["compiled"]
    assert "seclake.ingest.parser" in compiled["compiled"]
    assert compiled["records"] > 5000 and compiled["matched"] > 0
    assert compiled["digest"] == interpreted["digest"]


def test_every_listed_module_is_built_under_ci():
    """CI measures and tests what users run: the install compiled them all."""
    if not os.environ.get("CI"):
        pytest.skip("checked where the install is known to have a C compiler (CI=true)")
    assert native.interpreted() == []


def _copy_of_a_built_module(tmp_path: Path) -> tuple[str, Path, Path]:
    """A package of one module of ours, as source and build, under ``tmp_path``."""
    name = "seclake.record.moment"
    built = native.extension_of(name)
    if built is None:
        pytest.skip("seclake was installed without its compiled modules")
    package = tmp_path / "copied"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = package / "moment.py"
    shutil.copy2(native.source_of(name), source)
    extension = package / ("moment" + importlib.machinery.EXTENSION_SUFFIXES[0])
    shutil.copy2(built, extension)
    os.utime(source, (1_000_000, 1_000_000))
    os.utime(extension, (1_000_100, 1_000_100))
    return "copied.moment", source, extension


def _loaded_from(tmp_path: Path, name: str, **env: str) -> str:
    code = ("import sys; from pathlib import Path; from seclake import native; "
            f"sys.path.insert(0, {str(tmp_path)!r}); "
            f"sys.meta_path.insert(0, native.SourceFirst(frozenset({{{name!r}}}), Path({str(tmp_path)!r}))); "
            f"import {name} as m; print(m.__file__)")
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_edited_source_runs_instead_of_its_older_build(tmp_path):
    name, source, extension = _copy_of_a_built_module(tmp_path)
    assert _loaded_from(tmp_path, name) == str(extension)
    # Edited after the build (an editable checkout at work): the source runs.
    os.utime(source, (1_000_200, 1_000_200))
    assert _loaded_from(tmp_path, name) == str(source)


def test_native_off_runs_every_source(tmp_path):
    name, source, _extension = _copy_of_a_built_module(tmp_path)
    assert _loaded_from(tmp_path, name, SECLAKE_NATIVE="0") == str(source)


def test_a_compile_under_way_is_told_by_its_marker_while_its_process_lives(tmp_path):
    # make run compiles in the background; a server started meanwhile says so instead of
    # telling the operator to reinstall.
    stage = tmp_path / "build" / "native"
    assert not native.building(tmp_path)
    stage.mkdir(parents=True)
    (stage / "running").write_text(str(os.getpid()))
    assert native.building(tmp_path)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (stage / "running").write_text(gone.stdout.strip())
    assert not native.building(tmp_path)
