"""The benchmark's data: the seeded demo generator, written as import batches.

The demo generator (seclake.demo) already makes what the benchmark needs:
firewall, DNS, proxy, auth (sshd, Windows), the workstations' Sysmon (as
Winlogbeat and NXLog ship it: what SigmaHQ's Windows rules read), IDS, EDR
and flows from three tenants, 4-20 ``@fields`` keys per source, Zipf-skewed hosts, users, IPs and
ports, numbers stored as strings (FortiGate and CEF counters), sources that
leave fields out (denied sessions carry no byte counters, DNS failures no
answers), and rare needle episodes placed at fixed fractions of the window.
It is scaled by ``events_per_day``; the end of the window is fixed so every
run makes the same bytes.

Lines are grouped per (vendor, dataset, customer) into batch files of a few
thousand lines, exactly the unit one ``POST /api/import/{vendor}`` request
or one ``seclake import`` file carries.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from seclake.demo import generate
from seclake.demo import manifest as demo_manifest

# 2026-11-01T00:00:00Z: a fixed end, so the data (and every count) is the same on every run.
END_MS = 1_793_491_200_000
DAY_MS = 86_400_000
BATCH_LINES = 4000
SEED = 7


@dataclass(frozen=True)
class Batch:
    vendor: str
    dataset: str
    customer: str
    path: str
    lines: int


@dataclass
class DataSet:
    directory: str
    events: int  # background lines asked for (events and flows)
    days: int
    seed: int
    end_ms: int
    batches: list[Batch] = field(default_factory=list)
    lines: int = 0  # lines written, episodes included
    by_dataset: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    seconds: float = 0.0

    @property
    def start_ms(self) -> int:
        return self.end_ms - self.days * DAY_MS

    def groups(self) -> dict[tuple[str, str, str], list[Batch]]:
        out: dict[tuple[str, str, str], list[Batch]] = {}
        for b in self.batches:
            out.setdefault((b.vendor, b.dataset, b.customer), []).append(b)
        return out

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("batches")
        d["batch_files"] = len(self.batches)
        return d


def lines(*, events: int, days: int, seed: int = SEED, end_ms: int = END_MS) -> Iterable:
    """The demo lines of a run: ``events`` background lines over ``days`` days, plus the episodes."""
    return generate(days=days, end_ms=end_ms, events_per_day=max(1, round(events / days)), seed=seed)


def write_batches(directory: Path, *, events: int, days: int, seed: int = SEED, end_ms: int = END_MS,
                  batch_lines: int = BATCH_LINES) -> DataSet:
    """Generate the data and write it as batch files under ``directory`` (made afresh)."""
    started = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.log"):
        old.unlink()
    data = DataSet(str(directory), events, days, seed, end_ms)
    groups: dict[tuple[str, str, str], list[str]] = {}

    def flush(key: tuple[str, str, str]) -> None:
        body = groups.pop(key, None)
        if not body:
            return
        vendor, dataset, customer = key
        path = directory / f"b{len(data.batches):06d}.{vendor}.{dataset}.{customer}.log"
        text = ("\n".join(body) + "\n").encode()
        path.write_bytes(text)
        data.bytes += len(text)
        data.batches.append(Batch(vendor, dataset, customer, str(path), len(body)))

    for line in lines(events=events, days=days, seed=seed, end_ms=end_ms):
        key = (line.vendor, line.dataset, line.customer)
        bucket = groups.setdefault(key, [])
        bucket.append(line.line)
        data.lines += 1
        data.by_dataset[line.dataset] = data.by_dataset.get(line.dataset, 0) + 1
        if len(bucket) >= batch_lines:
            flush(key)
    for key in list(groups):
        flush(key)
    data.seconds = time.perf_counter() - started
    (directory / "dataset.json").write_text(json.dumps(data.to_json(), indent=1))
    return data


def needles(*, days: int, end_ms: int = END_MS) -> dict[str, int]:
    """Needle word -> lines holding it (from the scenario manifest; independent of the seed and size)."""
    return dict(demo_manifest(days=days, end_ms=end_ms).needles)
