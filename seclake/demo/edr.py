"""EDR process-start events as flat JSON lines (epoch-millisecond @timestamp)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant, World, sha256_of

VENDOR = "edr"
DATASET = "event"


def format_line(ts: int, customer: str, *, host: str, user: str, process: str, cmdline: str,
                parent: str | None, pid: int, ppid: int | None, sha256: str | None, signed: bool,
                integrity: str, sensor: str) -> str:
    rec: dict[str, Any] = {"@timestamp": ts, "@customer": customer, "event_type": "process_start",
                           "host": host, "user": user, "process": process, "cmdline": cmdline}
    if parent is not None:
        rec["parent"] = parent
        rec["ppid"] = ppid
    rec["pid"] = pid
    if sha256 is not None:  # the sensor hashes asynchronously and sometimes gives up
        rec["sha256"] = sha256
    rec["signed"] = signed
    rec["integrity_level"] = integrity
    rec["sensor"] = sensor
    return orjson.dumps(rec).decode()


class Edr(Source):
    vendor = VENDOR
    dataset = DATASET

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self._hash = {p[0]: sha256_of(p[0]) for p in world.processes.values}

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        image, parent, cmdline, signed = self.w.processes.draw(rnd)
        i = tn.ws.draw(rnd)
        system = parent.endswith(("services.exe", "svchost.exe"))
        user = "NT AUTHORITY\\SYSTEM" if system else f"{tn.netbios}\\{tn.owners[i]}"
        has_parent = rnd() < 0.97
        return format_line(ts, tn.name, host=tn.workstations[i], user=user, process=image,
                           cmdline=cmdline, parent=parent if has_parent else None,
                           pid=4 * int(1 + rnd() * 8000), ppid=4 * int(1 + rnd() * 2000) if has_parent else None,
                           sha256=self._hash[image] if rnd() < 0.95 else None, signed=signed,
                           integrity="System" if system else "Medium", sensor=tn.edr_sensor)
