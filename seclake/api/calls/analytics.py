"""Analytics: ``ds/query`` and its tasks ``ds/query_async``, ``ds/query_async_get``,
``ds/query_async_cancel`` (docs/analytics.md).

seclake's own calls (the original service has none): a piped query, a
Lucene head then ES|QL's commands, answered in ES|QL's shape ``{columns:
[{name, type}], values: [[...]], took}``. The head is planned exactly as a
search's ``searchStr`` (``build_plan``: same parser, limits and data policy),
so a syntax error in it, or in the commands, is the same ERROR a search's
is: ``query error at position N: ...; expected ...``.

``ds/query`` answers at once, within ``analytics_timeout_seconds``; a
longer query is submitted as a task (``service/querytasks.py``): the query
is parsed and planned at submit (its errors come back then), runs in the
task pool, and is polled and fetched with ``ds/query_async_get``.
"""

from __future__ import annotations

import time
from typing import Any

from seclake.analytics import parse
from seclake.api.hitwrapper import failures, say_if_incomplete
from seclake.api.options import build_plan
from seclake.api.registry import CallContext, call
from seclake.api.reply import QueryReply, QueryTaskReply
from seclake.api.request import QueryRequest, QueryTaskRequest
from seclake.record.dataset import DATASETS
from seclake.service.analytics import Progress, Selection, run
from seclake.service.querytasks import DONE, Task


def now_ms() -> int:
    """NOW() of a query: when it was asked."""
    return int(time.time() * 1000)


def _prepared(ctx: CallContext, args: QueryRequest) -> tuple[Any, Selection, int]:
    """The parsed pipeline, what its head selects for this caller, and the query's now."""
    settings = ctx.settings
    dataset = DATASETS[args.dataType]
    # The whole text is bounded by the language's limits, the head as a searchStr (build_plan).
    pipeline = parse(args.query, dataset)
    assert ctx.caller is not None
    restriction = ctx.caller.restriction(dataset, settings)
    now = now_ms()
    # The head with the blanks that led it, so a syntax error's position counts in the whole text.
    lead = args.query.find(pipeline.head) if pipeline.head else 0
    head = args.query[:lead] + pipeline.head
    options = {"searchStr": head, "range_from": args.range_from, "range_to": args.range_to, "fetchLimit": 0}
    plan, _ = build_plan(options, dataset, settings, now_ms=now, restriction=restriction)
    return pipeline, Selection(dataset, plan), now


def _answer(services: Any, pipeline: Any, selection: Selection, now_ms: int, progress: Progress,
            mode: str = "call") -> dict[str, Any]:
    result, took = run(services, pipeline, selection, progress, now_ms=now_ms, mode=mode)
    response: dict[str, Any] = {"columns": result.columns, "values": result.values, "took": took}
    if result.warnings:
        response["warnings"] = result.warnings  # the implicit LIMIT's cut, a VALUES list capped...
    if selection.failed:
        # Some splits gave no answer (cluster mode, or damaged): the result leaves their records out.
        response["_shards"] = {"failed": len(selection.failed), "failures": failures(selection.failed)}
    return response


@call("ds/query", permission="search", request=QueryRequest, reply=QueryReply,
      summary="Run a piped analytics query (a search, then ES|QL commands): columns and rows.")
def query(ctx: CallContext, args: QueryRequest) -> dict[str, Any]:
    pipeline, selection, now_ms = _prepared(ctx, args)
    timeout = ctx.settings.analytics_timeout_seconds
    with ctx.services.query_tasks.call():
        progress = Progress(deadline=time.monotonic() + timeout, timeout=timeout)
        return say_if_incomplete(ctx, _answer(ctx.services, pipeline, selection, now_ms, progress))


def _view(ctx: CallContext, task: Task) -> dict[str, Any]:
    out = task.view(ctx.services.query_tasks.keep_seconds)
    if task.state == DONE and task.result is not None:
        out.update(task.result)
    return out


@call("ds/query_async", permission="search", request=QueryRequest, reply=QueryTaskReply,
      summary="Submit a piped analytics query as a task: its id, to poll with ds/query_async_get.")
def query_async(ctx: CallContext, args: QueryRequest) -> dict[str, Any]:
    pipeline, selection, now_ms = _prepared(ctx, args)  # errors in the query come back now
    assert ctx.caller is not None
    services = ctx.services  # not ctx: the task outlives the request
    task = services.query_tasks.submit(
        ctx.caller.username, args.query, lambda progress: _answer(services, pipeline, selection, now_ms, progress, "task"))
    ctx.audit_detail = f"query task {task.id}"
    return _view(ctx, task)


@call("ds/query_async_get", permission="search", request=QueryTaskRequest, reply=QueryTaskReply,
      summary="A query task: its state and progress, and once done its columns and rows.")
def query_async_get(ctx: CallContext, args: QueryTaskRequest) -> dict[str, Any]:
    assert ctx.caller is not None
    return _view(ctx, ctx.services.query_tasks.get(ctx.caller.username, args.id))


@call("ds/query_async_cancel", permission="search", request=QueryTaskRequest, reply=QueryTaskReply,
      summary="Stop a query task (kept as cancelled until it expires), or drop a finished one's result.")
def query_async_cancel(ctx: CallContext, args: QueryTaskRequest) -> dict[str, Any]:
    assert ctx.caller is not None
    task = ctx.services.query_tasks.cancel(ctx.caller.username, args.id)
    ctx.audit_detail = f"query task {task.id} cancelled"
    return _view(ctx, task)
