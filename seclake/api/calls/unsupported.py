"""Calls the clients of the original service send that seclake does not serve.

Each is answered with a clear ERROR that names the call and says what to use
instead, rather than the bare "unknown call" a misspelt name gets: a user of
an existing client should learn at once that the feature is not here. The
status it stands for is 404 (``X-Seclake-Status``), like an unknown call.
"""

from __future__ import annotations

UNSUPPORTED: dict[str, str] = {
    "auth/setUserSitePolicy": (
        "site policies (one user across several accounts) are not part of seclake; restrict what a user sees "
        "with data policies (auth/userUpdate with user.dataPolicies)"
    ),
    "ds/kql_search": (
        "KQL is not supported; search with a Lucene query (ds/get_index_zoom_histogram_lv3, options.searchStr)"
    ),
    "ds/kql_validate": (
        "KQL is not supported; a Lucene query's syntax error comes back from ds/get_index_zoom_histogram_lv3 "
        "with its position"
    ),
    "ds/get_system_status": (
        "seclake runs no collectors whose status could be asked; the server's own state is in its log"
    ),
}


def unsupported_reason(name: str) -> str | None:
    return UNSUPPORTED.get(name)
