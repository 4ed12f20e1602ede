"""The detector as a server component (service/detection.py)."""

from __future__ import annotations

from pathlib import Path


def test_the_rule_set_and_its_index_are_built_at_start_not_in_the_first_ingest(start_server, tmp_path: Path):
    # With every SigmaHQ rule the index takes seconds to build: built in the first
    # ingest, they were inside that request's time (and the bench's timed stage).
    srv = start_server(tmp_path / "data")
    detector = srv.services.detector
    built = detector._ruleset
    assert built is not None, "no rule set built at start"
    assert built.version == detector.rulebook.version
    assert detector.ruleset() is built  # the first ingest uses it, not a new one
