"""Suricata alerts as CEF lines (ArcSight Common Event Format, no syslog header)."""

from __future__ import annotations

from collections.abc import Callable

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant

VENDOR = "suricata"
DATASET = "event"


def cef_header(value: str) -> str:
    return value.replace("\\", "\\\\").replace("|", "\\|")


def cef_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("=", "\\=").replace("\n", "\\n")


def format_line(ts: int, *, sid: int, name: str, severity: int, category: str, proto: str,
                src: str, spt: int | None, dst: str, dpt: int | None, sensor: str, flow_id: int,
                action: str = "allowed") -> str:
    # ICMP has no ports: the keys are left out, not set to zero.
    sport = "" if spt is None else f" spt={spt}"
    dport = "" if dpt is None else f" dpt={dpt}"
    return (f"CEF:0|OISF|Suricata|7.0.3|{sid}|{cef_header(name)}|{severity}|"
            f"rt={ts} src={src}{sport} dst={dst}{dport} proto={proto} act={action} "
            f"cat={cef_value(category)} dvchost={sensor} cs1Label=flowId cs1={flow_id} cn1Label=rev cn1=3")


class Ids(Source):
    vendor = VENDOR
    dataset = DATASET

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        w = self.w
        sid, name, sev, cat, proto, dport = w.signatures.draw(rnd)
        inbound = name.startswith("ET SCAN")
        ws = tn.workstation_ips[tn.ws.draw(rnd)]
        src, dst = (w.scanners.draw(rnd), tn.public_ip) if inbound else (ws, w.external_ips.draw(rnd))
        if proto == "ICMP":
            spt = dpt = None
        else:
            spt, dpt = 1024 + int(rnd() * 64000), dport or 1024 + int(rnd() * 64000)
        return format_line(ts, sid=sid, name=name, severity=sev, category=cat, proto=proto, src=src,
                           spt=spt, dst=dst, dpt=dpt, sensor=tn.ids_sensor,
                           flow_id=int(rnd() * 2**50))
