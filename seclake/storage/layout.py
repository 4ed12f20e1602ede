"""Where the lake lives in the data dir, and the version of that layout.

    <data_dir>/lake/FORMAT             "seclake-lake <version>"
    <data_dir>/lake/wal/               write-ahead log segments
    <data_dir>/lake/splits/<dataset>/<split_id>/   one tantivy index + split.json

A split id is ``<dataset>-<UTC day of its records>-<12 random hex digits>``,
and no other name is ever taken for one (``check_split``): the catalog and
the object store are read back into paths, and a database or backup altered
to name ``../../elsewhere`` must not reach outside the lake (issue 39).
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

from seclake.record.dataset import DATASETS
from seclake.storage.merge import DAY_MS
from seclake.storage.pathname import UnsafeName, inside

LAYOUT_VERSION = 1

# What ``new_split_id`` writes: the day is ``%Y%m%d`` of a 64-bit millisecond
# time, so a year before 1000 or past 9999 (a record's time is the sender's
# word) has fewer or more digits, and one before year 0 a minus sign.
SPLIT_ID = re.compile(r"(?P<dataset>[a-z]{1,16})-(?P<day>-?[0-9]{1,16})-[0-9a-f]{12}")


def check_split(dataset: object, split_id: object, where: str = "") -> None:
    """Refuse (``UnsafeName``) a dataset that is not one of seclake's or a
    split id not of the form ``new_split_id`` writes for that dataset."""
    if not isinstance(dataset, str) or dataset not in DATASETS:
        raise UnsafeName("dataset", dataset, f"is not one of seclake's ({', '.join(DATASETS)})", where)
    match = SPLIT_ID.fullmatch(split_id) if isinstance(split_id, str) else None
    if match is None:
        raise UnsafeName("split id", split_id, "is not of the form <dataset>-<day>-<12 hex digits> seclake writes", where)
    if match["dataset"] != dataset:
        raise UnsafeName("split id", split_id, f"does not name its dataset {dataset!r}", where)


def split_path(root: Path, dataset: str, split_id: str, where: str = "") -> Path:
    """``root/<dataset>/<split id>``, refused (``UnsafeName``) unless both are
    what seclake writes and the path stays under ``root``: the one way a
    split's directory is named, in the lake, a backup and a searcher's cache."""
    check_split(dataset, split_id, where)
    return inside(root, dataset, split_id, what="split directory", where=where)


class Layout:
    def __init__(self, data_dir: Path):
        self.root = data_dir / "lake"
        self.wal = self.root / "wal"
        self.splits = self.root / "splits"
        self.format_file = self.root / "FORMAT"

    def ensure(self) -> None:
        """Create the layout, or check that an existing one is of our version."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.format_file.exists():
            text = self.format_file.read_text().strip()
            if text != f"seclake-lake {LAYOUT_VERSION}":
                raise RuntimeError(
                    f"{self.format_file}: lake layout {text!r} is not 'seclake-lake {LAYOUT_VERSION}'"
                )
        else:
            self.format_file.write_text(f"seclake-lake {LAYOUT_VERSION}\n")
        self.wal.mkdir(exist_ok=True)
        self.splits.mkdir(exist_ok=True)

    def split_dir(self, dataset: str, split_id: str, where: str = "") -> Path:
        return split_path(self.splits, dataset, split_id, where)

    @staticmethod
    def new_split_id(dataset: str, time_ms: int) -> str:
        stamp = time.strftime("%Y%m%d", time.gmtime(time_ms // DAY_MS * DAY_MS / 1000))
        return f"{dataset}-{stamp}-{uuid.uuid4().hex[:12]}"
