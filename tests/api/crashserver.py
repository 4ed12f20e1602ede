"""``seclake`` in a process that SIGKILLs itself right after its first keyed log append is fsynced.

What a crash between the write-ahead log's fsync and the reply leaves: the
records and their idempotency key on disk, no reply sent, no key row in the
database. Used by test_durability.py: ``python -m tests.api.crashserver serve ...``.
"""

from __future__ import annotations

import os
import signal

from seclake.storage import wal

_append = wal.WriteAheadLog.append


def _append_then_die(self, items, on_assigned=None, key=None, **more):
    out = _append(self, items, on_assigned=on_assigned, key=key, **more)
    if key is not None:
        os.kill(os.getpid(), signal.SIGKILL)
    return out


wal.WriteAheadLog.append = _append_then_die  # type: ignore[method-assign]

if __name__ == "__main__":
    from seclake.cli import main

    main()
