"""seclake import --manifest: what a bad manifest gets told (the good path: tests/cli/test_lake.py)."""

from __future__ import annotations

import pytest

from tests.cli.command import run


@pytest.mark.parametrize(
    "text, said",
    [
        ("path,vendr\nauth.log,x\n", "sources.csv line 1: the header must name the column path"),
        ("vendor\nlinux\n", "sources.csv line 1: the header must name the column path"),
        ("path,path\nauth.log,auth.log\n", "each once"),
        ("path,vendor\nauth.log,linux\nauth.log,bad vendor!\n", "sources.csv line 3: vendor: 'bad vendor!' is not a vendor name"),
        ("path,type\nauth.log,alert\n", "sources.csv line 2: type: must be event or flow, not 'alert'"),
        ("path,format\nauth.log,xml\n", "sources.csv line 2: format: must be one of"),
        ("path,customer\nauth.log,\"a\tb\"\n", "sources.csv line 2: customer: must be 1 to 128 printable characters"),
        ("path\nmissing.log\n", "sources.csv line 2: path: "),
        ("path\n../archive\n", "is not a file"),
        ("path,vendor\nauth.log\n", "sources.csv line 2: has 1 cells, the header 2"),
        ("path\n" + "a" * 5000 + "\n", "sources.csv line 2: a cell is longer than 4096 characters"),
        ("path\n", "lists no files"),
        ("", "lists no files"),
        ("path\n\"auth.log\n", "not CSV"),
    ],
)
def test_a_bad_manifest_is_named_by_line_and_column_and_nothing_is_imported(tmp_path, text, said):
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "auth.log").write_text(
        "<38>Nov 21 10:00:01 bastion sshd[411]: Failed password for root from 203.0.113.7 port 1 ssh2\n"
    )
    manifest = archive / "sources.csv"
    manifest.write_text(text)
    data = tmp_path / "data"
    result = run("import", "--manifest", str(manifest), "--data-dir", str(data))
    assert result.exit_code == 2 and said in result.output, result.output
    assert not data.exists()  # refused before the lake was opened


def test_a_manifest_that_is_not_text_and_a_command_with_nothing_to_import(tmp_path):
    manifest = tmp_path / "sources.csv"
    manifest.write_bytes(b"path\n\xff\xfe.log\n")
    result = run("import", "--manifest", str(manifest), "--data-dir", str(tmp_path / "data"))
    assert result.exit_code == 2 and "not UTF-8 text" in result.output, result.output
    result = run("import", "--data-dir", str(tmp_path / "data"))
    assert result.exit_code == 2 and "name at least one log file, or a --manifest" in result.output, result.output
