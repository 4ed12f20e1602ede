"""FortiGate traffic logs: RFC 3164 syslog header, key=value body.

The body has the keys FortiOS writes on every forward-traffic line
(``devname``, ``devid``, ``logid``, ``type``, ``subtype``, ``level``,
``vd``), so the FortiGate mapping gives it the common names like a real one.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant, World

VENDOR = "fortigate"
DATASET = "event"


def format_line(m: Minute, ts: int, devname: str, srcip: str, srcport: int, dstip: str,
                dstport: int, proto: int, action: str, service: str, policyid: int,
                duration: int | None = None, sentbyte: int | None = None,
                rcvdbyte: int | None = None) -> str:
    t = m.time_at(ts)
    deny = action == "deny"
    head = (f"<{188 if deny else 189}>{m.rfc3164}{t[6:]} {devname} "
            f'date={m.date} time={t} tz="+0000" devname="{devname}" devid="{serial_of(devname)}" '
            f'logid="0000000013" type="traffic" subtype="forward" level="{"warning" if deny else "notice"}" '
            f'vd="root" srcip={srcip} srcport={srcport} dstip={dstip} dstport={dstport} proto={proto} '
            f'action="{action}" policyid={policyid} service="{service}"')
    # Denied sessions never carried data, so FortiGate leaves the counters out.
    if sentbyte is None:
        return head
    return f"{head} duration={duration} sentbyte={sentbyte} rcvdbyte={rcvdbyte}"


def serial_of(devname: str) -> str:
    """A stable FortiGate-style serial number for a demo device name."""
    return f"FG100E{zlib.crc32(devname.encode()) % 10**10:010d}"


class Firewall(Source):
    vendor = VENDOR
    dataset = DATASET

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self._internal = tuple(s for s in world.services.values if s[0] in
                               ("SMB", "LDAP", "KERBEROS", "DNS", "MS-SQL", "HTTPS", "RDP", "WINRM"))

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        w = self.w
        r = rnd()
        i = tn.ws.draw(rnd)
        if r < 0.75:  # outbound: a workstation to the internet
            service, port, proto = w.services.draw(rnd)
            srcip, dstip = tn.workstation_ips[i], w.external_ips.draw(rnd)
            policyid = 12
            a = rnd()
            action = "close" if a < 0.55 else "accept" if a < 0.95 else "deny"
        elif r < 0.9:  # east-west: a workstation to a server
            service, port, proto = self._internal[int(rnd() * len(self._internal))]
            srcip, dstip = tn.workstation_ips[i], tn.servers.draw(rnd).ip
            policyid = 3
            action = "close" if rnd() < 0.7 else "accept"
        else:  # inbound internet noise against the public address
            service, port, proto = w.services.draw(rnd)
            srcip, dstip = w.scanners.draw(rnd), tn.public_ip
            if port == 443 and proto == 6 and rnd() < 0.5:
                policyid, action = 20, "accept"
            else:
                policyid, action = 0, "deny"
        if proto == 1:
            port = 0
        srcport = 1024 + int(rnd() * 64000)
        # Positional arguments: this runs for a quarter of all lines.
        if action == "deny":
            return format_line(m, ts, tn.firewalls.draw(rnd), srcip, srcport, dstip, port, proto, action,
                               service, policyid)
        # Heavy-tailed sizes: most sessions are small, a few are large.
        return format_line(m, ts, tn.firewalls.draw(rnd), srcip, srcport, dstip, port, proto, action,
                           service, policyid, int(rnd() ** 3 * 600) + 1, int(120 * 10 ** (rnd() * 3.5)),
                           int(300 * 10 ** (rnd() * 4.5)))
