"""Routes for operators: ``/healthz``, ``/readyz`` and ``/metrics``.

Outside the ``/api`` envelope on purpose: load balancers, orchestrators and
Prometheus read the status code and plain bodies, not ``verdict``.
``/healthz`` says the process answers; ``/readyz`` says 200 only when
answers are complete (``service/readiness.py``), 503 with the failing
checks otherwise. Both name damage the write-ahead log found that no
operator has acknowledged (``log_damage``: segments, offsets, sequences),
and tell nothing about data; they need no token.
``/metrics`` (Prometheus text format, ``service/metrics.py``) needs the
``metrics_token`` setting's bearer token, or comes from loopback when none
is set.
"""

from __future__ import annotations

import hmac
import ipaddress

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seclake.api.envelope import JSONResponse
from seclake.api.threads import in_thread
from seclake.service.metrics import CONTENT_TYPE


async def healthz(request: Request) -> Response:
    damage = await in_thread(request.app.state.services.readiness.log_damage)
    return JSONResponse({"status": "alive", "log_damage": damage} if damage else {"status": "alive"})


async def readyz(request: Request) -> Response:
    readiness = request.app.state.services.readiness
    checks = await in_thread(readiness.checks)
    ready = all(c.ok for c in checks)
    return JSONResponse(
        {"status": "ready" if ready else "not ready", "checks": [c.to_dict() for c in checks]},
        status_code=200 if ready else 503,
    )


async def metrics(request: Request) -> Response:
    services = request.app.state.services
    refusal = _refusal(request, services.settings.metrics_token)
    if refusal is not None:
        return refusal
    body = await in_thread(services.metrics.text)
    return Response(body, media_type=CONTENT_TYPE)


def _refusal(request: Request, token) -> Response | None:
    if token is not None:
        sent = request.headers.get("authorization", "")
        scheme, _, value = sent.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.get_secret_value().encode()):
            return None
        return Response("metrics: send the metrics_token setting's value as 'Authorization: Bearer <token>'\n",
                        status_code=401, headers={"WWW-Authenticate": "Bearer"}, media_type="text/plain")
    host = request.client.host if request.client else ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    return Response("metrics: answered to loopback clients only; set metrics_token to scrape from elsewhere\n",
                    status_code=403, media_type="text/plain")


def routes() -> list[Route]:
    return [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/readyz", readyz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
