"""A pipeline's STATS folded in parts and merged: cluster mode's partial aggregates.

A pipeline whose commands before its first STATS all work row by row
(WHERE, EVAL, RENAME, DROP, KEEP) is cut there. Each searcher runs that
prefix and the STATS's fold over the records of each split it holds
(``Aggregation.part``) and answers the groups with each aggregation's state
as plain data (``Aggregate.portable``: lists of numbers, strings and the
tuples ``scalars.key`` makes; Ray pickles them); the API node merges the
parts (``merge``: ``Aggregate.merge``, exact: COUNT and SUM add, MIN/MAX
compare, AVG adds sums and counts, COUNT_DISTINCT unites its distinct
values, MEDIAN and PERCENTILE gather every value, VALUES and TOP keep what
one pass would) and runs the rest of the pipeline over the merged groups
(``result``). So only groups travel, not records.

Parts merged in the order of their rows equal one pass over all the rows,
bit for bit (tests/analytics/test_partial.py); the API node merges splits
in the order the embedded reader reads them. The limits hold on each part
(a searcher past ``max_groups`` or ``max_held_values`` raises the same
``LimitExceeded``, before it is exhausted) and again on the merged groups.

A pipeline with a SORT or LIMIT before its STATS, or no STATS, is not cut:
its records are read as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from seclake.analytics import aggregates as ag
from seclake.analytics import execution
from seclake.analytics import tree as t
from seclake.analytics.execution import AnalyticsLimits, Result
from seclake.errors import LimitExceeded

# Commands a searcher runs on each record before the STATS (they neither order nor cut the rows).
ROW_WISE = (t.Where, t.Eval, t.Rename, t.Drop, t.Keep)
# Aggregations whose states hold values (Budget.take), not a few numbers.
HOLDING = (ag.CountDistinct, ag.Percentile, ag.Values, ag.Top)

# A part: [[group keys, [each aggregation's portable state]], ...]
Part = list[list[Any]]


def divisible(commands: Iterable[t.Command]) -> bool:
    """Whether the commands have a STATS with only row-wise commands before it."""
    for command in commands:
        if isinstance(command, t.Stats):
            return True
        if not isinstance(command, ROW_WISE):
            return False
    return False


class Aggregation:
    """One query's STATS in parts: ``part`` on a searcher, ``merge`` and ``result`` on the API node.

    Both sides plan the same commands (``execution.plan``: names, functions and
    limits checked as for one pass); ``now`` is the query's, so NOW() is the same
    on every searcher."""

    def __init__(self, commands: Iterable[t.Command], dataset: Any, now: int, limits: AnalyticsLimits | None = None):
        commands = list(commands)
        if not divisible(commands):
            raise ValueError("the pipeline has no STATS after row-wise commands only")
        self.plan = execution.plan(commands, dataset, now, limits or AnalyticsLimits())
        self.at = next(i for i, stage in enumerate(self.plan.stages) if hasattr(stage, "fold"))
        self.stats = self.plan.stages[self.at]
        self.groups: dict[tuple, list] = {}  # the merged groups (API node)

    @property
    def holding(self) -> int:
        """The aggregations whose states hold values (distinct values, values for percentiles,
        VALUES, TOP): what a part may send grows with its records only through them."""
        return sum(1 for a in self.stats.states if isinstance(getattr(a, "inner", a), HOLDING))

    def part(self, rows: Iterable[dict]) -> Part:
        """The prefix and the STATS's fold over ``rows`` (one split's records): the groups' states."""
        it: Iterator[dict] = iter(rows)
        for stage in self.plan.stages[: self.at]:
            it = stage(it)
        table = self.stats.fold(it)
        aggregates = self.stats.states
        return [[combo, [a.portable(state) for a, state in zip(aggregates, states)]] for combo, states in table.items()]

    def merge(self, part: Part) -> None:
        """Fold a part into the merged groups, as if its rows came after those merged so far."""
        groups = self.groups
        aggregates = self.stats.states
        most = self.stats.max_groups
        for combo, others in part:
            combo = tuple(combo)
            states = groups.get(combo)
            if states is None:
                if len(groups) >= most:
                    raise LimitExceeded("number of STATS groups", len(groups) + 1, most)
                states = groups[combo] = [a.new() for a in aggregates]
            for a, state, other in zip(aggregates, states, others):
                a.merge(state, other)

    def result(self) -> Result:
        """The answer: the merged groups' rows, then the commands after the STATS."""
        return execution.run(self.plan, self.stats.emit(self.groups), start=self.at + 1)
