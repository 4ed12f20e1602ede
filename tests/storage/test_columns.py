"""A split's columns (storage/columns.py): each row's value by kind as the reader hands it to the
row evaluator, computed once and kept beside the split, bounded, and still answered when they
cannot be kept."""

from __future__ import annotations

import os

import numpy as np
import pytest

from seclake.storage import columns
from seclake.analytics.columnar import READING
from seclake.storage.columns import FLOAT, INT, MISSING, OTHER, STR, column_of

T0 = 1_763_600_000_000


def test_values_are_kept_by_kind_and_numbers_written_as_text_are_numbers():
    c = column_of([[], [5], [2.5], ["443"], ["1.5"], ["web"], [True], [1, 2], [2**70], [None]], READING.number)
    assert c.kinds.tolist() == [MISSING, INT, FLOAT, STR, STR, STR, OTHER, OTHER, OTHER, MISSING]
    assert c.numeric().tolist() == [MISSING, INT, FLOAT, INT, FLOAT, MISSING, MISSING, MISSING, MISSING, MISSING]
    assert c.ints[[1, 3]].tolist() == [5, 443] and c.floats[[2, 4]].tolist() == [2.5, 1.5]
    assert [c.strings[i] for i in c.codes[[3, 4, 5]]] == ["443", "1.5", "web"]
    assert c.other
    plain = column_of([["a"], ["B"], ["a"]], READING.number)
    assert plain.numbers is None and plain.ints is None and plain.codes.tolist() == [0, 1, 0] and not plain.other


@pytest.fixture
def split(services):
    services.start()
    services.lake.append([("event", {"@timestamp": T0 + i, "@fields": {"n": i, "host": f"h{i % 3}"}}) for i in range(30)])
    services.lake.flush()
    (one,) = services.lake.splits("event")
    return one


def test_columns_are_computed_once_kept_and_read_back_the_same(split, monkeypatch):
    first = columns.read(split, ["@fields.n", "@fields.host", "@fields.nowhere"], READING)
    assert first.computed == 3 and len(first.docids) == 30
    assert first.columns["@fields.n"].ints.tolist() == list(range(30))
    monkeypatch.setattr(columns, "_opened", type(columns._opened)())  # a new process: nothing opened
    monkeypatch.setattr(columns, "_compute", lambda *a: pytest.fail("computed again"))
    again = columns.read(split, ["@fields.n", "@fields.host", "@fields.nowhere"], READING)
    assert again.computed == 0 and np.array_equal(again.docids, first.docids)
    for path, c in first.columns.items():
        kept = again.columns[path]
        assert kept.kinds.tolist() == c.kinds.tolist() and kept.strings == c.strings, path
    # A path no record holds is kept as its row count: no array of it on disk.
    empty = split.path / columns.DIRECTORY / columns._name("@fields.nowhere")
    assert sorted(p.name for p in empty.iterdir()) == ["column.json"]
    assert again.columns["@fields.nowhere"].kinds.tolist() == [MISSING] * 30


def test_past_the_columns_a_split_keeps_and_when_they_cannot_be_written_they_are_still_answered(split, monkeypatch, caplog):
    monkeypatch.setattr(columns, "MAX_KEPT", 2)  # docids.npy and one column
    read = columns.read(split, ["@fields.n"], READING)
    read = columns.read(split, ["@fields.host"], READING)
    assert read.columns["@fields.host"].strings == ["h0", "h1", "h2"]
    assert not (split.path / columns.DIRECTORY / columns._name("@fields.host")).exists()
    monkeypatch.setattr(columns, "MAX_KEPT", 256)
    monkeypatch.setattr(columns.os, "rename", lambda *a: (_ for _ in ()).throw(PermissionError("read-only")))
    read = columns.read(split, ["@fields.host"], READING)
    assert read.columns["@fields.host"].codes.tolist() == [i % 3 for i in range(30)]
    assert "could not be kept" in caplog.text
    assert not [p for p in (split.path / columns.DIRECTORY).iterdir() if p.name.startswith(".staging")]
    # What a process that died writing a column left is removed once old, not counted as kept.
    left = split.path / columns.DIRECTORY / ".staging-dead"
    left.mkdir()
    os.utime(left, (0, 0))
    monkeypatch.undo()
    columns.read(split, ["@fields.seq"], READING)
    assert not left.exists()


def test_a_split_deleted_while_its_columns_are_computed_is_not_made_again(split):
    """A merge or retention removes a split a query is reading: its columns answer that query, and
    keeping them does not bring back a directory of the split."""
    import shutil

    split.store  # open: the query holds it
    shutil.rmtree(split.path)
    read = columns.read(split, ["@fields.n"], READING)
    assert read.columns["@fields.n"].ints.tolist() == list(range(30))
    assert not split.path.exists()
