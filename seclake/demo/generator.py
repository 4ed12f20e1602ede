"""The demo log generator: a seeded, streaming mix of realistic security logs.

Lines come out in global time order (by the timestamp each line carries),
background traffic and scenario episodes merged. Nothing is held beyond one
minute of traffic, so memory stays flat however many days are asked for.
"""

from __future__ import annotations

import random
from bisect import bisect
from collections.abc import Iterator
from itertools import accumulate
from operator import itemgetter

from seclake.demo import scenario
from seclake.demo.auth import Sshd, Windows
from seclake.demo.clock import MINUTE_MS, Minute, rhythm
from seclake.demo.dns import Dns
from seclake.demo.edr import Edr
from seclake.demo.firewall import Firewall
from seclake.demo.flow import Flow
from seclake.demo.ids import Ids
from seclake.demo.line import DemoLine
from seclake.demo.okta import Okta
from seclake.demo.proxy import Proxy
from seclake.demo.sysmon import Sysmon
from seclake.demo.vocabulary import world

# 5,000 background lines a day: `seclake demo --days 7` gives about 35,000
# lines, quick to ingest on a first start.
DEFAULT_EVENTS_PER_DAY = 5_000

# Share of background lines per source. Firewalls and flows dominate real
# pipelines; detections (IDS) are rare.
_MIX = (("fortigate", 0.27), ("netflow", 0.24), ("bind", 0.14), ("squid", 0.12),
        ("windows", 0.07), ("edr", 0.06), ("okta", 0.04), ("sshd", 0.03), ("suricata", 0.03))

# Sysmon lines of the Windows source (seclake/demo/sysmon.py), as a share of the background lines,
# on top of them: they come from a random stream of their own, so every other line stays what it
# was (the same arguments with ``sysmon=False`` give exactly the lines without them).
SYSMON_SHARE = 0.05


def generate(*, days: int, end_ms: int, events_per_day: int = DEFAULT_EVENTS_PER_DAY, seed: int = 7,
             flows: bool = True, sysmon: bool = True) -> Iterator[DemoLine]:
    """Demo log lines with timestamps in ``[end_ms - days * 24 h, end_ms)``, in time order.

    ``events_per_day`` is the average number of background lines per day
    (weekdays and office hours get more, nights and weekends fewer); the
    scenario episodes (about 900 lines) come on top, and so do the Windows
    workstations' Sysmon lines (``SYSMON_SHARE`` of the background; none with
    ``sysmon=False``, the other lines unchanged). With ``flows=False`` no
    netflow lines are made and the other sources fill the same volume.
    Same arguments, same output, byte for byte.
    """
    # map/itemgetter rather than a generator: no Python frame per line.
    return map(itemgetter(1), stamped(days=days, end_ms=end_ms, events_per_day=events_per_day,
                                      seed=seed, flows=flows, sysmon=sysmon))


def stamped(*, days: int, end_ms: int, events_per_day: int = DEFAULT_EVENTS_PER_DAY, seed: int = 7,
            flows: bool = True, sysmon: bool = True) -> Iterator[tuple[int, DemoLine]]:
    """Like ``generate`` but yields ``(timestamp_ms, line)`` pairs."""
    # Checked here, eagerly: a generator body would only complain on first use.
    if days < 1:
        raise ValueError("days must be at least 1")
    if events_per_day < 0:
        raise ValueError("events_per_day must not be negative")
    return _stamped(days, end_ms, events_per_day, seed, flows, sysmon)


def _stamped(days: int, end_ms: int, events_per_day: int, seed: int,
             flows: bool, sysmon: bool) -> Iterator[tuple[int, DemoLine]]:
    w = world()
    kinds = {"fortigate": Firewall, "netflow": Flow, "bind": Dns, "squid": Proxy, "windows": Windows,
             "edr": Edr, "okta": Okta, "sshd": Sshd, "suricata": Ids}
    mix = [(name, share) for name, share in _MIX if flows or name != "netflow"]
    sources = [kinds[name](w) for name, _ in mix]
    # One draw picks source and tenant together: (vendor, dataset, line maker, tenant).
    picks = [(s.vendor, s.dataset, s.line, t) for s in sources for t in w.tenants]
    weights = [share * t.weight for _, share in mix for t in w.tenants]
    pick_cum = list(accumulate(weights))
    pick_cum[-1] = float("inf")
    pick_total = sum(weights)

    _, episodes = scenario.build(days=days, end_ms=end_ms, flows=flows)
    episodes.append((end_ms + 1, None))  # type: ignore[arg-type]  # sentinel: never due
    ei = 0
    next_episode = episodes[0][0]

    rng = random.Random(seed)
    rnd = rng.random
    # The Sysmon lines' own stream: drawing them never moves ``rng``.
    srnd = random.Random(f"sysmon-{seed}").random
    sys_make = Sysmon(w).line
    sys_tenants = list(w.tenants)
    sys_cum = list(accumulate(t.weight for t in sys_tenants))
    sys_cum[-1] = float("inf")
    sys_total = sum(t.weight for t in sys_tenants)
    sys_per_ms = events_per_day / 86_400_000 * SYSMON_SHARE if sysmon else 0.0
    sys_carry = 0.0
    never = end_ms + 1
    start_ms = end_ms - days * 86_400_000
    per_ms = events_per_day / 86_400_000
    carry = 0.0
    for minute_ms in range(start_ms - start_ms % MINUTE_MS, end_ms, MINUTE_MS):
        lo = max(minute_ms, start_ms)
        hi = min(minute_ms + MINUTE_MS, end_ms)
        span = hi - lo
        # Mean-preserving jitter so per-minute counts are not a smooth curve.
        carry += per_ms * span * rhythm(minute_ms) * (0.6 + 0.8 * rnd())
        n = int(carry)
        carry -= n
        sys_n = 0
        if sys_per_ms:
            sys_carry += sys_per_ms * span * rhythm(minute_ms) * (0.6 + 0.8 * srnd())
            sys_n = int(sys_carry)
            sys_carry -= sys_n
        if not n and not sys_n:
            continue
        m = Minute(minute_ms)
        # This minute's Sysmon lines go between the others by time (after those of the same ms).
        sys_ts = sorted([lo + int(srnd() * span) for _ in range(sys_n)]) if sys_n else []
        sys_ts.append(never)
        si = 0
        next_sys = sys_ts[0]
        for ts in sorted([lo + int(rnd() * span) for _ in range(n)]) + [never]:
            while next_sys < ts:
                while next_episode <= next_sys:
                    yield episodes[ei]
                    ei += 1
                    next_episode = episodes[ei][0]
                tn = sys_tenants[bisect(sys_cum, srnd() * sys_total)]
                yield next_sys, DemoLine(Sysmon.vendor, Sysmon.dataset, sys_make(next_sys, m, tn, srnd), tn.name)
                si += 1
                next_sys = sys_ts[si]
            if ts == never:
                break
            while next_episode <= ts:
                yield episodes[ei]
                ei += 1
                next_episode = episodes[ei][0]
            vendor, dataset, make, tn = picks[bisect(pick_cum, rnd() * pick_total)]
            yield ts, DemoLine(vendor, dataset, make(ts, m, tn, rnd), tn.name)
    while ei < len(episodes) - 1:
        yield episodes[ei]
        ei += 1
