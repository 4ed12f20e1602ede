"""``seclake bench``: run the benchmark and write docs/benchmarks.md and bench-results/<name>.json."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bench(
    events: Annotated[int, typer.Option(min=1000, help="Background lines (events and flows) at 1x.")] = 2_000_000,
    days: Annotated[int, typer.Option(min=8, max=90, help="Days the data spans (the classes use 7 and 30).")] = 30,
    scale: Annotated[str, typer.Option(help="Data scales to run: 1, or 1,10 (10x: HTTP ingest, fewer rounds, no peers).")] = "1",
    reps: Annotated[int, typer.Option(min=5, help="Timed warm rounds at 1x.")] = 5,
    reps_scaled: Annotated[int, typer.Option(min=1, help="Timed warm rounds at 10x.")] = 3,
    load_seconds: Annotated[float, typer.Option(min=0, help="Length of the load test; 0 skips it.")] = 60.0,
    clients: Annotated[int, typer.Option(min=1, help="Concurrent clients of the load test.")] = 16,
    arrival_seconds: Annotated[float, typer.Option(min=0, help="Length of each phase of the search-under-ingest test (searches arriving at a fixed rate: idle, then during a full-speed import); 0 skips it.")] = 30.0,
    arrival_rate: Annotated[float, typer.Option(min=0.1, max=100, help="Searches per second arriving in the search-under-ingest test.")] = 4.0,
    out: Annotated[Path, typer.Option(help="Markdown report.")] = Path("docs/benchmarks.md"),
    results: Annotated[Path | None, typer.Option(help="JSON of raw figures [default: bench-results/<name>.json].", show_default=False)] = None,
    data_dir: Annotated[Path, typer.Option("--data-dir", help="Where the lakes, peer databases and logs go (git-ignored).")] = Path("bench-data"),
    name: Annotated[str | None, typer.Option(help="Run name [default: from the size, e.g. 2M-1x].", show_default=False)] = None,
    cli_ingest: Annotated[bool, typer.Option(help="Also time `seclake import` on a fresh data dir.")] = True,
    cli_events: Annotated[int, typer.Option(min=0, help="Lines `seclake import` is timed on (a sample of the data; 0: all).")] = 200_000,
    peers: Annotated[bool, typer.Option(help="Load and time DuckDB and SQLite FTS5.")] = True,
    analytics: Annotated[bool, typer.Option(help="Time piped queries (ds/query) against DuckDB on the same records (needs the peers).")] = True,
    keep_data: Annotated[bool, typer.Option(help="Keep the generated batch files.")] = False,
    cluster: Annotated[bool, typer.Option(help="Also serve the 1x lake in cluster mode (local Ray head, 1 then 2 searchers) beside embedded; needs the cluster extra.")] = False,
    baseline: Annotated[str, typer.Option(help="Commit served beside this code on the 1x lake, its HTTP timed in turns (the no-regression target): 'committed' is the commit of the committed figures (bench-results/<name>.json at HEAD), 'none' skips it.")] = "committed",
    parse_lines: Annotated[int, typer.Option(min=0, help="Lines per format of the parse-rate stage (0 skips it).")] = 10_000,
    sigma: Annotated[str, typer.Option(help="SigmaHQ's archive (sigmahq-*.tar.gz) or the directory holding it, for the ingest with every SigmaHQ rule beside the starter pack [default: ../shared/sigma beside the repository]; 'none' skips it.", show_default=False)] = "",
    sigma_events: Annotated[int, typer.Option(min=0, help="Lines of the Sigma ingest's sample (the same share of every batch; 0: all).")] = 200_000,
    only: Annotated[str | None, typer.Option(help="Comma-separated classes to run (default: all).", show_default=False)] = None,
    report_only: Annotated[Path | None, typer.Option(help="Rewrite --out from this results JSON; run nothing.", exists=True, dir_okay=False, show_default=False)] = None,
) -> None:
    """Benchmark seclake against raw tantivy and peer engines, side by side, on seeded security data."""
    if report_only is not None:
        import json

        from seclake.bench.report import markdown

        out.write_text(markdown(json.loads(report_only.read_text()), report_only))
        typer.echo(f"wrote {out} from {report_only}", err=True)
        return
    from seclake.bench.classes import CLASSES
    from seclake.bench.runner import BenchFailed, BenchOptions, run

    try:
        scales = tuple(sorted({int(s) for s in scale.split(",") if s.strip()}))
    except ValueError:
        raise typer.BadParameter(f"--scale must be 1 or 1,10, not {scale!r}") from None
    if scales not in ((1,), (1, 10)):
        raise typer.BadParameter(f"--scale must be 1 or 1,10, not {scale!r}")
    names = tuple(c.name for c in CLASSES)
    chosen = names if not only else tuple(n.strip().upper() for n in only.split(","))
    unknown = [n for n in chosen if n not in names]
    if unknown:
        raise typer.BadParameter(f"unknown classes {unknown}; use some of {', '.join(names)}")
    if peers:
        try:
            import duckdb  # noqa: F401
        except ImportError:
            typer.echo('error: DuckDB is missing: pip install -e ".[bench]" (or pass --no-peers)', err=True)
            raise typer.Exit(2) from None
    if cluster:
        from seclake.bench.cluster import available

        if (why := available()) is not None:
            typer.echo(f"error: --cluster: {why}", err=True)
            raise typer.Exit(2)
    opts = BenchOptions(events=events, days=days, scales=scales, reps=reps, reps_scaled=reps_scaled,
                        load_seconds=load_seconds, clients=clients, arrival_seconds=arrival_seconds,
                        arrival_rate=arrival_rate, out=out, results=results, data_dir=data_dir,
                        name=name, cli_ingest=cli_ingest, cli_events=cli_events or None, peers=peers, analytics=analytics, keep_data=keep_data, classes=chosen,
                        cluster=cluster, parse_lines=parse_lines,
                        baseline=None if baseline == "none" else baseline,
                        sigma=None if sigma == "none" else (sigma or BenchOptions.sigma),
                        sigma_events=sigma_events or None)
    try:
        run(opts, echo=lambda s: typer.echo(s, err=True))
    except BenchFailed as e:
        typer.echo(f"benchmark FAILED: {e}", err=True)
        raise typer.Exit(1) from None
