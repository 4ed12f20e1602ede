"""Cluster mode: searcher actors on a Ray cluster run the leaves of every search; any API node takes imports.

    rendezvous.py   which searcher serves which split (highest random weight)
    fanout.py       one search over many searchers: deadline, one retry, failures
    splitcache.py   the splits a searcher keeps open
    placement.py    starting seclake's actors pinned to a node, and listing them by name
    searcher.py     the searcher actor, and starting them on a node
    indexer.py      indexer actors: split building for the ingest node on any node
    warmer.py       the ingest node asks each searcher to open its recent splits ahead of searches
    leaves.py       the root's side: live searchers, the Ray leaf executor
    catalogview.py  the splits and time bounds an API node that does not write the lake reads
    ingestor.py     the ingest node's mailbox actor, through which other nodes' imports reach the lake
    remoteingestion.py  a read-only API node's imports: parsed there, stored by the ingestor
    localray.py     a Ray cluster of separate processes on this machine (benchmark, tests)

Ray is an optional dependency (``pip install "seclake[cluster]"``); it is
imported only inside the functions that use it, when cluster mode is used.
See docs/deploy-cluster.md.
"""

import os

# A Ray call made while not connected (a thread still polling after its node
# stopped) must fail, not start a throwaway Ray cluster on this machine:
# that is what Ray does by default, and such a cluster writes
# ~/.ray/auth_token, after which every new Ray process on the machine
# turns on token authentication. Ray reads this when it is imported, so
# every seclake module imports this package before ``ray``.
os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")

# Every seclake actor lives in this Ray namespace; searchers are named
# ``searcher-<node id prefix>-<n>`` so any driver can list them.
NAMESPACE = "seclake"
SEARCHER_PREFIX = "searcher-"
# Indexer actors: ``indexer-<node id prefix>-<n>``.
INDEXER_PREFIX = "indexer-"
# The one ingestor of a deployment (hosted by its ingest API node).
INGESTOR = "ingestor"


def ray_missing() -> str | None:
    """Why cluster mode cannot run in this install, or None (Ray imported after the setting above)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return 'cluster mode needs Ray: pip install "seclake[cluster]"'
    return None


def current_node_id() -> str | None:
    """The Ray node this process runs on; None outside a Ray cluster."""
    try:
        import ray
    except ImportError:  # pragma: no cover - plain use in tests
        return None
    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
