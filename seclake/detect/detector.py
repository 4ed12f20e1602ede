"""The detector: every ingested record against the enabled rules, in-process.

It runs in the import path under one lock, before the write-ahead log
append, so the behaviors it produces are logged in the same fsynced write as
the records that caused them (no behavior without its record, none twice).
Rules are compiled matchers evaluated on the record itself, never a search
per event. Its state (history, threshold windows, the behavior counter) is
saved every commit interval with the log sequence it is exact for; at start
the records logged since then are run again, state only (see state.py).
Summaries are folded from the saved behaviors in the same transaction.
"""

from __future__ import annotations

import gc
import heapq
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson
from sqlalchemy import delete, insert, select, tuple_

from seclake.db.database import Database
from seclake.detect.behavior import MAX_CUSTOMER, MAX_KEY, customer_of, make_behavior
from seclake.detect.correlation import Group
from seclake.detect.history import CAPACITY as HISTORY_CAPACITY
from seclake.detect.history import History
from seclake.detect.scorelevel import score_level
from seclake.detect.ruleset import SOURCE_DATASETS, RuleSet
from seclake.detect.rule import GROUP_SEPARATOR
from seclake.detect.signal import Window
from seclake.detect.state import DetectorProgress, SignalState
from seclake.record.flatten import values_at
from seclake.record.identity import RecordIds
from seclake.record.value import scalar_text

log = logging.getLogger("seclake.detect")

# Bound parameters per statement stay well under every database's limit.
SAVE_CHUNK = 400
# Threshold windows holding entries, at most: past it the windows whose
# newest entry is oldest are dropped (``_evict``). Without a bound, every
# distinct (rule, customer, key) that left an entry stayed in memory, in the
# table and in every start's restore: a port scan from a million spoofed
# sources kept a million windows. A window is a few hundred bytes.
MAX_WINDOWS = 100_000
# An eviction takes the live windows down to this share of the bound, so
# sorting them is paid once per tenth of it, not on every new key.
EVICT_TO = 0.9


# Rule sets this large are frozen for the garbage collector (Detector.ruleset).
FREEZE_MIN_RULES = 500


