"""Correlation state: one group of one correlation rule (Sigma's correlation rules).

A correlation rule (``Rule.correlation``, docs/rules.md) fires on what other
rules matched for one group (the values of its ``groupBy`` fields, per
customer) within its timespan, as Sigma's specification defines:

- ``event_count``: how many matches of the referenced rules;
- ``value_count``: how many distinct values of ``field`` among them;
- ``temporal``: how many of the referenced rules matched (default: all), any order;
- ``temporal_ordered``: every referenced rule matched, in the listed order
  (each match no earlier, in event time, than the previous rule's).

Conditions ``gte``/``gt`` are met the moment a match brings the group there:
the window slides with the newest timestamp among its entries (as threshold
windows do, ``signal.py``), fires, and restarts empty, so a burst fires once
per condition's worth. ``lt``/``lte``/``eq``/``neq`` can only be judged once
the timespan is over: such a group counts in a window opened by its first
match and lasting the timespan, judged when a match of the rule (any group
of the customer) comes at or after its end (``Detector`` keeps the ends in
a heap); a window that never sees a later match is never judged.

Like a threshold window, a group's state is its entries only (an empty one
equals a new one), it depends only on the matches run in log order
(streaming, a restart's replay and a backfill agree), and it is bounded:
at most ``count + 1`` timestamps or values (``count`` is capped by the
rule), one timestamp per referenced rule for the temporal types.
"""

from __future__ import annotations

import bisect
from typing import Any

from seclake.detect.rule import Correlation

VERSION = 1
# Distinct values are kept cut to this length (as threshold windows keep them).
MAX_VALUE_CHARS = 256
SLIDING = ("gte", "gt")


def met(op: str, have: int, count: int) -> bool:
    if op == "gte":
        return have >= count
    if op == "gt":
        return have > count
    if op == "lte":
        return have <= count
    if op == "lt":
        return have < count
    if op == "eq":
        return have == count
    return have != count  # neq


