"""BIND query logs: RFC 5424 syslog, key=value message."""

from __future__ import annotations

from collections.abc import Callable

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant

VENDOR = "bind"
DATASET = "event"

_QTYPES = ("A",) * 12 + ("AAAA",) * 4 + ("HTTPS",) + ("TXT",) + ("MX",)
_RCODES = ("NOERROR",) * 180 + ("NXDOMAIN",) * 14 + ("SERVFAIL",) * 4 + ("REFUSED",) * 2


def format_line(m: Minute, ts: int, server: str, *, client: str, port: int, query: str,
                qtype: str, rcode: str, view: str, resolver: str, answers: int | None) -> str:
    # 30 = facility daemon, severity info; MSGID "query"; no structured data.
    head = (f"<30>1 {m.iso_at(ts)} {server} named 1187 query - client={client} port={port} "
            f"query={query} qtype={qtype} rcode={rcode} view={view} server={resolver}")
    # No answer section on failures: the field is absent, not zero.
    return head if answers is None else f"{head} answers={answers}"


class Dns(Source):
    vendor = VENDOR
    dataset = DATASET

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        w = self.w
        r = rnd()
        if r < 0.7:
            query, qtype = w.domains.draw(rnd)[0], _QTYPES[int(rnd() * len(_QTYPES))]
        elif r < 0.9:
            s = rnd()
            if s < 0.3:
                query, qtype = f"_ldap._tcp.dc._msdcs.{tn.domain}", "SRV"
            else:
                query, qtype = f"{tn.servers.draw(rnd).name.lower()}.{tn.domain}", "A"
        else:
            a = w.external_ips.draw(rnd).split(".")
            query, qtype = f"{a[3]}.{a[2]}.{a[1]}.{a[0]}.in-addr.arpa", "PTR"
        rcode = _RCODES[int(rnd() * len(_RCODES))]
        answers = (1 + int(rnd() * 4)) if rcode == "NOERROR" else None
        return format_line(m, ts, tn.dns_server.name, client=tn.workstation_ips[tn.ws.draw(rnd)],
                           port=1024 + int(rnd() * 64000), query=query, qtype=qtype, rcode=rcode,
                           view="internal", resolver=tn.dns_server.ip, answers=answers)
