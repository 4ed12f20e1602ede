"""Cluster mode: searcher actors on a Ray cluster run the leaves of every search.

    rendezvous.py   which searcher serves which split (highest random weight)
    fanout.py       one search over many searchers: deadline, one retry, failures
    splitcache.py   the splits a searcher keeps open
    searcher.py     the searcher actor, and starting them on a node
    leaves.py       the root's side: live searchers, the Ray leaf executor
    catalogview.py  the splits and time bounds an API node that does not write the lake reads

Ray is an optional dependency (``pip install "seclake[cluster]"``); only
``searcher.py`` and ``leaves.py`` import it, and only when cluster mode is used.
See docs/deploy-cluster.md.
"""

# Every seclake actor lives in this Ray namespace; searchers are named
# ``searcher-<node id prefix>-<n>`` so any driver can list them.
NAMESPACE = "seclake"
SEARCHER_PREFIX = "searcher-"
