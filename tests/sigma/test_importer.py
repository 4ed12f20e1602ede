"""Reading rule files: Sigma told from seclake YAML by content, zips read in place, filters, and
every Sigma rule seclake cannot run skipped with its file and reason."""

from __future__ import annotations

import zipfile

from seclake.sigma.importer import Filters, is_sigma, read

SIGMA = """title: Whoami Run
id: {id}
status: {status}
logsource:
    category: process_creation
    product: {product}
detection:
    selection:
        Image|endswith: '\\\\whoami.exe'
    condition: selection
level: {level}
tags:
    - attack.discovery
    - attack.t1033
"""
SECLAKE = """name: own-rule
behavior: Own Rule
query: event.code:4625
keyField: source.ip
keyType: ip
riskScore: 100
"""


def _sigma(n: int, *, status="stable", product="windows", level="high") -> str:
    return SIGMA.format(id=f"00000000-0000-4000-8000-{n:012d}", status=status, product=product, level=level)


def test_sigma_and_seclake_files_side_by_side_in_a_tree_and_a_zip(tmp_path):
    tree = tmp_path / "rules" / "windows"
    tree.mkdir(parents=True)
    (tree / "a.yml").write_text(_sigma(1))
    (tree / "macos.yml").write_text(_sigma(2, product="macos"))
    (tmp_path / "rules" / "own.yaml").write_text(SECLAKE)
    (tmp_path / "rules" / ".hidden.yml").write_text("not: [read")
    with zipfile.ZipFile(tmp_path / "release.zip", "w") as z:
        z.writestr("rules/b.yml", _sigma(3, level="low"))
        z.writestr("rules/c.yml", _sigma(4, status="experimental"))
    report = read([tmp_path / "rules", tmp_path / "release.zip"])
    assert not report.errors
    assert sorted(r.name for r in report.rules) == ["00000000-0000-4000-8000-000000000001",
                                                    "00000000-0000-4000-8000-000000000003",
                                                    "00000000-0000-4000-8000-000000000004", "own-rule"]
    assert [(s.file.endswith("macos.yml"), s.reason) for s in report.skipped] == [(True, "log source not supported")]
    sigma = next(r for r in report.rules if r.name.endswith("1"))
    assert (sigma.risks, sigma.risk_score, sigma.key_field) == (("T1033",), 5000, "host.name")

    filtered = read([tmp_path / "release.zip"], Filters(frozenset({"stable"}), "medium"))
    assert filtered.rules == [] and sorted(s.detail for s in filtered.filtered) == [
        "level low below medium", "status experimental not in stable"]


def test_hostile_files_are_named_never_a_crash(tmp_path):
    (tmp_path / "bad.yml").write_text("title: x\nlogsource: {product: windows}\ndetection: {sel: {a: 1}, condition: sel and")
    (tmp_path / "deep.yml").write_text("title: x\nlogsource: {product: windows, category: process_creation}\ndetection:\n  condition: "
                                       + "(" * 5000 + "a" + ")" * 5000 + "\n  a: {x: 1}\n")
    (tmp_path / "binary.yml").write_bytes(b"\xff\xfe\x00bad")
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not a zip")
    report = read([tmp_path])
    assert report.rules == []
    assert {s.file.rsplit("/", 1)[-1]: s.reason for s in report.skipped} == {"bad.yml": "invalid Sigma",
                                                                             "deep.yml": "no id"}
    assert sorted(e.split(":")[0].rsplit("/", 1)[-1] for e in report.errors) == ["binary.yml", "broken.zip"]


def test_content_tells_sigma_from_seclake():
    assert is_sigma(_sigma(1)) and not is_sigma(SECLAKE)
