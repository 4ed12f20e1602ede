"""Split ids: every one ``new_split_id`` writes is taken back, nothing else is."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.record.dataset import DATASETS
from seclake.storage.layout import Layout, check_split, split_path
from seclake.storage.pathname import UnsafeName


@settings(max_examples=300, deadline=None)
@given(dataset=st.sampled_from(sorted(DATASETS)), time_ms=st.integers(-(2**63), 2**63 - 1))
def test_every_split_id_seclake_writes_is_accepted(tmp_path_factory, dataset, time_ms):
    split_id = Layout.new_split_id(dataset, time_ms)
    check_split(dataset, split_id)
    root = tmp_path_factory.getbasetemp()
    assert split_path(root, dataset, split_id) == root / dataset / split_id


@pytest.mark.parametrize(("dataset", "split_id", "why"), [
    ("event", "../../../../victim", "is not of the form <dataset>-<day>-<12 hex digits>"),
    ("event", "event-20251121-0123456789ab/..", "is not of the form"),
    ("event", "event-20251121-0123456789AB", "is not of the form"),
    ("event", "event-20251121-0123456789ab\n", "is not of the form"),
    ("event", "event-２０２５-0123456789ab", "is not of the form"),  # digits of another script
    ("event", "flow-20251121-0123456789ab", "does not name its dataset 'event'"),
    ("..", "event-20251121-0123456789ab", "dataset '..' is not one of seclake's"),
    ("events", "events-20251121-0123456789ab", "is not one of seclake's"),
    ("event", None, "is not of the form"),
])
def test_anything_else_is_refused_saying_why(tmp_path, dataset, split_id, why):
    with pytest.raises(UnsafeName, match=why.replace("(", r"\(").replace(")", r"\)")):
        split_path(tmp_path, dataset, split_id, "table splits")
