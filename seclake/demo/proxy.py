"""Squid access logs as flat JSON lines (ISO @timestamp)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant

VENDOR = "squid"
DATASET = "event"

_METHODS = ("GET",) * 10 + ("CONNECT",) * 6 + ("POST",) * 3 + ("HEAD", "PUT", "OPTIONS")
_STATUSES = (200,) * 40 + (304,) * 6 + (204,) * 4 + (302,) * 4 + (301, 404, 404, 403, 401, 500, 502, 503, 407)
_TYPES = ("text/html", "application/json", "image/png", "application/javascript", "text/css",
          "image/jpeg", "application/octet-stream")


def format_line(m: Minute, ts: int, customer: str, client_ip: str, user: str | None, method: str,
                host: str, url: str, status: int | str, nbytes: int | str, category: str,
                user_agent: str | None, elapsed_ms: int, result: str,
                content_type: str | None) -> str:
    rec: dict[str, Any] = {"@timestamp": m.iso_at(ts), "@customer": customer, "client_ip": client_ip}
    if user is not None:
        rec["user"] = user
    rec["method"] = method
    rec["url"] = url
    rec["host"] = host
    rec["status"] = status
    rec["bytes"] = nbytes
    rec["category"] = category
    if user_agent is not None:
        rec["user_agent"] = user_agent
    rec["elapsed_ms"] = elapsed_ms
    rec["result"] = result
    if content_type is not None:
        rec["content_type"] = content_type
    return orjson.dumps(rec).decode()


class Proxy(Source):
    vendor = VENDOR
    dataset = DATASET

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        w = self.w
        i = tn.ws.draw(rnd)
        host, category = w.domains.draw(rnd)
        method = _METHODS[int(rnd() * len(_METHODS))]
        if method == "CONNECT":
            url, status, ctype = f"{host}:443", 200, None
            result = "TCP_TUNNEL"
        else:
            url = f"https://{host}{w.url_paths.draw(rnd)}"
            status = _STATUSES[int(rnd() * len(_STATUSES))]
            ctype = _TYPES[int(rnd() * len(_TYPES))]
            result = "TCP_HIT" if rnd() < 0.15 else "TCP_MISS"
        nbytes = int(200 * 10 ** (rnd() * 4))
        r = rnd()
        # Unauthenticated requests (health checks, update agents) carry no user.
        user = None if r < 0.1 else tn.owners[i] if r < 0.85 else tn.users.draw(rnd)
        # Some collectors ship every value as a string.
        if rnd() < 0.3:
            status, nbytes = str(status), str(nbytes)
        ua = None if rnd() < 0.05 else w.user_agents.draw(rnd)
        return format_line(m, ts, tn.name, tn.workstation_ips[i], user, method, host, url, status, nbytes,
                           category, ua, int(rnd() ** 2 * 3000), f"{result}/{status}", ctype)
