"""A piped query: the search head, then ES|QL's commands (docs/analytics.md).

``parse`` splits the head from the commands (``pipes``), parses the commands
(``syntax``) and checks them all (names, functions, arguments, limits) by
planning them once, so every error is raised, with its position, before a
record is read.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from seclake.analytics import execution
from seclake.analytics import tree as t
from seclake.analytics.execution import AnalyticsLimits, Result
from seclake.analytics.pipes import first_pipe
from seclake.analytics.syntax import commands as parse_commands
from seclake.errors import LimitExceeded, QueryError
from seclake.record.dataset import DATASETS, EVENTS, Dataset


@dataclass(frozen=True)
class Pipeline:
    """A parsed piped query.

    ``head``: the search string before the first command (may be ""), for
    the search exactly as ``searchStr``. ``commands``: the parsed commands.
    ``fields``: the record paths (as stored: ``@fields.user.name``) the
    commands read, so a caller fetches only those; None when the answer's
    rows are whole records (no STATS and no KEEP of exact names). The time
    field is included when the rows are records (they come newest first).
    ``has_stats``: the answer is an aggregation (its rows are groups).
    """

    text: str
    head: str
    commands: tuple[t.Command, ...]
    dataset: Dataset
    fields: frozenset[str] | None
    has_stats: bool


def parse(text: str, dataset: Dataset | str = EVENTS, limits: AnalyticsLimits | None = None) -> Pipeline:
    """Parse and check ``text``; QueryError (with position and what was
    expected) or LimitExceeded when it cannot run."""
    if not isinstance(text, str):
        raise QueryError(f"a query must be a string, not {type(text).__name__}")
    if isinstance(dataset, str):
        if dataset not in DATASETS:
            raise QueryError(f"unknown dataset {dataset!r}", None, "one of " + ", ".join(DATASETS))
        dataset = DATASETS[dataset]
    limits = limits or AnalyticsLimits()
    if len(text) > limits.max_query_length:
        raise LimitExceeded("query length", len(text), limits.max_query_length)
    if len(text) <= PARSED_TEXT_MOST:
        return _parsed(text, dataset, limits)
    return _parse(text, dataset, limits)


# Parsed pipelines kept by their text: an analyst's page, a dashboard or the bench asks the same
# query again and again, and lark's parse and the plan that checks it took ~1 ms of a query
# answered in a few. A Pipeline is immutable (frozen dataclasses, tuples, frozensets all the
# way down), so one serves every caller. Bounded: 128 texts of at most 2,048 characters
# (longer ones are parsed each time); an error is raised each time, never kept.
PARSED_TEXT_MOST = 2_048


@functools.lru_cache(maxsize=128)  # thread-safe: ds/query runs in several threads
def _parsed(text: str, dataset: Dataset, limits: AnalyticsLimits) -> Pipeline:
    return _parse(text, dataset, limits)


def _parse(text: str, dataset: Dataset, limits: AnalyticsLimits) -> Pipeline:
    pipe = first_pipe(text)
    if pipe is None:
        return Pipeline(text, text, (), dataset, None, False)
    head = text[:pipe].rstrip()  # not lstrip: the search's error positions stay the query's
    commands = tuple(parse_commands(text[pipe:], pipe))
    planned = execution.plan(list(commands), dataset, 0, limits)
    fields = None if planned.reads_all else frozenset(planned.scope_fields | ({planned.time_path} if planned.newest_first else set()))
    return Pipeline(text, head, commands, dataset, fields, planned.has_stats)


def execute(pipeline: Pipeline, records: Iterable[dict], now: int | None = None, limits: AnalyticsLimits | None = None) -> Result:
    """Run ``pipeline``'s commands over ``records`` (the records its head
    selected: flat dicts of stored paths to values). ``now`` (epoch ms) is
    NOW()'s value. Rows that are records come newest first unless sorted."""
    planned = execution.plan(list(pipeline.commands), pipeline.dataset, now, limits or AnalyticsLimits())
    return execution.run(planned, records)
