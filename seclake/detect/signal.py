"""Threshold signals: one sliding window per rule and key.

A threshold rule fires when, within ``window_ms``, the count of records /
the sum of a field / the number of distinct values of a field reaches
``value``. ``Window.observe`` takes one record's contribution and returns the
aggregate when it reaches the threshold; the window then restarts empty, so
a long burst fires once for every ``value`` worth of it, not on every record
after the first firing.

Records may arrive slightly out of timestamp order (several senders, clock
skew). The window therefore slides with the newest timestamp among its
entries, not with the last one observed: an entry leaves once it is older
than ``newest - window_ms``, and a late record older than that is ignored.

A window's state is its entries and nothing else, so an empty window is
exactly a new one: the detector may drop empty windows (or restore them
from JSON after a restart) without changing what fires later. Same
observations in the same order, same firings: streaming and backfill agree.

State is bounded: count keeps at most ``value`` timestamps and distinct at
most ``value`` values (it fires, and empties, on reaching it; ``value`` is
capped by the rule), sum at most ``MAX_SUM_ENTRIES`` (past that the two
oldest entries are merged into the later one: the amount is kept and lives
slightly longer, so a sum errs towards firing, never towards missing).
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from seclake.detect.rule import Threshold

VERSION = 1
MAX_SUM_ENTRIES = 1000
# Distinct values are kept as keywords cut to this length.
MAX_VALUE_CHARS = 256


class Window:
    def __init__(self, threshold: Threshold):
        self.threshold = threshold
        # count: sorted timestamps; sum: sorted (ts, amount); distinct: value -> last ts
        self._times: list[int] = []
        self._amounts: list[tuple[int, float]] = []
        self._last: dict[str, int] = {}
        self._last_min: int | None = None  # a lower bound of the times in _last

    # -- observing ----------------------------------------------------------

    def observe(self, ts_ms: int, value: Any = 1) -> float | None:
        """Add one record at ``ts_ms``; the aggregate when it reaches the threshold, else None.

        ``value`` is ignored by count; for sum it is the number to add and
        for distinct the value to count. None (the record lacks the field)
        adds nothing.
        """
        t = self.threshold
        if isinstance(ts_ms, bool) or not isinstance(ts_ms, int):
            return None
        if t.function == "count":
            return self._count(ts_ms)
        if value is None:
            return None
        if t.function == "sum":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return None
            return self._sum(ts_ms, float(value))
        return self._distinct(ts_ms, str(value)[:MAX_VALUE_CHARS])

    def _cutoff(self, ts: int, newest_entry: int | None) -> int:
        newest = ts if newest_entry is None else max(ts, newest_entry)
        return newest - self.threshold.window_ms

    def _count(self, ts: int) -> float | None:
        times = self._times
        cutoff = self._cutoff(ts, times[-1] if times else None)
        if ts < cutoff:
            return None  # late: its window has passed
        bisect.insort(times, ts)
        drop = bisect.bisect_left(times, cutoff)
        if drop:
            del times[:drop]
        if len(times) >= self.threshold.value:
            n = len(times)
            times.clear()
            return float(n)
        return None

    def _sum(self, ts: int, amount: float) -> float | None:
        entries = self._amounts
        cutoff = self._cutoff(ts, entries[-1][0] if entries else None)
        if ts < cutoff:
            return None
        bisect.insort(entries, (ts, amount))
        drop = bisect.bisect_left(entries, (cutoff, -math.inf))
        if drop:
            del entries[:drop]
        if len(entries) > MAX_SUM_ENTRIES:
            (_, a0), (t1, a1) = entries[0], entries[1]
            entries[0:2] = [(t1, a0 + a1)]
        # fsum is exact then rounded once: the total depends on the entries
        # only, never on the order they came in (restored windows agree).
        total = math.fsum(a for _, a in entries)
        if total >= self.threshold.value:
            entries.clear()
            return total
        return None

    def _distinct(self, ts: int, value: str) -> float | None:
        last = self._last
        newest = max(last.values()) if last else None
        cutoff = self._cutoff(ts, newest)
        if ts < cutoff:
            return None
        seen = last.get(value)
        last[value] = ts if seen is None else max(seen, ts)
        if self._last_min is None or ts < self._last_min:
            self._last_min = ts
        if self._last_min < cutoff:
            for v in [v for v, at in last.items() if at < cutoff]:
                del last[v]
            self._last_min = min(last.values()) if last else None
        if len(last) >= self.threshold.value:
            n = len(last)
            last.clear()
            self._last_min = None
            return float(n)
        return None

    # -- state --------------------------------------------------------------

    def is_empty(self) -> bool:
        return not (self._times or self._amounts or self._last)

    def newest(self) -> int | None:
        """The time of the newest entry (None: empty)."""
        return max([*self._times[-1:], *(e[0] for e in self._amounts[-1:]), *self._last.values()], default=None)

    def to_json(self) -> dict[str, Any]:
        t = self.threshold
        if t.function == "count":
            entries: list[Any] = list(self._times)
        elif t.function == "sum":
            entries = [[ts, a] for ts, a in self._amounts]
        else:
            entries = [[v, ts] for v, ts in sorted(self._last.items(), key=lambda kv: (kv[1], kv[0]))]
        return {"v": VERSION, "function": t.function, "windowMs": t.window_ms, "value": t.value, "entries": entries}

    @classmethod
    def from_json(cls, threshold: Threshold, data: Any) -> Window:
        """The window saved by ``to_json``; a new one when the saved state does
        not belong to this threshold (the rule changed) or is unreadable."""
        w = cls(threshold)
        if not isinstance(data, dict) or data.get("v") != VERSION:
            return w
        if (data.get("function"), data.get("windowMs"), data.get("value")) != (
            threshold.function, threshold.window_ms, threshold.value,
        ):
            return w
        entries = data.get("entries")
        if not isinstance(entries, list):
            return w
        try:
            if threshold.function == "count":
                times = sorted(int(x) for x in entries if _is_int(x))
                w._times = times[-max(int(threshold.value) - 1, 0):] if times else []
            elif threshold.function == "sum":
                pairs = sorted(
                    (int(e[0]), float(e[1])) for e in entries
                    if isinstance(e, list) and len(e) == 2 and _is_int(e[0]) and _is_number(e[1])
                )
                w._amounts = pairs[-MAX_SUM_ENTRIES:]
            else:
                last: dict[str, int] = {}
                for e in entries:
                    if isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) and _is_int(e[1]):
                        last[e[0][:MAX_VALUE_CHARS]] = max(int(e[1]), last.get(e[0][:MAX_VALUE_CHARS], e[1]))
                keep = sorted(last.items(), key=lambda kv: (kv[1], kv[0]))[-max(int(threshold.value) - 1, 0):]
                w._last = dict(keep) if keep and threshold.value > 1 else {}
                w._last_min = min(w._last.values()) if w._last else None
        except (TypeError, ValueError, OverflowError):
            return cls(threshold)
        if threshold.function == "count" and threshold.value <= 1:
            w._times = []
        return w


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
