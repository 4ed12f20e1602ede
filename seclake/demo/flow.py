"""NetFlow records as JSON lines of the flow dataset.

Half the records keep their fields in ``@fields``, half in the original
service's ``@metaflow.flow`` layout, so both paths of the flow dataset get
exercised. Directions are from the flow's source: ``txB``/``txP`` are what
``sip`` sent, ``rxB``/``rxP`` what it received.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant

VENDOR = "netflow"
DATASET = "flow"


def flow_fields(ts: int, sip: str, dip: str, sp: int, dp: int, prot: int, txB: int, rxB: int,
                txP: int, rxP: int, dur: int) -> dict[str, Any]:
    return {"sip": sip, "dip": dip, "sp": sp, "dp": dp, "prot": prot, "rxB": rxB, "txB": txB,
            "totalB": rxB + txB, "rxP": rxP, "txP": txP, "dur": dur, "time_ms": ts}


def format_line(ts: int, customer: str, exporter: str, fields: dict[str, Any], metaflow: bool) -> str:
    rec: dict[str, Any] = {"@type": "flow", "@timestamp": ts, "@customer": customer,
                           "@source": "netflow", "@sender": exporter}
    if metaflow:
        rec["@metaflow"] = {"flow": fields}
    else:
        rec["@fields"] = fields
    return orjson.dumps(rec).decode()


class Flow(Source):
    vendor = VENDOR
    dataset = DATASET

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        w = self.w
        r = rnd()
        i = tn.ws.draw(rnd)
        _, dp, prot = w.services.draw(rnd)
        if r < 0.7:
            sip, dip = tn.workstation_ips[i], w.external_ips.draw(rnd)
        elif r < 0.95:
            sip, dip = tn.workstation_ips[i], tn.servers.draw(rnd).ip
        else:
            sip, dip = w.scanners.draw(rnd), tn.public_ip
        tx = int(60 * 10 ** (rnd() * 4))
        rx = int(60 * 10 ** (rnd() * 5)) if r < 0.95 else int(rnd() * 2) * 40
        fields = flow_fields(ts, sip, dip, 0 if prot == 1 else 1024 + int(rnd() * 64000), dp, prot,
                             tx, rx, 1 + tx // 1200, (rx + 1199) // 1200, int(rnd() ** 3 * 120_000))
        return format_line(ts, tn.name, tn.flow_exporter, fields, rnd() < 0.5)
