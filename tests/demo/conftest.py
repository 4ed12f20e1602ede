"""One generated week shared by the demo tests (about 40,000 lines, well under a second)."""

from __future__ import annotations

import pytest

from seclake.demo import DemoLine, Manifest, manifest, stamped

# Tuesday 2023-11-14 22:13:20 UTC: a fixed end so results never depend on today.
END_MS = 1_700_000_000_000
DAYS = 7


def is_sysmon(d: DemoLine) -> bool:
    """A Sysmon line of the Windows source (seclake/demo/sysmon.py), not a logon in the seclake shape."""
    return d.vendor == "windows" and '"Microsoft-Windows-Sysmon"' in d.line


@pytest.fixture(scope="session")
def week() -> list[tuple[int, DemoLine]]:
    return list(stamped(days=DAYS, end_ms=END_MS))


@pytest.fixture(scope="session")
def week_manifest() -> Manifest:
    return manifest(days=DAYS, end_ms=END_MS)
