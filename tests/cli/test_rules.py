"""seclake rules: check (the database's rules, or files), export, import (all or nothing), run."""

from __future__ import annotations

from seclake.db.database import Database
from seclake.detect.rulebook import RuleBook, starter_pack
from tests.cli.command import run

RULE_TEXT = "name: {name}\nbehavior: B\nquery: 'EventID:1'\nkeyField: k\nkeyType: ip\nriskScore: {score}\n"


def book_of(data_dir) -> RuleBook:
    return RuleBook(Database(f"sqlite:///{data_dir / 'seclake.db'}"))


def test_check_the_database_and_files(tmp_path):
    data = tmp_path / "data"
    checked = run("rules", "check", "--data-dir", str(data))
    assert checked.exit_code == 0 and f"{len(starter_pack())} rules" in checked.output and "0 invalid" in checked.output
    files = tmp_path / "repo"
    files.mkdir()
    (files / "good.yaml").write_text(RULE_TEXT.format(name="good", score=1))
    assert "1 rules (1 enabled) in 1 files, 0 problem(s)" in run("rules", "check", str(files)).output
    (files / "broken.yaml").write_text("name: broken\nbehavior: X\ndescription: d\nquery: 'a AND'\nkeyField: k\nkeyType: ip\nriskScore: 1\n")
    bad = run("rules", "check", str(files))
    assert bad.exit_code == 1 and "repo/broken.yaml line 4" in bad.output
    assert run("rules", "check", str(tmp_path / "missing")).exit_code == 2


def test_export_import_round_trip_and_replace(tmp_path):
    data, repo = tmp_path / "data", tmp_path / "repo"
    exported = run("rules", "export", str(repo), "--data-dir", str(data))
    assert exported.exit_code == 0 and f"exported {len(starter_pack())} rules" in exported.output
    assert sorted(p.name for p in repo.iterdir()) == sorted(p.name for p in starter_pack())
    # Edit the repository as code: change one rule, add one, drop one.
    (repo / "mine.yaml").write_text(RULE_TEXT.format(name="mine", score=5))
    text = (repo / "known-bad-domain.yaml").read_text()
    (repo / "known-bad-domain.yaml").write_text(text.replace("enabled: true", "enabled: false"))
    (repo / "credential-dumping.yaml").unlink()
    done = run("rules", "import", str(repo), "--data-dir", str(data))
    assert done.exit_code == 0 and "1 added, 1 updated" in done.output, done.output
    book = book_of(data)
    assert book.get("mine").risk_score == 5 and book.get("known-bad-domain").enabled is False
    assert book.get_or_none("credential-dumping") is not None  # kept without --replace
    replaced = run("rules", "import", str(repo), "--replace", "--data-dir", str(data))
    assert replaced.exit_code == 0 and "1 deleted" in replaced.output, replaced.output
    assert book.get_or_none("credential-dumping") is None  # the same database, seen at the next read
    # One file given by name works too.
    (tmp_path / "one.yaml").write_text(RULE_TEXT.format(name="mine", score=9))
    assert run("rules", "import", str(tmp_path / "one.yaml"), "--data-dir", str(data)).exit_code == 0
    assert book.get("mine").risk_score == 9
    book.db.dispose()


def test_import_with_one_bad_file_imports_nothing(tmp_path):
    data, repo = tmp_path / "data", tmp_path / "repo"
    assert run("rules", "check", "--data-dir", str(data)).exit_code == 0  # the first start: the starter pack
    repo.mkdir()
    (repo / "a.yaml").write_text(RULE_TEXT.format(name="new-a", score=1))
    (repo / "b.yaml").write_text(RULE_TEXT.format(name="new-b", score=-1))
    result = run("rules", "import", str(repo), "--replace", "--data-dir", str(data))
    assert result.exit_code == 1 and "repo/b.yaml line 6: riskScore" in result.output
    assert "nothing imported" in result.output
    book = book_of(data)
    names = {r.name for r in book.rules()}
    assert "new-a" not in names and len(names) == len(starter_pack())  # --replace deleted nothing either
    # An empty directory is refused rather than read as "delete every rule".
    (tmp_path / "empty").mkdir()
    assert run("rules", "import", str(tmp_path / "empty"), "--replace", "--data-dir", str(data)).exit_code == 2
    assert len(book.rules()) == len(starter_pack())
    book.db.dispose()


def test_rules_run(tmp_path):
    data = tmp_path / "data"
    assert run("demo", "--days", "1", "--data-dir", str(data)).exit_code == 0
    ran = run("rules", "run", "--from", "now-2d", "--to", "now", "--data-dir", str(data))
    assert ran.exit_code == 0, ran.output
    made = int(ran.output.split("made ")[1].split()[0])
    assert made > 0
    assert "--from" in run("rules", "run", "--from", "yesterday-ish", "--data-dir", str(data)).output
