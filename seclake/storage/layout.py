"""Where the lake lives in the data dir, and the version of that layout.

    <data_dir>/lake/FORMAT             "seclake-lake <version>"
    <data_dir>/lake/wal/               write-ahead log segments
    <data_dir>/lake/splits/<dataset>/<split_id>/   one tantivy index + split.json

A split id is ``<dataset>-<UTC day of its records>-<12 random hex digits>``.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from seclake.storage.merge import DAY_MS

LAYOUT_VERSION = 1


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

    def split_dir(self, dataset: str, split_id: str) -> Path:
        return self.splits / dataset / split_id

    @staticmethod
    def new_split_id(dataset: str, time_ms: int) -> str:
        stamp = time.strftime("%Y%m%d", time.gmtime(time_ms // DAY_MS * DAY_MS / 1000))
        return f"{dataset}-{stamp}-{uuid.uuid4().hex[:12]}"
