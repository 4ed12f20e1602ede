"""One phase of a search (leaves or fetch) over many searchers, with a deadline.

Each split goes to its first-choice searcher (rendezvous order). A split whose
call fails (the searcher died, could not open it...) or has not answered
when the first-attempt deadline passes is retried once, at once, on the next
searcher of its order that has not failed in this phase. Whatever has not
answered by the overall deadline, or failed twice, is reported as failed:
never a hang, never a silently missing split. Errors the caller must see as
such (a query past a limit raises the same on every searcher) are not
failures: ``is_fatal`` picks them and they propagate.

Written over ``concurrent.futures`` futures so that it is tested without
Ray; the Ray executor turns object refs into futures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

from seclake.cluster.rendezvous import rank


@dataclass
class Outcome:
    results: dict[str, Any] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    # split id -> the searchers tried, in order (for logs and tests)
    tried: dict[str, list[str]] = field(default_factory=dict)


def fan_out(
    items: Sequence[str],
    searchers: Sequence[str],
    call: Callable[[str, str], Future],
    *,
    timeout: float,
    first_attempt: float | None = None,
    cancel: Callable[[Future], None] = lambda f: None,
    is_fatal: Callable[[BaseException], bool] = lambda e: False,
) -> Outcome:
    """Run ``call(item, searcher)`` for every item; see the module doc.

    ``first_attempt`` defaults to half of ``timeout``, leaving the retry the
    other half.
    """
    out = Outcome()
    if not items:
        return out
    if not searchers:
        out.failed = sorted(items)
        return out
    start = time.monotonic()
    deadline = start + timeout
    first_deadline = start + (timeout / 2 if first_attempt is None else min(first_attempt, timeout))
    order = {item: rank(item, searchers) for item in items}
    bad: set[str] = set()
    pending: dict[Future, tuple[str, str, int]] = {}  # future -> (item, searcher, attempt)

    def submit(item: str, searcher: str, attempt: int) -> None:
        out.tried.setdefault(item, []).append(searcher)
        try:
            fut = call(item, searcher)
        except Exception as e:  # noqa: BLE001 - a handle that cannot even take the call
            if is_fatal(e):
                raise
            fut = Future()
            fut.set_exception(e)
        pending[fut] = (item, searcher, attempt)

    def retry_or_fail(item: str) -> None:
        tried = out.tried.get(item, [])
        if len(tried) < 2:
            for candidate in order[item]:
                if candidate not in bad and candidate not in tried:
                    submit(item, candidate, 2)
                    return
        out.failed.append(item)

    for item in items:
        submit(item, order[item][0], 1)

    while pending:
        now = time.monotonic()
        first_pending = any(a == 1 for _, _, a in pending.values())
        until = first_deadline if first_pending and now < first_deadline else deadline
        done, _ = wait(list(pending), timeout=max(0.0, until - now), return_when=FIRST_COMPLETED)
        for fut in done:
            item, searcher, _attempt = pending.pop(fut)
            try:
                out.results[item] = fut.result()
            except BaseException as e:  # noqa: BLE001 - every failure of a searcher is a failed try
                if is_fatal(e):
                    for f in pending:
                        cancel(f)
                    raise
                bad.add(searcher)
                retry_or_fail(item)
        now = time.monotonic()
        if now >= deadline:
            for fut, (item, _s, _a) in list(pending.items()):
                cancel(fut)
                out.failed.append(item)
            pending.clear()
        elif now >= first_deadline:
            late = [(f, v) for f, v in pending.items() if v[2] == 1]
            for fut, (item, searcher, _a) in late:
                # Too slow for this request: ask the next searcher instead.
                del pending[fut]
                cancel(fut)
                bad.add(searcher)
                retry_or_fail(item)
    out.failed.sort()
    return out