class Group:
    """The state of one (correlation rule, customer, group)."""

    def __init__(self, correlation: Correlation):
        self.c = correlation
        # event_count: sorted timestamps; value_count: value -> last timestamp;
        # temporal: rule index -> last timestamp; temporal_ordered: index -> (start, end)
        # of the latest-starting chain of rules 0..index matched in order.
        self._times: list[int] = []
        self._values: dict[str, int] = {}
        self._chain: dict[int, tuple[int, int]] = {}
        # Windows judged at their end (lt, lte, eq, neq): when the window opened.
        self.start: int | None = None
        self.count = 0  # event_count's matches in that window
        self.last_seq = 0  # the log sequence of the newest match (a judged window's eventId)

    # -- observing ------------------------------------------------------------

    @property
    def sliding(self) -> bool:
        return self.c.op in SLIDING or self.c.type in ("temporal", "temporal_ordered")

    def end(self) -> int | None:
        """When a judged-at-end window closes (None: sliding, or empty)."""
        return None if self.sliding or self.start is None else self.start + self.c.timespan_ms

    def observe(self, ts: int, index: int, value: str | None, seq: int) -> tuple[int, int] | None:
        """One match of referenced rule ``index`` at ``ts``; ``value``: value_count's field.

        Returns (what was counted, sequence of the match that fired) when the
        condition is met: for a sliding condition by this match, for one
        judged at the end by the window this match closed (the match then
        opens the next window).
        """
        c = self.c
        if c.type == "value_count" and value is None:
            return None  # Sigma counts the values present
        if not self.sliding:
            fired = None
            end = self.end()
            if end is not None and ts >= end:
                fired = self.close()
            if self.start is None:
                self.start = ts
            self.count += 1
            if c.type == "value_count" and len(self._values) <= c.count:  # more than count is all it needs
                self._values[str(value)[:MAX_VALUE_CHARS]] = ts
            self.last_seq = seq
            return fired
        self.last_seq = seq
        if c.type == "event_count":
            have = self._slide_times(ts)
        elif c.type == "value_count":
            have = self._slide_values(ts, str(value)[:MAX_VALUE_CHARS])
        elif c.type == "temporal":
            have = self._temporal(ts, index)
        else:
            have = self._ordered(ts, index)
        if have is None or not met(c.op, have, c.count):
            return None
        self._times, self._values, self._chain = [], {}, {}
        return have, seq

    def close(self) -> tuple[int, int] | None:
        """Judge the window that is over; empty it. (what was counted, sequence) when the condition is met."""
        c = self.c
        have = self.count if c.type == "event_count" else len(self._values)
        fired = (have, self.last_seq) if self.start is not None and met(c.op, have, c.count) else None
        self.start, self.count, self._values = None, 0, {}
        return fired

    def _cutoff(self, ts: int, newest: int | None) -> int:
        return (ts if newest is None else max(ts, newest)) - self.c.timespan_ms

    def _slide_times(self, ts: int) -> int | None:
        times = self._times
        cutoff = self._cutoff(ts, times[-1] if times else None)
        if ts < cutoff:
            return None  # late: its window has passed
        bisect.insort(times, ts)
        del times[: bisect.bisect_left(times, cutoff)]
        return len(times)

    def _slide_values(self, ts: int, value: str) -> int | None:
        last = self._values
        cutoff = self._cutoff(ts, max(last.values()) if last else None)
        if ts < cutoff:
            return None
        last[value] = max(ts, last.get(value, ts))
        for v in [v for v, at in last.items() if at < cutoff]:
            del last[v]
        return len(last)

    def _temporal(self, ts: int, index: int) -> int | None:
        last = self._values  # keyed by the rule's index as text: one JSON shape
        cutoff = self._cutoff(ts, max(last.values()) if last else None)
        if ts < cutoff:
            return None
        last[str(index)] = max(ts, last.get(str(index), ts))
        for v in [v for v, at in last.items() if at < cutoff]:
            del last[v]
        return len(last)

    def _ordered(self, ts: int, index: int) -> int | None:
        chain = self._chain
        span = self.c.timespan_ms
        if index == 0:
            candidate: tuple[int, int] | None = (ts, ts)
        else:
            before = chain.get(index - 1)
            candidate = (before[0], ts) if before is not None and before[1] <= ts and ts - before[0] <= span else None
        if candidate is not None:
            have = chain.get(index)
            # The chain that started latest leaves the most time for the next rule.
            if have is None or (candidate[0], -candidate[1]) > (have[0], -have[1]):
                chain[index] = candidate
        newest = max(end for _s, end in chain.values()) if chain else ts
        for i in [i for i, (start, _e) in chain.items() if start < max(newest, ts) - span]:
            del chain[i]
        done = len(self.c.rules) - 1
        return len(self.c.rules) if done in chain else 0

    # -- state ----------------------------------------------------------------

    def is_empty(self) -> bool:
        return not (self._times or self._values or self._chain or self.start is not None)

    def newest(self) -> int | None:
        """The time of the newest entry (None: empty): which groups an eviction drops first."""
        times = [*self._times[-1:], *self._values.values(), *(end for _s, end in self._chain.values())]
        if self.start is not None:
            times.append(self.start)
        return max(times, default=None)

    def to_json(self) -> dict[str, Any]:
        c = self.c
        return {"v": VERSION, "type": c.type, "op": c.op, "count": c.count, "timespanMs": c.timespan_ms,
                "rules": list(c.rules), "times": list(self._times),
                "values": sorted([v, ts] for v, ts in self._values.items()),
                "chain": sorted([i, s, e] for i, (s, e) in self._chain.items()),
                "start": self.start, "n": self.count, "seq": self.last_seq}

    @classmethod
    def from_json(cls, correlation: Correlation, data: Any) -> Group:
        """The group saved by ``to_json``; a new one when it belongs to another
        version of the rule (its definition changed) or is unreadable."""
        g = cls(correlation)
        c = correlation
        if not isinstance(data, dict) or data.get("v") != VERSION or (
            data.get("type"), data.get("op"), data.get("count"), data.get("timespanMs"), data.get("rules"),
        ) != (c.type, c.op, c.count, c.timespan_ms, list(c.rules)):
            return g
        try:
            times = sorted(int(t) for t in data.get("times") or [] if _is_int(t))
            g._times = times[-(c.count + 1):]
            values = {str(v)[:MAX_VALUE_CHARS]: int(ts) for v, ts in data.get("values") or [] if _is_int(ts)}
            g._values = dict(sorted(values.items(), key=lambda kv: (kv[1], kv[0]))[-(max(c.count, len(c.rules)) + 1):])
            g._chain = {int(i): (int(s), int(e)) for i, s, e in data.get("chain") or []
                        if _is_int(i) and 0 <= i < len(c.rules) and _is_int(s) and _is_int(e)}
            start, n, seq = data.get("start"), data.get("n"), data.get("seq")
            g.start = int(start) if _is_int(start) and not g.sliding else None
            g.count = int(n) if _is_int(n) and g.start is not None else 0
            g.last_seq = int(seq) if _is_int(seq) else 0
        except (TypeError, ValueError):
            return cls(correlation)
        return g


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)
