"""One phase of a search (leaves or fetch) over many searchers, with a deadline.

Each split goes to its first-choice searcher (rendezvous order), and each
searcher gets ONE call carrying all of its splits: a Ray call costs about a
millisecond of the root's time and a round trip, so per-split calls made a
7-day search pay seven of them (measured: 15-50 ms per search).

A call answers item by item: an item whose answer is an exception failed on
that searcher (it could not open the split...) while the others answered. A
call that fails as a whole (the searcher died) or has not answered when the
first-attempt deadline passes fails all its items, and that searcher is not
used again in this phase. Failed items are retried once, at once, on the
next searcher of their own order that has not failed in this phase, again
one call per searcher; when none is left (a cluster of one searcher), a
failed item (not a late one) is asked again of the same searcher, after a
moment (``SAME_SEARCHER_PAUSE``). Whatever has not answered by the overall deadline, or
failed twice, is reported as failed: never a hang, never a silently missing
split. Errors the caller must see as such (a query past a limit raises the
same on every searcher) are not failures: ``is_fatal`` picks them and they
propagate.

Written over ``concurrent.futures`` futures so that it is tested without
Ray; the Ray executor turns object refs into futures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

from seclake.cluster.rendezvous import rank

# Before asking a lone searcher again what just failed there, in seconds.
SAME_SEARCHER_PAUSE = 0.2


@dataclass
class Outcome:
    results: dict[str, Any] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    # split id -> the searchers tried, in order (for logs and tests)
    tried: dict[str, list[str]] = field(default_factory=dict)
    # calls made, one per (searcher, attempt) group (for logs and tests)
    calls: int = 0
    # split id -> why its last attempt failed (for the log: an operator sees why, not only which)
    reasons: dict[str, str] = field(default_factory=dict)


def fan_out(
    items: Sequence[str],
    searchers: Sequence[str],
    call: Callable[[list[str], str], Future],
    *,
    timeout: float,
    first_attempt: float | None = None,
    cancel: Callable[[Future], None] = lambda f: None,
    is_fatal: Callable[[BaseException], bool] = lambda e: False,
) -> Outcome:
    """Run ``call(items of one searcher, searcher)`` per searcher; see the module doc.

    The future a call returns gives ``{item: answer}``; an answer that is an
    exception is that item's failure. ``first_attempt`` defaults to half of
    ``timeout``, leaving the retry the other half.
    """
    out = Outcome()
    if not items:
        return out
    if not searchers:
        out.failed = sorted(items)
        out.reasons = {item: "no searcher is running" for item in items}
        return out
    start = time.monotonic()
    deadline = start + timeout
    first_deadline = start + (timeout / 2 if first_attempt is None else min(first_attempt, timeout))
    order = {item: rank(item, searchers) for item in items}
    bad: set[str] = set()
    pending: dict[Future, tuple[list[str], str, int]] = {}  # future -> (items, searcher, attempt)

    def stop_all() -> None:
        for f in pending:
            cancel(f)

    def submit(groups: dict[str, list[str]], attempt: int) -> None:
        for searcher, group in groups.items():
            for item in group:
                out.tried.setdefault(item, []).append(searcher)
            out.calls += 1
            try:
                fut = call(group, searcher)
            except Exception as e:  # noqa: BLE001 - a handle that cannot even take the call
                if is_fatal(e):
                    stop_all()
                    raise
                fut = Future()
                fut.set_exception(e)
            pending[fut] = (group, searcher, attempt)

    def retry_or_fail(failed_items: Iterable[str], here: str | None = None) -> None:
        """Ask the items again elsewhere, or name them failed; ``here``: the
        searcher they just failed on (not by lateness), asked again when no
        other is left (a lone searcher's passing failure: Ray's
        ActorUnavailableError says the actor "may be available later")."""
        groups: dict[str, list[str]] = {}
        for item in failed_items:
            tried = out.tried.get(item, [])
            target = None
            if len(tried) < 2:
                target = next((c for c in order[item] if c not in bad and c not in tried), None)
                if target is None and here is not None and here not in tried[:-1]:
                    target = here
            if target is None:
                out.failed.append(item)
            else:
                groups.setdefault(target, []).append(item)
        if here in groups:
            # Asked again at once, a passing failure (a connection being
            # made again) is likely still there: a moment first, within the deadline.
            time.sleep(max(0.0, min(SAME_SEARCHER_PAUSE, (deadline - time.monotonic()) / 4)))
        submit(groups, 2)

    first: dict[str, list[str]] = {}
    for item in items:
        first.setdefault(order[item][0], []).append(item)
    submit(first, 1)

    while pending:
        now = time.monotonic()
        first_pending = any(a == 1 for _, _, a in pending.values())
        until = first_deadline if first_pending and now < first_deadline else deadline
        done, _ = wait(list(pending), timeout=max(0.0, until - now), return_when=FIRST_COMPLETED)
        for fut in done:
            group, searcher, _attempt = pending.pop(fut)
            try:
                answers = fut.result()
            except BaseException as e:  # noqa: BLE001 - the whole call failed: that searcher is out
                if is_fatal(e):
                    stop_all()
                    raise
                bad.add(searcher)
                for item in group:
                    out.reasons[item] = f"{searcher}: the call failed: {_why(e)}"
                retry_or_fail(group, searcher)
                continue
            again = []
            for item in group:
                answer = answers.get(item, KeyError(item))
                if isinstance(answer, BaseException):
                    if is_fatal(answer):
                        stop_all()
                        raise answer
                    out.reasons[item] = f"{searcher}: {_why(answer)}"
                    again.append(item)
                else:
                    out.results[item] = answer
            retry_or_fail(again, searcher)
        now = time.monotonic()
        if now >= deadline:
            for fut, (group, searcher, _a) in list(pending.items()):
                cancel(fut)
                out.failed.extend(group)
                for item in group:
                    out.reasons[item] = f"{searcher}: no answer within the deadline ({timeout:g} s)"
            pending.clear()
        elif now >= first_deadline:
            late = [(f, v) for f, v in pending.items() if v[2] == 1]
            for fut, (group, searcher, _a) in late:
                # Too slow for this request: ask the next searchers instead.
                del pending[fut]
                cancel(fut)
                bad.add(searcher)
                for item in group:
                    out.reasons[item] = f"{searcher}: no answer within the first attempt's deadline"
            retry_or_fail(item for _f, (group, _s, _a) in late for item in group)
    out.failed.sort()
    return out


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:300]
