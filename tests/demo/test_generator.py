from __future__ import annotations

import hashlib
import itertools
import tracemalloc
from collections import Counter

import pytest

from seclake.demo import DEFAULT_EVENTS_PER_DAY, DemoLine, generate, stamped
from seclake.demo.clock import DAY_MS
from seclake.demo.generator import SYSMON_SHARE

from .conftest import DAYS, END_MS

VENDORS = {"fortigate", "bind", "squid", "sshd", "windows", "suricata", "edr", "netflow", "okta"}


def _digest(lines: object) -> str:
    h = hashlib.sha256()
    for d in lines:  # type: ignore[attr-defined]
        h.update(repr(tuple(d)).encode())
        h.update(b"\n")
    return h.hexdigest()


def test_same_arguments_give_byte_identical_output() -> None:
    a = _digest(generate(days=3, end_ms=END_MS, events_per_day=4000, seed=11))
    b = _digest(generate(days=3, end_ms=END_MS, events_per_day=4000, seed=11))
    assert a == b


def test_seed_and_end_change_the_output() -> None:
    base = _digest(generate(days=2, end_ms=END_MS, events_per_day=2000))
    assert _digest(generate(days=2, end_ms=END_MS, events_per_day=2000, seed=8)) != base
    assert _digest(generate(days=2, end_ms=END_MS + 1000, events_per_day=2000)) != base


def test_lines_are_demo_lines_of_every_vendor_and_customer(week: list[tuple[int, DemoLine]]) -> None:
    vendors = Counter(d.vendor for _, d in week)
    assert set(vendors) == VENDORS
    assert {d.customer for _, d in week} == {"acme", "globex", "initech"}
    for _, d in itertools.islice(week, 2000):
        assert isinstance(d, DemoLine)
        assert d.dataset == ("flow" if d.vendor == "netflow" else "event")
        assert d.line and "\n" not in d.line
    # Firewalls and flows dominate, IDS alerts are rare.
    assert vendors["fortigate"] > vendors["suricata"] * 4


def test_customers_are_skewed_not_uniform(week: list[tuple[int, DemoLine]]) -> None:
    c = Counter(d.customer for _, d in week)
    assert c["acme"] > c["globex"] > c["initech"]


def test_output_is_in_global_time_order_inside_the_window(week: list[tuple[int, DemoLine]]) -> None:
    ts = [t for t, _ in week]
    assert ts == sorted(ts)
    assert ts[0] >= END_MS - DAYS * DAY_MS
    assert ts[-1] < END_MS


def test_generate_is_stamped_without_the_stamps(week: list[tuple[int, DemoLine]]) -> None:
    assert list(itertools.islice(generate(days=DAYS, end_ms=END_MS), 500)) == [d for _, d in week[:500]]


def test_default_week_is_a_quick_first_import(week: list[tuple[int, DemoLine]]) -> None:
    assert 20_000 <= len(week) <= 50_000
    assert DEFAULT_EVENTS_PER_DAY * DAYS <= len(week) <= DEFAULT_EVENTS_PER_DAY * DAYS * 1.1


def test_size_scales_with_days_and_rate() -> None:
    def count(**kw: int) -> int:
        return sum(1 for _ in generate(end_ms=END_MS, **kw))

    one_week = count(days=7, events_per_day=3000)
    assert count(days=14, events_per_day=3000) == pytest.approx(2 * one_week, rel=0.05)
    assert count(days=7, events_per_day=6000) == pytest.approx(2 * one_week, rel=0.05)
    # Whole weeks average out the weekday rhythm: the rate is per average day, and the
    # workstations' Sysmon lines come on top of it.
    episodes = count(days=7, events_per_day=0)
    assert one_week - episodes == pytest.approx(7 * 3000 * (1 + SYSMON_SHARE), rel=0.02)
    assert count(days=7, events_per_day=3000, sysmon=False) - episodes == pytest.approx(7 * 3000, rel=0.02)


def test_day_night_rhythm(week: list[tuple[int, DemoLine]]) -> None:
    by_hour = Counter((t // 3_600_000) % 24 for t, _ in week)
    assert by_hour[14] > 3 * by_hour[3]


def test_without_flows_no_netflow_and_same_volume(week: list[tuple[int, DemoLine]]) -> None:
    lines = list(generate(days=DAYS, end_ms=END_MS, flows=False))
    assert not any(d.vendor == "netflow" or d.dataset == "flow" for d in lines)
    assert len(lines) == pytest.approx(len(week), rel=0.05)


def test_invalid_sizes_are_refused() -> None:
    with pytest.raises(ValueError):
        generate(days=0, end_ms=END_MS)
    with pytest.raises(ValueError):
        generate(days=1, end_ms=END_MS, events_per_day=-1)


@pytest.mark.slow  # tracemalloc makes every allocation slow: about 4 s
def test_memory_stays_flat_over_a_hundred_thousand_lines() -> None:
    # Warm the cached vocabulary first: it is built once per process, not per run.
    next(generate(days=1, end_ms=END_MS))
    tracemalloc.start()
    try:
        n = 0
        for _ in generate(days=2, end_ms=END_MS, events_per_day=60_000):
            n += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n >= 100_000
    # A generator that kept its lines (~200 bytes each) would pass 20 MB; one
    # that kept 20 bytes a line, 2 MB. Half a million lines took 31 s of the suite
    # to show the same.
    assert peak < 2 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
