"""``seclake searcher``: start this node's searcher and indexer actors on a Ray cluster.

Run it on every searcher node after ``ray start --address HOST:PORT`` (the
node must be part of the cluster); ``--data-dir`` names the data dir as this
node sees the shared storage (its ``lake/splits``). Searchers run the leaves
of searches; indexers build splits for the ingest node (``--indexers``,
setting ``indexers_per_node``; 0 for none). Both are Ray actors, detached
and restarted by Ray; this command stays in the foreground and stops them
on Ctrl-C / SIGTERM, or returns once they are up with ``--detach`` (stop
them later with ``seclake searcher --stop``).

``seclake cluster status``: every searcher and indexer of the cluster, its
node and process, what it holds and when it last answered.
"""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir
from seclake.cluster import ray_missing
from seclake.settings import load_settings


def _need_ray() -> None:
    """Exit 1 saying what to install when Ray is missing."""
    missing = ray_missing()
    if missing:
        typer.echo(f"error: {missing}", err=True)
        raise typer.Exit(1)


RayAddress = Annotated[
    str | None,
    typer.Option("--ray-address", help="Ray cluster to join, HOST:PORT (env SECLAKE_RAY_ADDRESS).", show_default=False),
]


def searcher(
    ray_address: RayAddress = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
    count: Annotated[int | None, typer.Option("--count", help="Searchers on this node (setting searchers_per_node).", show_default=False)] = None,
    indexers: Annotated[int | None, typer.Option("--indexers", help="Indexers on this node (setting indexers_per_node).", show_default=False)] = None,
    node_id: Annotated[str | None, typer.Option("--node-id", help="Ray node id (a prefix is enough) to pin the searchers to (default: this machine's node).", show_default=False)] = None,
    detach: Annotated[bool, typer.Option("--detach", help="Return once the searchers are up; they keep running.")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the searchers and indexers running on this node (or --node-id) and return.")] = False,
) -> None:
    """Start this node's searcher and indexer actors on the Ray cluster (cluster mode)."""
    _need_ray()
    from seclake.cluster.indexer import start_indexers
    from seclake.cluster import INDEXER_PREFIX, SEARCHER_PREFIX
    from seclake.cluster.placement import running_on_node, stop_actors
    from seclake.cluster.searcher import start_searchers
    from seclake.storage.layout import Layout
    from seclake.storage.splitstore import StoreConfig

    settings = load_settings(
        ray_address=ray_address, data_dir=data_dir, config=config, searchers_per_node=count, indexers_per_node=indexers
    )
    if not settings.ray_address:
        typer.echo("error: give --ray-address HOST:PORT (or set SECLAKE_RAY_ADDRESS)", err=True)
        raise typer.Exit(2)
    if stop:
        # Only what runs: starting the node's actors to stop them again took minutes.
        running = running_on_node(settings.ray_address, [SEARCHER_PREFIX, INDEXER_PREFIX], node_id, settings.ray_namespace)
        stop_actors(running, settings.ray_namespace)
        typer.echo(f"stopped {', '.join(running)}" if running else "no searcher or indexer runs on this node")
        return
    splits = Layout(settings.data_dir).splits
    infos = start_searchers(
        settings.ray_address,
        splits,
        count=settings.searchers_per_node,
        node_id=node_id,
        max_open=settings.searcher_max_open_splits,
        concurrency=settings.searcher_concurrency,
        namespace=settings.ray_namespace,
        store=StoreConfig.from_settings(settings),
        cache_dir=settings.effective_split_cache_dir,
        cache_bytes=settings.split_cache_bytes,
    )
    indexer_infos = start_indexers(
        settings.ray_address,
        count=settings.indexers_per_node,
        node_id=node_id,
        namespace=settings.ray_namespace,
    )
    names = [i["name"] for i in infos + indexer_infos]
    for info in infos:
        if info.get("split_store"):
            where = f"{info['split_store']} through copies in {info['cache_dir']}"
        else:
            where = info["splits_dir"] + ("" if info["splits_dir_exists"] else " (the directory does not exist yet)")
        typer.echo(f"searcher {info['name']} up (pid {info['pid']}) reading {where}")
    for info in indexer_infos:
        typer.echo(f"indexer {info['name']} up (pid {info['pid']}) building splits for the ingest node")
    if detach:
        return
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    typer.echo("searchers and indexers running; Ctrl-C stops them")
    done.wait()
    stop_actors(names, settings.ray_namespace)
    typer.echo(f"stopped {', '.join(names)}")


cluster_app = typer.Typer(help="Cluster mode: what runs on the Ray cluster.", no_args_is_help=True)


@cluster_app.command("status")
def cluster_status(ray_address: RayAddress = None, config: ConfigFile = None) -> None:
    """List the cluster's searchers and indexers: node, process, splits held, last answer.

    Exit status 0 when every actor answered and there is a searcher, 1 otherwise."""
    _need_ray()
    import time

    from seclake.cluster import INDEXER_PREFIX, SEARCHER_PREFIX
    from seclake.cluster.placement import actor_infos, connect

    settings = load_settings(ray_address=ray_address, config=config)
    if not settings.ray_address:
        typer.echo("error: give --ray-address HOST:PORT (or set SECLAKE_RAY_ADDRESS)", err=True)
        raise typer.Exit(2)
    connect(settings.ray_address, settings.ray_namespace)
    rows = actor_infos([SEARCHER_PREFIX, INDEXER_PREFIX], settings.ray_namespace)
    now_ms = time.time() * 1000
    healthy = any(name.startswith(SEARCHER_PREFIX) and info is not None for name, info, _ in rows)
    for name, info, problem in rows:
        if info is None:
            healthy = False
            typer.echo(f"{name}  UNREACHABLE: {problem}")
        elif name.startswith(SEARCHER_PREFIX):
            last = info.get("last_answer_ms")
            ago = f"{(now_ms - last) / 1000:.1f} s ago" if last else "never"
            typer.echo(f"{name}  node {info['node_id'][:12]}  pid {info['pid']}  splits open {info['open_splits']}  "
                       f"answered {info.get('answered', 0)} calls ({info.get('aggregated', 0)} splits' STATS folded), "
                       f"last {ago}")
        else:
            typer.echo(f"{name}  node {info['node_id'][:12]}  pid {info['pid']}  built {info['built']} splits "
                       f"({info['records']} records)")
    if not rows:
        typer.echo(f"no searcher or indexer in namespace {settings.ray_namespace!r}")
    raise typer.Exit(0 if healthy else 1)
