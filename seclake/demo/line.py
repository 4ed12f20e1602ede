"""One generated log line and where it belongs."""

from __future__ import annotations

from typing import Literal, NamedTuple


class DemoLine(NamedTuple):
    # A NamedTuple rather than a frozen dataclass: it is built once per line
    # and a tuple is several times cheaper to construct.
    vendor: str  # fortigate, bind, squid, sshd, windows, suricata, edr, netflow
    dataset: Literal["event", "flow"]
    line: str  # the raw log line, no trailing newline
    customer: str  # acme, globex or initech
