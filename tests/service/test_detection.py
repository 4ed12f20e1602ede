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


def test_a_large_rule_set_is_frozen_for_the_garbage_collector_at_start(start_server, tmp_path: Path, monkeypatch):
    # Every SigmaHQ rule is ~470,000 objects: each full collection scanned them all, ~8 µs per ingested line.
    import gc

    from seclake.detect import detector

    gc.unfreeze()
    try:
        start_server(tmp_path / "small")
        assert gc.get_freeze_count() == 0, "the starter pack is not worth a freeze"
        monkeypatch.setattr(detector, "FREEZE_MIN_RULES", 1)
        srv = start_server(tmp_path / "large")
        assert gc.get_freeze_count() > 0
        assert srv.services.detector.ruleset() is srv.services.detector._ruleset
    finally:
        gc.unfreeze()
