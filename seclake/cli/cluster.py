"""``seclake searcher``: start this node's searcher and indexer actors on a Ray cluster.

Run it on every searcher node after ``ray start --address HOST:PORT`` (the
node must be part of the cluster); ``--data-dir`` names the data dir as this
node sees the shared storage (its ``lake/splits``). Searchers run the leaves
of searches; indexers build splits for the ingest node (``--indexers``,
setting ``indexers_per_node``; 0 for none). Both are Ray actors, detached
and restarted by Ray; this command stays in the foreground and stops them
on Ctrl-C / SIGTERM, or returns once they are up with ``--detach`` (stop
them later with ``seclake searcher --stop``).
"""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

from seclake.cli.options import ConfigFile, DataDir
from seclake.settings import load_settings

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
    stop: Annotated[bool, typer.Option("--stop", help="Stop this node's searchers (those --count/--node-id name) and return.")] = False,
) -> None:
    """Start this node's searcher and indexer actors on the Ray cluster (cluster mode)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        typer.echo('error: cluster mode needs Ray: pip install "seclake[cluster]"', err=True)
        raise typer.Exit(1) from None
    from seclake.cluster.indexer import start_indexers
    from seclake.cluster.placement import stop_actors
    from seclake.cluster.searcher import start_searchers
    from seclake.storage.layout import Layout
    from seclake.storage.splitstore import StoreConfig

    settings = load_settings(
        ray_address=ray_address, data_dir=data_dir, config=config, searchers_per_node=count, indexers_per_node=indexers
    )
    if not settings.ray_address:
        typer.echo("error: give --ray-address HOST:PORT (or set SECLAKE_RAY_ADDRESS)", err=True)
        raise typer.Exit(2)
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
    if stop:
        stop_actors(names, settings.ray_namespace)
        typer.echo(f"stopped {', '.join(names)}")
        return
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
