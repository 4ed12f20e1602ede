"""The C allocator of the processes that build and merge splits: jemalloc where installed.

A split is built by two threads: the Python thread that makes each record's
tantivy document, and tantivy's indexing thread, which frees what the first
allocated. glibc's allocator takes the owning arena's lock for each such
free: perf showed ~6% of a build in futex waits and wake-ups on those locks,
and more in the allocator itself. jemalloc frees into per-thread caches.
Measured on this project's demo records (2 cores): split building 84 -> 71
µs of CPU per record; tantivy alone with two writer threads (the bench's
floor) 19k -> 33k records/s; the whole HTTP ingest 1.08x events/s.

A process's allocator is chosen when it starts (``LD_PRELOAD``), so the
command line names jemalloc in its own environment before it starts any
thread or process (``seclake.cli.main``), and every process it spawns from
then on (the build and merge workers) uses it. The command's own process
keeps the system allocator, for which its memory settings are made
(``memory.py``). Debian and Ubuntu ship jemalloc as ``libjemalloc2``;
without it, or with ``SECLAKE_ALLOCATOR=system``, nothing changes.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import MutableMapping
from pathlib import Path

NAME = "libjemalloc.so.2"
# Where distributions put it; looked up by path, not with ctypes.util
# (which runs ldconfig or a compiler: tens of milliseconds per command).
_DIRS = tuple(
    f"{root}/{sub}".rstrip("/") for root in ("/usr/lib", "/usr/local/lib", "/lib")
    for sub in (sysconfig.get_config_var("MULTIARCH") or "", "")
) + ("/usr/lib64",)


def library() -> str | None:
    """The path of an installed jemalloc, or None."""
    for directory in _DIRS:
        path = Path(directory) / NAME
        if path.is_file():
            return str(path)
    return None


CHOICES = ("jemalloc", "system")


def setting(environ: MutableMapping[str, str] = os.environ) -> str:
    """``SECLAKE_ALLOCATOR`` as given (lowercased), ``jemalloc`` when unset."""
    return environ.get("SECLAKE_ALLOCATOR", "jemalloc").strip().lower() or "jemalloc"


def turned_off(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Whether the operator keeps the system allocator (``SECLAKE_ALLOCATOR=system``)."""
    return setting(environ) == "system"


def preloaded(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Whether processes started with ``environ`` preload jemalloc."""
    return NAME in environ.get("LD_PRELOAD", "")


def for_children(environ: MutableMapping[str, str] = os.environ) -> str | None:
    """Make the processes started from now on preload jemalloc; its path, or
    None when it is not installed or ``SECLAKE_ALLOCATOR`` is ``system``.

    Call it before any thread starts: changing the environment while another
    thread reads it is unsafe in C.
    """
    if turned_off(environ):
        return None
    path = library()
    if path is None:
        return None
    if not preloaded(environ):
        preload = environ.get("LD_PRELOAD", "")
        environ["LD_PRELOAD"] = f"{preload}:{path}" if preload else path
    return path


def in_use(pid: int | str = "self") -> bool:
    """Whether process ``pid`` runs with jemalloc loaded (its memory map names it)."""
    try:
        return NAME in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
