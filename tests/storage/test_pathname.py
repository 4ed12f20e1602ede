"""A stored name becomes a path inside its directory, or is refused saying what, where and why."""

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.storage.pathname import MAX_BYTES, UnsafeName, entry, inside

HOSTILE = ["..", ".", "", "../../../../victim", "/etc", "a/b", "..\\..\\victim", "a\0b", "a\nb", "\x7f",
           "é" * 200, "\udc80", "x" * 256]

# Names made of the characters that matter to paths, and any others.
names = st.one_of(
    st.text(alphabet=st.sampled_from(["/", ".", "\\", "\0", "a", "-", "\n", "é", "\udc80"]), max_size=12),
    st.text(max_size=300),
)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_is_refused_with_what_where_and_why(tmp_path, name):
    with pytest.raises(UnsafeName) as refused:
        inside(tmp_path, name, what="split id", where="table splits")
    message = str(refused.value)
    assert message.startswith("table splits: split id ") and refused.value.why in message


@settings(max_examples=400, deadline=None)
@given(first=names, second=names)
def test_whatever_the_names_the_path_is_refused_or_strictly_inside(tmp_path_factory, first, second):
    root = tmp_path_factory.getbasetemp() / "root"
    root.mkdir(exist_ok=True)
    try:
        path = inside(root, first, second, what="name")
    except UnsafeName:
        return
    assert root.resolve() in path.resolve().parents
    assert path.parent.parent == root and len(first.encode()) <= MAX_BYTES and "/" not in first + second


def test_a_symbolic_link_out_of_the_directory_is_refused_however_plain_the_name(tmp_path):
    root, victim = tmp_path / "root", tmp_path / "victim"
    root.mkdir()
    victim.mkdir()
    (root / "event").symlink_to(victim, target_is_directory=True)
    (root / "self").symlink_to(root, target_is_directory=True)
    with pytest.raises(UnsafeName, match=f"leads to {victim}/x through a symbolic link, outside {root}"):
        inside(root, "event", "x", what="split directory")
    with pytest.raises(UnsafeName, match="outside"):  # the directory itself is never a name's path
        inside(root, "self", what="split directory")


def test_a_directory_reached_through_a_link_of_the_operator_s_is_fine(tmp_path):
    """A data dir on another disk, linked into place: the names below it are what is checked."""
    disk = tmp_path / "disk"
    disk.mkdir()
    os.symlink(disk, tmp_path / "data")
    assert inside(tmp_path / "data", "event", "x", what="split directory") == tmp_path / "data" / "event" / "x"


def test_plain_names_pass_as_they_are():
    assert entry("event-20251121-0123456789ab", "split id") == "event-20251121-0123456789ab"
    assert entry(".partial-x", "cached split") == ".partial-x"
    with pytest.raises(UnsafeName, match="is a int, not a name"):
        entry(7, "split id")


def test_paths_are_made_relative_to_the_directory_given(tmp_path):
    assert inside(tmp_path, "a", "b", what="x") == Path(tmp_path, "a", "b")
