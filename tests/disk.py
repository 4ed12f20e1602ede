"""A real small disk (tmpfs) that a test can fill to the last byte (needs root)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(directory: Path, size: str = "48m") -> Iterator[Path]:
    """Mount a tmpfs of ``size`` at ``directory`` for the block (skipped without root; a failure under CI)."""
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        if os.environ.get("CI") == "true" and os.geteuid() == 0:
            pytest.fail(f"could not mount a tmpfs: {done.stderr}")
        pytest.skip(f"mounting a tmpfs needs root: {done.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def fill(disk: Path, name: str = "filler", leave: int = 0) -> Path:
    """Fill the disk to the last byte, then give back ``leave`` bytes; the file to delete to free it again."""
    filler = disk / name
    with open(filler, "wb", buffering=0) as f:  # unbuffered: nothing left to flush at close
        for size in (1 << 20, 1 << 12, 1):  # down to the last byte
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass
        if leave:
            f.truncate(max(0, f.tell() - leave))
    return filler
