"""What every spawned worker process of the server shares: split builders and merges
(``storage/builder.py``) and import parsers (``ingest/pool.py``).

Workers are spawned, not forked: the server process has threads (tantivy's
too), and a fork copies their locks in whatever state they are. Each worker
runs short jobs that make millions of short-lived containers and no
reference cycles, so its cyclic collector is off and runs once after each
job that left more than it freed; and each ends once the server that
started it is gone.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import threading
import time
from typing import Any, Callable, TypeVar

CONTEXT = multiprocessing.get_context("spawn")
# How often a worker looks whether its server still lives.
PARENT_POLL_SECONDS = 1.0

T = TypeVar("T")

# Tracked objects jobs may leave beyond what they freed before ``job`` collects.
COLLECT_AFTER = 50_000


def start(parent: int, niceness: int = 0, name: str = "") -> None:
    """A worker's initializer: ``parent`` is the server's pid; ``name`` its
    process name, as ``top`` and ``/proc/<pid>/comm`` show it (the bench
    tells a worker's role by it, ``bench/cpu.py``)."""
    if name:
        _name(name)
    # The cyclic collector kept walking a split's documents and took a third
    # of a build's time (measured: 60 -> 37 µs per record); ``job`` collects.
    gc.disable()
    if niceness:
        os.nice(niceness)
    threading.Thread(target=watch_parent, args=(parent,), name="seclake-parent-watch", daemon=True).start()


def _name(name: str) -> None:
    # PR_SET_NAME names the calling thread, here the worker's main thread,
    # which names the process; at most 15 bytes.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(15, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the name is only a convenience


def watch_parent(parent: int) -> None:
    """End this worker once the server that started it is gone, however it
    ended: after a SIGKILL of the server, workers stayed blocked on their task
    queue forever (110-134 MB each). The server's death reparents the
    worker, so its parent id changes; PR_SET_PDEATHSIG would follow the
    server's thread that made the pool, not the server process."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(0)


def job(fn: Callable[..., T], *args: Any) -> T:
    """Run one job in a worker, then collect what it left (the collector is off),
    once its jobs have left ``COLLECT_AFTER`` more tracked objects than they freed.

    A collection walks every tracked object, ~70k in a worker (~13 ms): a
    listener's read of 170 FortiGate lines parsed in a parse worker paid it
    every time (80 µs of the worker's CPU per line instead of ~35). Jobs free
    what they make as they end (no cycles), so the count stays low and only
    garbage that would grow gets collected.
    """
    try:
        return fn(*args)
    finally:
        if gc.get_count()[0] >= COLLECT_AFTER:
            gc.collect()
