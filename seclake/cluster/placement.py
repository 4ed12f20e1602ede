"""seclake's long-lived actors on a Ray cluster: started pinned to a node, found by name.

Searchers and indexers are detached named actors in the deployment's Ray
namespace (setting ``ray_namespace``), named ``<prefix><node id prefix>-<n>``.
Each is pinned to the node it was started for (a node's searchers read that
node's view of storage and keep its cache; an indexer spends that node's
CPU) and restarted by Ray, without end, when its process dies. Roots and
ingest nodes list them by prefix (``ActorDirectory``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from seclake.cluster import NAMESPACE


def connect(address: str, namespace: str = NAMESPACE) -> None:
    """Join the Ray cluster at ``address`` as a driver (once per process)."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, namespace=namespace, log_to_driver=False, configure_logging=False)


def start_pinned(
    address: str,
    cls: type,
    prefix: str,
    args: Callable[[str], tuple],
    *,
    count: int,
    node_id: str | None,
    concurrency: int,
    namespace: str,
    ready_timeout: float,
) -> list[dict[str, Any]]:
    """Start (or find running) ``count`` actors of ``cls`` on one node; their ``info()`` with their name.

    ``node_id`` (a hex prefix is enough) picks the node; by default the node
    this process joined through, i.e. this machine's. ``args(name)`` gives
    an actor's constructor arguments.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    connect(address, namespace)
    node = _node(node_id)
    actor = ray.remote(cls)
    names = [f"{prefix}{node[:12]}-{i}" for i in range(count)]
    handles = [
        actor.options(
            name=name,
            namespace=namespace,
            lifetime="detached",
            get_if_exists=True,
            # Ray restarts the actor whose process dies, without end; calls
            # in flight then fail (their callers retry elsewhere).
            max_restarts=-1,
            max_task_retries=0,
            max_concurrency=concurrency,
            # No CPU reserved: the actor is pinned to its node anyway, and
            # the node's CPUs stay schedulable for other work.
            num_cpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
        ).remote(*args(name))
        for name in names
    ]
    infos = ray.get([h.info.remote() for h in handles], timeout=ready_timeout)
    return [dict(info, name=name) for name, info in zip(names, infos)]


def _node(node_id: str | None) -> str:
    """The node a hex prefix names, or the one this process joined through."""
    import ray

    if node_id is None:
        return ray.get_runtime_context().get_node_id()
    alive = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
    matches = [n for n in alive if n.startswith(node_id)]
    if len(matches) != 1:
        raise ValueError(f"node id {node_id!r} matches {len(matches)} live nodes of the cluster")
    return matches[0]


def running_on_node(address: str, prefixes: list[str], node_id: str | None, namespace: str = NAMESPACE) -> list[str]:
    """Names of the actors of these kinds that run on one node (named as ``start_pinned`` names them)."""
    import ray

    connect(address, namespace)
    node = _node(node_id)
    starts = tuple(f"{prefix}{node[:12]}-" for prefix in prefixes)
    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["namespace"] == namespace and a["name"].startswith(starts))


def actor_infos(prefixes: list[str], namespace: str = NAMESPACE, timeout: float = 10.0) -> list[tuple[str, Any, str | None]]:
    """(name, info() or None, why not) of every named actor of these kinds, asked side by side."""
    import ray

    names = sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                   if a["namespace"] == namespace and a["name"].startswith(tuple(prefixes)))
    asked = []
    for name in names:
        try:
            asked.append((name, ray.get_actor(name, namespace=namespace).info.remote()))
        except ValueError:  # gone between listing and lookup
            continue
    out = []
    deadline = time.monotonic() + timeout
    for name, ref in asked:
        try:
            out.append((name, ray.get(ref, timeout=max(0.1, deadline - time.monotonic())), None))
        except Exception as e:  # noqa: BLE001 - reported: a dead or restarting actor
            out.append((name, None, f"{type(e).__name__}: {str(e)[:200]}"))
    return out


def stop_actors(names: list[str], namespace: str = NAMESPACE) -> None:
    """Kill actors for good (no restart); nothing is assigned to them any more."""
    import ray

    for name in names:
        try:
            ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)
        except ValueError:
            pass


class ActorDirectory:
    """The named actors of one kind (``prefix``), listed again every ``refresh`` seconds.

    An actor Ray is restarting stays listed (calls to it fail or wait, and
    the caller retries elsewhere); one killed for good disappears.
    """

    def __init__(self, prefix: str, namespace: str = NAMESPACE, refresh: float = 2.0):
        self.prefix = prefix
        self.namespace = namespace
        self.refresh = refresh
        self._lock = threading.Lock()
        self._handles: dict[str, Any] = {}
        self._listed_at = float("-inf")

    def live(self) -> dict[str, Any]:
        import ray

        with self._lock:
            if time.monotonic() - self._listed_at < self.refresh:
                return dict(self._handles)
            names = sorted(
                a["name"]
                for a in ray.util.list_named_actors(all_namespaces=True)
                if a["namespace"] == self.namespace and a["name"].startswith(self.prefix)
            )
            handles = {}
            for name in names:
                handle = self._handles.get(name)
                if handle is None:
                    try:
                        handle = ray.get_actor(name, namespace=self.namespace)
                    except ValueError:  # gone between listing and lookup
                        continue
                handles[name] = handle
            self._handles = handles
            self._listed_at = time.monotonic()
            return dict(handles)

    def forget(self) -> None:
        with self._lock:
            self._listed_at = float("-inf")
