"""Writing one split: complete at its place, or nothing there at all."""

from __future__ import annotations

import itertools

import pytest

from seclake.record.dataset import EVENTS
from seclake.storage.split import STOP_CHECK_RECORDS, Split, SplitAborted, StoredRecord, write_split

T0 = 1_763_683_200_000
RECORDS = STOP_CHECK_RECORDS + 500  # two looks at ``stop`` while documents are made, two while they are added


def _records(n: int):
    return [StoredRecord(i, {"@timestamp": T0 + i, "@message": f"event {i}", "@fields": {"n": i}}) for i in range(1, n + 1)]


def _stop_at_look(look: int):
    """A ``stop`` that answers true from its ``look``-th call on (1-based)."""
    calls = itertools.count(1)
    return lambda: next(calls) >= look


@pytest.mark.parametrize("look", [1, 2, 3, 4], ids=["at-once", "making-documents", "adding-first", "adding-later"])
def test_a_write_told_to_stop_leaves_neither_split_nor_staging(tmp_path, look):
    dest = tmp_path / "s1"
    with pytest.raises(SplitAborted):
        write_split(_records(RECORDS), EVENTS, dest, "s1", stop=_stop_at_look(look))
    assert list(tmp_path.iterdir()) == []
    # The same place takes the split afterwards, whole.
    meta = write_split(_records(RECORDS), EVENTS, dest, "s1", stop=lambda: False)
    assert meta.num_records == RECORDS
    assert [r.docid for r in Split(dest).all_records()] == list(range(1, RECORDS + 1))

