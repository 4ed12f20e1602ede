"""The bench's `seclake import` stage: one real command over a manifest of every source."""

from __future__ import annotations

from pathlib import Path

from seclake.bench.data import write_batches
from seclake.bench.ingest import cli_ingest
from seclake.db.database import Database
from seclake.storage.catalog import PUBLISHED, Catalog


def test_the_import_stage_is_one_command_that_indexes_every_line_of_every_source(tmp_path, monkeypatch):
    # Relative directories, as `make bench` has them (bench-data/...).
    monkeypatch.chdir(tmp_path)
    data = write_batches(Path("batches"), events=3000, days=2, batch_lines=200)
    groups = {(b.vendor, b.dataset, b.customer) for b in data.batches}
    assert len(groups) > 5  # several vendors, both datasets, several customers
    r = cli_ingest(data, Path("cli") / "data", Path("cli.log"))
    assert (r["commands"], r["sources"], r["lines"]) == (1, len(groups), data.lines)
    db = Database(f"sqlite:///{tmp_path / 'cli' / 'data' / 'seclake.db'}")
    try:
        entries = Catalog(db).entries(PUBLISHED)
    finally:
        db.dispose()
    stored = sum(e.num_records for e in entries if e.dataset in ("event", "flow"))
    assert stored == data.lines  # every line indexed before the command exited
    assert {"event", "flow"} <= {e.dataset for e in entries}


def test_the_command_and_http_run_the_same_sample_in_turns_each_on_a_fresh_data_dir(tmp_path):
    from seclake.bench.ingest import TURNS, cli_against_http

    data = write_batches(tmp_path / "batches", events=3000, days=2, batch_lines=200)
    cli, http = cli_against_http(data, tmp_path / "turns", tmp_path / "cli.log", 1000, clients=2)
    # The first batches up to 1,000 lines, as the import stage's sample: every one stored, both ways.
    assert 1000 <= http["lines"] < 1000 + 200 and sum(http["stored"].values()) == http["lines"]
    assert cli["lines"] == http["lines"]
    # Each path ran as often as TURNS says, and its row is the mean of its runs.
    assert len(cli["turns"]) == TURNS.count("cli") and len(http["turns"]) == TURNS.count("http")
    assert cli["seconds"] == sum(t["seconds"] for t in cli["turns"]) / len(cli["turns"])
    assert http["searchable_events_per_second"] == http["lines"] / (http["seconds"] + http["seconds_to_searchable"])
    assert not any((tmp_path / "turns").glob("*/lake"))  # every run's lake is removed after it
