"""``seclake query``: run a piped analytics query on a running server and print its table.

It asks the server (``ds/query_async``, then ``ds/query_async_get`` until
done), not the data directory: the server holds the lake, and the answer
is the one the API gives the token's user, data policies included. A long
query shows its progress on stderr; Ctrl-C cancels it on the server.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import time
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated, Any

import typer

from seclake.cli.options import ConfigFile, DataDir
from seclake.cli.rules import _time
from seclake.cli.status import Url
from seclake.settings import load_settings

# Seconds between two polls of a running task.
POLL = 0.25


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


class DataType(str, Enum):
    event = "event"
    flow = "flow"
    behavior = "behavior"
    summary = "summary"


def query(
    text: Annotated[str, typer.Argument(help='The query: a search, then commands after pipes ("event.outcome:failure | STATS n = COUNT(*) BY user.name").', show_default=False)],
    data_type: Annotated[DataType, typer.Option("--data-type", "-t", help="The dataset read.")] = DataType.event,
    time_from: Annotated[str | None, typer.Option("--from", help="Start: epoch ms, an ISO 8601 date or now-24h.", show_default=False)] = None,
    time_to: Annotated[str | None, typer.Option("--to", help="End: epoch ms, an ISO 8601 date or now.", show_default=False)] = None,
    output: Annotated[Format, typer.Option("--format", "-f", help="table (for a terminal), csv or json (ES|QL's shape).")] = Format.table,
    token: Annotated[str, typer.Option("--token", envvar="SECLAKE_TOKEN", help="An API or session token (seclake token add).", show_default=False)] = "",
    url: Url = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Run an analytics query (docs/analytics.md) and print the result."""
    import httpx  # here: every command loads this module, and only this one needs it (~25 ms)

    if not token:
        typer.echo("error: --token (or SECLAKE_TOKEN) is required: an API token from `seclake token add`", err=True)
        raise typer.Exit(2)
    if url is None:
        settings = load_settings(data_dir=data_dir, config=config)
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
        url = f"http://{host}:{settings.port}"
    kargs: dict[str, Any] = {"query": text, "dataType": data_type.value}
    for key, value, lower in (("range_from", time_from, True), ("range_to", time_to, False)):
        bound = _time(value, lower=lower)
        if bound is not None:
            kargs[key] = bound
    with httpx.Client(base_url=url.rstrip("/"), headers={"Servicetoken": token}, timeout=60) as client:
        def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            try:
                r = client.post(f"/api/{name}", json={"kargs": args})
                body = r.json()
            except (httpx.HTTPError, ValueError) as e:
                typer.echo(f"error: {url}: {type(e).__name__}: {e}", err=True)
                raise typer.Exit(2) from None
            if body.get("verdict") != "OK":
                typer.echo(f"error: {body.get('error') or body.get('exception') or body}", err=True)
                raise typer.Exit(1)
            return body["response"]

        task = call("ds/query_async", kargs)
        try:
            while task["is_running"]:
                time.sleep(POLL)
                task = call("ds/query_async_get", {"id": task["id"]})
                _progress(task)
        except KeyboardInterrupt:
            call("ds/query_async_cancel", {"id": task["id"]})
            typer.echo("\ncancelled", err=True)
            raise typer.Exit(130) from None
        if sys.stderr.isatty():
            typer.echo("\r\033[K", err=True, nl=False)
    if task["state"] != "done":
        typer.echo(f"error: {task.get('error') or task['state']}", err=True)
        raise typer.Exit(1)
    columns, values = task["columns"], task["values"]
    if output is Format.json:
        typer.echo(json.dumps({"columns": columns, "values": values, "took": task.get("took")}))
    elif output is Format.csv:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([c["name"] for c in columns])
        writer.writerows([[_cell(v, c["type"]) for v, c in zip(row, columns)] for row in values])
        typer.echo(out.getvalue(), nl=False)
    else:
        typer.echo(table(columns, values))
        typer.echo(f"{len(values)} row(s), {task.get('took')} ms", err=True)


def _progress(task: dict[str, Any]) -> None:
    if not sys.stderr.isatty():
        return
    p = task["progress"]
    total = "?" if p["total"] is None else f"{p['total']:,}"
    typer.echo(f"\r\033[K{task['state']}: {p['read']:,} of {total} records", err=True, nl=False)


def _cell(value: Any, kind: str) -> str:
    """A value as text: dates (epoch ms) in ISO 8601 UTC, lists joined, null empty."""
    if value is None:
        return ""
    if kind == "date" and isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(_cell(v, kind) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


# Widest column shown in a table; longer values are cut with an ellipsis.
MAX_WIDTH = 60


def table(columns: list[dict[str, Any]], values: list[list[Any]]) -> str:
    """An aligned text table: numbers to the right, the rest to the left."""
    heads = [c["name"] for c in columns]
    cells = [[_cell(v, c["type"]).replace("\n", " ") for v, c in zip(row, columns)] for row in values]
    cut = [[s if len(s) <= MAX_WIDTH else s[:MAX_WIDTH - 1] + "…" for s in row] for row in cells]
    widths = [max([len(h), *(len(r[i]) for r in cut)]) for i, h in enumerate(heads)]
    right = [c["type"] in ("long", "double") for c in columns]

    def line(parts: list[str]) -> str:
        return "  ".join(p.rjust(w) if r else p.ljust(w) for p, w, r in zip(parts, widths, right)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(heads), rule, *(line(r) for r in cut)])
