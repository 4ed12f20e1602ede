"""Trusted reverse proxies: which peers' X-Forwarded-For names the client.

The client address decides login lockouts, the audit's `client` and who
/metrics answers without a token. Behind a reverse proxy every request
comes from the proxy, so one address would stand for every client (100
guesses from anyone lock everyone out); a forwarding header from anyone
else is the client's own word, and trusting it would let a guesser take a
new address with each request.

So the header is read only from the peers of the setting
``trusted_proxies``, right to left, skipping those proxies: the first
address no trusted proxy wrote is the client (uvicorn's
ProxyHeadersMiddleware, which this uses; werkzeug's ProxyFix reads it the
same way). What a client writes in front of the header is never reached.
The server's own header handling is off (``seclake serve``, and the tests'
servers), so the app decides alone whatever runs it.
"""

from __future__ import annotations

import ipaddress
from typing import Any


def check_proxies(values: list[Any]) -> list[str]:
    """The setting's entries as networks (``10.0.0.7`` is ``10.0.0.7/32``);
    a name or ``*`` is refused: every peer trusted would make the header
    anyone's word again, and names are not what a peer's address is."""
    networks = []
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"trusted_proxies[{i}] must be an IP address or network as a string, not {value!r}")
        try:
            networks.append(str(ipaddress.ip_network(value.strip(), strict=False)))
        except ValueError:
            raise ValueError(
                f"trusted_proxies[{i}] must be a proxy's IP address or network (such as 10.0.0.7 or "
                f"10.0.0.0/8), not {value[:100]!r}"
            ) from None
    return networks


def proxy_middleware(trusted: list[str]) -> list[Any]:
    """The app's middleware reading X-Forwarded-For from ``trusted`` peers; none when no proxy is trusted."""
    # Imported here: settings check the entries at every command's start.
    from starlette.middleware import Middleware
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    return [Middleware(ProxyHeadersMiddleware, trusted_hosts=trusted)] if trusted else []