class Detector:
    def __init__(
        self, rulebook, db: Database | None, *, bands, summaries=None, ids: Callable[[], RecordIds] | None = None,
        made: Any = None,
    ):
        self.rulebook = rulebook
        # How behaviors name themselves and their record (opaque ids, record/identity.py);
        # a callable because the deployment's key is read after migrations.
        self.ids = ids or (lambda: RecordIds(None))
        # Behaviors made, by rule: a prometheus-client Counter (service/metrics.py), or None.
        self.made = made
        self.db = db
        self.bands = bands
        self.summaries = summaries
        self.lock = threading.RLock()
        self.history = self._new_history()
        # (rule, customer, key): each customer's records count only toward its own windows;
        # a correlation rule's groups (``correlation.Group``) live here too, keyed by their values.
        self.windows: dict[tuple[str, str, str], Window | Group] = {}
        # (correlation rule, customer) -> heap of (end, group) of windows judged at their end.
        self._ends: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self._dirty: set[tuple[str, str]] = set()
        self.sequence = 0  # behaviors made so far: the next one's `sequence`
        self.seq = 0  # the log sequence the in-memory state is exact for
        self.saved_seq = 0  # ... and the saved state
        self._unsaved_behaviors: list[dict[str, Any]] = []
        self._ruleset: RuleSet | None = None
        # A server's detector (service/detection.py) freezes a large rule set's objects for the GC (below).
        self.freeze_rules = False
        self.max_windows = MAX_WINDOWS
        self._live = 0  # windows in self.windows holding entries
        self.windows_evicted = 0  # since start (GET /metrics)

    # -- rules ----------------------------------------------------------

    def ruleset(self) -> RuleSet:
        """The enabled rules as of the rule book's last read (``detect/ruleset.py``), built once per generation."""
        ruleset = self._ruleset
        if ruleset is None or ruleset.version != self.rulebook.version:
            version, rules = self.rulebook.generation()
            ruleset = self._ruleset = RuleSet(rules, version)
            if self.freeze_rules and len(rules) >= FREEZE_MIN_RULES:
                # Every SigmaHQ rule is ~470,000 objects that live as long as their generation: each full
                # collection scanned them all (0.3 s), ~8 µs per ingested line. Frozen, the collector skips
                # them; a generation left behind is still freed by reference counts (it holds no cycles).
                # Collected first so that no garbage waiting for the collector is frozen with them.
                gc.collect()
                gc.freeze()
        return ruleset

    # -- detection ------------------------------------------------------

    def process(self, items: Sequence[tuple[str, dict[str, Any] | None]], first_seq: int,
                matched: tuple[Any, dict[int, list[int]]] | None = None,
                bodies: Sequence[bytes] | None = None) -> list[dict[str, Any]]:
        """Behaviors of records numbered ``first_seq``, ``first_seq + 1``, ... in the log.

        ``matched``: (rule generation, item index -> numbers of its matching
        rules), found elsewhere (a parse worker, ``RuleSet.matching``); used
        only if the rules are still of that generation. A record given as
        None (no rule matched it there) is decoded from ``bodies`` if the
        rules changed since and it must be matched again.
        """
        out: list[dict[str, Any]] = []
        with self.lock:
            # Rules edited elsewhere (another API node, a file edit) apply from the next batch on.
            self.rulebook.refresh()
            ruleset = self.ruleset()
            found = matched[1] if matched is not None and matched[0] == ruleset.version else None
            for i, (dataset, record) in enumerate(items):
                if dataset not in SOURCE_DATASETS:
                    continue
                rules = ruleset.rules(dataset)
                if not rules:
                    continue
                if found is not None:
                    numbers = found.get(i, ())
                else:
                    if record is None:
                        record = orjson.loads(bodies[i])  # type: ignore[index]
                    numbers = ruleset.matching(dataset, record)
                for n in numbers:
                    rule = rules[n][0]
                    if rule.generate:
                        behavior = self._apply(rule, record, first_seq + i)
                        if behavior is not None:
                            out.append(behavior)
                    if ruleset.correlations_of(rule.name):
                        self._correlate(ruleset, rule.name, rule.dataset, record, first_seq + i, out)
        return out

    # -- correlation rules ------------------------------------------------

    def _correlate(self, ruleset: RuleSet, name: str, dataset: str, record: dict[str, Any], seq: int,
                   out: list[dict[str, Any]], depth: int = 0) -> None:
        """Feed a match of rule ``name`` to the correlation rules referring to it; their behaviors to ``out``.

        A correlation that fires is a match of its own name in turn (Sigma's
        correlations of correlations); the rule set refuses cycles, ``depth`` is a second guard.
        """
        ts = record.get("@timestamp")
        ts = ts if isinstance(ts, int) and not isinstance(ts, bool) else 0
        customer = customer_of(record)[:MAX_CUSTOMER]
        for corr in ruleset.correlations_of(name):
            c = corr.correlation
            index = c.rules.index(name)
            values = ruleset.group_values(corr, name, dataset, record)
            if values is None:
                continue  # a group-by field is absent: Sigma counts no such event
            value = None
            if c.type == "value_count":
                value = ruleset.counted_value(corr, name, dataset, record)
            group = GROUP_SEPARATOR.join(values)[:MAX_KEY * 2]
            fired = self._close_ended(corr, customer, ts)
            wkey = (corr.name, customer, group)
            state = self.windows.get(wkey)
            if state is None:
                state = self.windows[wkey] = Group(c)
            was_empty, end = state.is_empty(), state.end()
            got = state.observe(ts, index, value, seq)
            if got is not None:
                fired.append((group, got))
            if state.end() is not None and state.end() != end:
                heapq.heappush(self._ends.setdefault((corr.name, customer), []), (state.end(), group))
            self._live += was_empty - state.is_empty()
            self._dirty.add(wkey)
            if self._live > self.max_windows:
                self._evict()
            for fired_group, (have, at_seq) in fired:
                behavior = self._correlated(corr, customer, fired_group, ts, have, at_seq, record)
                if behavior is not None:
                    out.append(behavior)
                if depth < 8 and ruleset.correlations_of(corr.name):
                    # The next correlation reads its group from the fields of this one's group.
                    self._correlate(ruleset, corr.name, dataset, _group_record(corr, fired_group, record), seq,
                                    out, depth + 1)

    def _close_ended(self, corr, customer: str, ts: int) -> list[tuple[str, tuple[int, int]]]:
        """Judge the windows of ``corr`` (judged at their end) that ``ts`` is at or past the end of."""
        ends = self._ends.get((corr.name, customer))
        fired: list[tuple[str, tuple[int, int]]] = []
        while ends and ends[0][0] <= ts:
            end, group = heapq.heappop(ends)
            state = self.windows.get((corr.name, customer, group))
            if isinstance(state, Group) and state.end() == end:  # else: judged already, or dropped
                got = state.close()
                self._live -= 1
                self._dirty.add((corr.name, customer, group))
                if got is not None:
                    fired.append((group, got))
        if ends is not None and not ends:
            del self._ends[(corr.name, customer)]
        return fired

    def _correlated(self, corr, customer: str, group: str, ts: int, have: int, seq: int,
                    record: dict[str, Any]) -> dict[str, Any] | None:
        """The behavior of a correlation rule met for ``group``: keyed by its group-by values."""
        if not corr.generate:
            return None
        c = corr.correlation
        values = group.split(GROUP_SEPARATOR) if c.group_by else []
        key = (" | ".join(values) if values else corr.name)[:MAX_KEY]
        flags = self.history.observe(customer, corr.key_type, key, corr.behavior)
        ids = self.ids()
        behavior = make_behavior(
            corr, {"@timestamp": ts, "@customer": customer, "@type": record.get("@type")}, key=key,
            event_id=ids.text(seq), sequence=ids.number(self.sequence + 1), history=flags,
            score_level=score_level(corr.risk_score, self.bands),
        )
        what = {"event_count": "matches", "value_count": f"distinct {c.field}",
                "temporal": "rules matched", "temporal_ordered": "rules matched in order"}[c.type]
        behavior["description"] = (f"{corr.description} ({what} of {', '.join(c.rules)}: {have}, "
                                   f"{c.op} {c.count} within {c.timespan_ms // 1000}s)").lstrip()
        behavior["attributes"] = [{"key": f, "aliase": f, "value": v[:1000]} for f, v in zip(c.group_by, values)]
        self.sequence += 1
        if self.made is not None:
            self.made.labels(corr.name).inc()
        return behavior

    def _apply(self, rule, record: dict[str, Any], seq: int) -> dict[str, Any] | None:
        """The behavior a matching rule makes of ``record``, if its key, windows and threshold say so."""
        key = rule.key_of(record)
        if key is None or key == "":
            return None
        key = key[:MAX_KEY]
        customer = customer_of(record)[:MAX_CUSTOMER]
        if rule.first_seen:
            # A first-seen rule fires once per (key, value), never on a pair it already met.
            value = rule.first_seen_value(record)
            if value is None or not self.history.first_value(customer, rule.name, key, value[:MAX_KEY]):
                return None
        aggregate = None
        if rule.threshold is not None:
            group = rule.group_of(record)
            if group is None:
                return None  # a groupBy field is absent: no window to count in
            wkey = (rule.name, customer, key + GROUP_SEPARATOR + group if group else key)
            window = self.windows.get(wkey)
            if window is None:
                window = self.windows[wkey] = Window(rule.threshold)
            ts = record.get("@timestamp")
            value = rule.signal_value(record)
            if value is None:
                return None  # nothing to add to a sum or distinct count
            was_empty = window.is_empty()
            aggregate = window.observe(ts if isinstance(ts, int) and not isinstance(ts, bool) else 0, value)
            self._live += was_empty - window.is_empty()
            self._dirty.add(wkey)
            if self._live > self.max_windows:
                self._evict()
            if aggregate is None:
                return None
        flags = self.history.observe(customer, rule.key_type, key, rule.behavior)
        ids = self.ids()
        behavior = make_behavior(
            rule, record, key=key, event_id=ids.text(seq), sequence=ids.number(self.sequence + 1), history=flags,
            score_level=score_level(rule.risk_score, self.bands), aggregate=aggregate,
        )
        self.sequence += 1
        if self.made is not None:
            self.made.labels(rule.name).inc()
        return behavior

    def logged(self, last_seq: int, behaviors: Iterable[dict[str, Any]]) -> None:
        """The records up to ``last_seq`` and their behaviors are in the log."""
        with self.lock:
            self.seq = max(self.seq, last_seq)
            self._unsaved_behaviors.extend(behaviors)

    def live_windows(self) -> int:
        """Threshold windows and correlation groups holding entries."""
        return self._live

    def _evict(self) -> None:
        """Drop the live windows whose newest entry is oldest, down to ``EVICT_TO`` of the bound.

        Which ones depends only on the windows' entries (ties by key), which
        depend only on the records run so far in log order: streaming,
        a restart's replay and a backfill evict the same windows at the same
        record, so they still agree. A dropped window is a new one if its
        key comes back; that differs from keeping it only when the key's
        next record falls within the window of entries older than those of
        ~90,000 other live keys.
        """
        live = sorted((w.newest(), wkey) for wkey, w in self.windows.items() if not w.is_empty())
        drop = len(live) - int(self.max_windows * EVICT_TO)
        for _newest, wkey in live[:drop]:
            del self.windows[wkey]
            self._dirty.add(wkey)  # the next save deletes its row
        self._live = len(live) - drop
        self.windows_evicted += drop
        log.warning(
            "threshold windows past their bound (%d): dropped the %d whose newest entry was oldest "
            "(the last dropped: rule %s, its newest entry at %s ms)",
            self.max_windows, drop, live[drop - 1][1][0], live[drop - 1][0],
        )

    # -- state ----------------------------------------------------------

    def _save_windows(self, s) -> None:
        """Replace the saved rows of the changed windows: one DELETE and one
        INSERT per chunk rather than a lookup per key (a port scan dirties
        thousands of keys between two saves)."""
        dirty = list(self._dirty)
        rows = []
        for wkey in dirty:
            window = self.windows.get(wkey)
            if window is None or window.is_empty():
                self.windows.pop(wkey, None)
            else:
                rule_name, customer, key = wkey
                rows.append({"rule": rule_name, "customer": customer, "key": key,
                             "state": json.dumps(window.to_json())})
        for i in range(0, len(dirty), SAVE_CHUNK):
            chunk = dirty[i : i + SAVE_CHUNK]
            s.execute(delete(SignalState).where(
                tuple_(SignalState.rule, SignalState.customer, SignalState.key).in_(chunk)))
        for i in range(0, len(rows), SAVE_CHUNK):
            s.execute(insert(SignalState), rows[i : i + SAVE_CHUNK])

    def _new_history(self) -> History:
        """The history, its recent entries in memory and all in the database (``detect/history.py``)."""
        return History(self.db.session if self.db is not None else None, HISTORY_CAPACITY)

    def resync(self, lake) -> None:
        """After a failed log append: back to the saved state plus what the log holds."""
        with self.lock:
            self._unsaved_behaviors = []
            self._dirty.clear()
            self.history = self._new_history()
            self.restore(lake.wal.replay)

    def restore(self, replay: Callable[[int], Iterable[tuple[int, str, dict[str, Any]]]] | None = None) -> None:
        """Load the saved state, then bring it up to date with the log entries after it.

        ``replay(seq)``: the log's entries after ``seq`` (``WriteAheadLog.replay``),
        asked from the saved position: the log decodes only those (from 0, an
        import command's start decoded its whole live segment to skip it: 0.13 s).
        """
        assert self.db is not None
        if self.summaries is not None:
            self.summaries.rescore_all()  # summaries stored by an earlier version: the risk model of this one
        with self.lock:
            with self.db.session() as s:
                self.history.load(s)
                progress = s.get(DetectorProgress, "detector")
                self.seq = self.saved_seq = progress.seq if progress else 0
                self.sequence = progress.sequence if progress else 0
                self.windows = {}
                self._ends = {}
                # The rules once, not once per saved window (each look reads the
                # rules' generation: 7,677 windows took 0.19 s to restore on the
                # bench's 2M-event lake, at every start of the server and of each command).
                rules = {rule.name: rule for rule in self.rulebook.rules()}
                saved = select(SignalState.rule, SignalState.customer, SignalState.key, SignalState.state)
                for rule_name, customer, key, state in s.execute(saved):
                    rule = rules.get(rule_name)
                    window: Window | Group | None = None
                    if rule is not None and rule.threshold is not None:
                        window = Window.from_json(rule.threshold, json.loads(state))
                    elif rule is not None and rule.correlation is not None:
                        window = Group.from_json(rule.correlation, json.loads(state))
                        if window.end() is not None:
                            self._ends.setdefault((rule_name, customer), []).append((window.end(), key))
                    if window is not None and not window.is_empty():  # an empty window is a new one
                        self.windows[(rule_name, customer, key)] = window
                for ends in self._ends.values():
                    heapq.heapify(ends)
                self._live = len(self.windows)
            count = 0
            for seq, dataset, record in replay(self.saved_seq) if replay is not None else ():
                if seq <= self.saved_seq:
                    continue
                if dataset in SOURCE_DATASETS:
                    self.process([(dataset, record)], seq)  # state only: its behaviors are logged
                elif dataset == "behavior":
                    self._unsaved_behaviors.append(record)
                self.seq = seq
                count += 1
            if count:
                log.info("detector caught up with %d logged records", count)

    def save(self, now_ms: int | None = None) -> None:
        """Save what changed, with the log sequence it is exact for, in one transaction."""
        if self.db is None:
            return
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        with self.lock:
            if self.seq == self.saved_seq and not self._dirty and not self._unsaved_behaviors:
                return
            new = self.history.new()
            # A failed save raises here; what was unsaved stays so for the next try.
            with self.db.session(write=True) as s:
                History.save(s, new)
                self._save_windows(s)
                if self.summaries is not None and self._unsaved_behaviors:
                    self.summaries.apply(s, self._unsaved_behaviors, now_ms)
                progress = s.get(DetectorProgress, "detector")
                if progress is None:
                    s.add(DetectorProgress(name="detector", seq=self.seq, sequence=self.sequence))
                else:
                    progress.seq, progress.sequence = self.seq, self.sequence
            self.history.saved(new)
            self._dirty.clear()
            self._unsaved_behaviors = []
            self.saved_seq = self.seq


def _group_record(corr, group: str, record: dict[str, Any]) -> dict[str, Any]:
    """What a fired correlation passes on to a correlation of it: its group-by
    values at their field names (under @fields, where the event dataset reads
    a field name), with the record's time, customer and type."""
    out: dict[str, Any] = {"@timestamp": record.get("@timestamp"), "@customer": record.get("@customer"),
                           "@type": record.get("@type"), "@fields": {}}
    for name, value in zip(corr.correlation.group_by, group.split(GROUP_SEPARATOR)):
        at = out if name.startswith("@") else out["@fields"]
        *parents, last = name.split(".")
        for part in parents:
            nxt = at.get(part)
            at = at.setdefault(part, {}) if not isinstance(nxt, dict) else nxt
        at[last] = value
    return out
