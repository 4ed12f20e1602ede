"""The open connections of one TCP or TLS listener, by source, and which one
is closed to make room for a new one.

A listener never refuses a connection: the kernel has accepted it before
seclake sees it, so a refused sender's first messages would be lost without
a word (issue 39: a flood of 1,500 idle connections kept a real sender's
message out for ten minutes). Instead, when a source address already holds
``max_per_address`` connections, its own oldest one is closed; when the
listener holds ``max_connections``, the oldest one of the source holding
the most is. Oldest means the longest since its last complete frame (or its
opening), and a connection that never sent a complete frame goes before
one that did: a flood costs the flooder its own connections first, and a
sender that is talking keeps its connection.

A closed connection loses nothing it sent: the listener stores its
unfinished frame as it does at an end of stream (``Listeners._connection``).

Sources are addresses, and IPv6 addresses by their /64 (one host is
usually given a whole /64, so counting its addresses one by one would not
bound it).
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def source_of(address: str) -> str:
    """The source a connection counts toward: its IPv4 address, or its IPv6 /64."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if ip.version == 6:
        if ip.ipv4_mapped is not None:  # a dual-stack socket's IPv4 sender
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


@dataclass(eq=False)
class Connection:
    """One open connection: its source, and when it last completed a frame."""

    address: str
    close: Callable[[], None]
    source: str = ""
    frames: int = 0
    progress: float = field(default_factory=time.monotonic)  # last complete frame, or the opening
    closed_for: str | None = None  # why the table closed it, if it did

    def __post_init__(self) -> None:
        self.source = self.source or source_of(self.address)


class _Source:
    """One source's connections, each list oldest first: silent (no frame yet), then talking."""

    __slots__ = ("silent", "talking")

    def __init__(self) -> None:
        self.silent: dict[Connection, None] = {}  # dicts keep insertion order, and remove in O(1)
        self.talking: dict[Connection, None] = {}

    def __len__(self) -> int:
        return len(self.silent) + len(self.talking)

    def oldest(self) -> Connection:
        return next(iter(self.silent or self.talking))


class ConnectionTable:
    """Connections of one listener (touched on the listeners' event loop only)."""

    def __init__(self, max_connections: int, max_per_address: int):
        self.max_connections = max_connections
        self.max_per_address = max_per_address
        self._sources: dict[str, _Source] = {}
        self.count = 0

    def admit(self, conn: Connection) -> Connection | None:
        """Add ``conn``; returns the connection closed to make room (its
        ``closed_for`` says which cap), or None. The caller counts it."""
        victim = None
        mine = self._sources.get(conn.source)
        if mine is not None and len(mine) >= self.max_per_address:
            victim = mine.oldest()
            victim.closed_for = "evicted_per_address"
        elif self.count >= self.max_connections:
            # The source with silent connections and the most of them pays first.
            fullest = max(self._sources.values(), key=lambda s: (bool(s.silent), len(s)))
            victim = fullest.oldest()
            victim.closed_for = "evicted_listener_full"
        if victim is not None:
            self.remove(victim)
            victim.close()
        self._sources.setdefault(conn.source, _Source()).silent[conn] = None
        self.count += 1
        return victim

    def progressed(self, conn: Connection, frames: int) -> None:
        """``conn`` completed ``frames`` frames: it is now the youngest of its source."""
        conn.frames += frames
        conn.progress = time.monotonic()
        source = self._sources.get(conn.source)
        if source is None or conn.closed_for is not None:
            return
        source.silent.pop(conn, None)
        source.talking.pop(conn, None)
        source.talking[conn] = None

    def remove(self, conn: Connection) -> None:
        """Forget ``conn`` (closed by either side); removing twice is harmless."""
        source = self._sources.get(conn.source)
        if source is None:
            return
        if conn in source.silent:
            del source.silent[conn]
        elif conn in source.talking:
            del source.talking[conn]
        else:
            return
        self.count -= 1
        if not len(source):
            del self._sources[conn.source]

    def per_source(self) -> dict[str, int]:
        return {name: len(s) for name, s in self._sources.items()}
