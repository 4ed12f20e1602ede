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



def test_records_whose_time_the_index_cannot_hold_are_written_with_time_zero_not_failing_the_split(tmp_path):
    # The index's time is a 64-bit integer: an infinite, NaN or too large
    # time (a summary or a record written by an older build) made the whole
    # split fail, and with it every flush of the records pending with it.
    odd = [float("inf"), float("-inf"), float("nan"), 2**63, 1e300]
    records = [StoredRecord(i, {"@timestamp": t, "@message": f"odd {i}"}) for i, t in enumerate(odd, start=1)]
    records.append(StoredRecord(len(odd) + 1, {"@timestamp": T0, "@message": "plain"}))
    meta = write_split(records, EVENTS, tmp_path / "s1", "s1")
    split = Split(tmp_path / "s1")
    assert meta.num_records == len(odd) + 1
    assert [r.docid for r in split.all_records()] == list(range(1, len(odd) + 2))
    assert (meta.time_min, meta.time_max) == (0, T0)
