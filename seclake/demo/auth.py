"""Authentication logs: Linux sshd (RFC 3164 syslog) and Windows logons (JSON).

Windows lines use the seclake event shape (``@fields`` holds the event data)
with an epoch-millisecond ``@timestamp``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from seclake.demo.clock import Minute
from seclake.demo.vocabulary import Source, Tenant

SSHD = "sshd"
WINDOWS = "windows"
DATASET = "event"

_HEX = "0123456789abcdef"
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def format_sshd(m: Minute, ts: int, host: str, pid: int, message: str) -> str:
    # 38 = facility auth, severity info.
    return f"<38>{m.rfc3164_at(ts)} {host} sshd[{pid}]: {message}"


def format_windows(ts: int, customer: str, computer: str, fields: dict[str, Any]) -> str:
    return orjson.dumps({
        "@timestamp": ts, "@customer": customer, "@type": "event", "@source": "windows",
        "@sender": computer, "@tags": ["windows", "security"], "@fields": fields,
    }).decode()


def logon_fields(event_id: int, computer: str, user: str, domain: str, *, ip: str | None = None,
                 port: int | None = None, logon_type: int | str = 3, workstation: str | None = None,
                 status: str | None = None, as_strings: bool = False) -> dict[str, Any]:
    """Fields of a 4624 (success), 4625 (failure) or 4634 (logoff) event."""
    f: dict[str, Any] = {"EventID": str(event_id) if as_strings else event_id,
                         "Computer": computer, "TargetUserName": user, "TargetDomainName": domain,
                         "LogonType": str(logon_type) if as_strings else logon_type}
    if event_id == 4634:  # a logoff says nothing about where the session came from
        return f
    f["IpAddress"] = ip if ip is not None else "-"
    f["IpPort"] = str(port) if port is not None else "-"  # Windows itself writes the port as a string
    network = ip is not None
    f["LogonProcessName"] = "NtLmSsp" if network else "User32"
    f["AuthenticationPackageName"] = "NTLM" if network and logon_type in (3, "3") else "Negotiate"
    if workstation is not None:
        f["WorkstationName"] = workstation
    if event_id == 4625:
        f["Status"] = "0xc000006d"
        f["SubStatus"] = status or "0xc000006a"
    return f


class Sshd(Source):
    vendor = SSHD
    dataset = DATASET

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        w = self.w
        port = 1024 + int(rnd() * 64000)
        r = rnd()
        if r < 0.63:  # internet noise against the exposed bastion
            host = tn.linux.values[0].name
            guess, src = w.ssh_guesses.draw(rnd), w.scanners.draw(rnd)
            if r < 0.45:
                msg = f"Failed password for invalid user {guess} from {src} port {port} ssh2"
            elif r < 0.55:
                msg = f"Invalid user {guess} from {src} port {port}"
            else:
                msg = f"Connection closed by invalid user {guess} {src} port {port} [preauth]"
        else:
            host = tn.linux.draw(rnd).name
            if rnd() < 0.6:
                user, src = w.linux_users.draw(rnd), tn.jump_host.ip
            else:
                i = tn.ws.draw(rnd)
                user, src = tn.owners[i], tn.workstation_ips[i]
            if r < 0.8:
                if user in ("deploy", "ansible", "jenkins", "backup", "root", "ubuntu"):
                    fp = "".join(_B64[int(rnd() * 64)] for _ in range(43))
                    msg = f"Accepted publickey for {user} from {src} port {port} ssh2: RSA SHA256:{fp}"
                else:
                    msg = f"Accepted password for {user} from {src} port {port} ssh2"
            elif r < 0.92:
                uid = 0 if user == "root" else 1000 + sum(map(ord, user)) % 500
                msg = f"pam_unix(sshd:session): session opened for user {user}(uid={uid}) by (uid=0)"
            else:
                msg = f"Disconnected from user {user} {src} port {port}"
        return format_sshd(m, ts, host, 1000 + int(rnd() * 64000), msg)


class Windows(Source):
    vendor = WINDOWS
    dataset = DATASET

    def line(self, ts: int, m: Minute, tn: Tenant, rnd: Callable[[], float]) -> str:
        dc = tn.dcs.draw(rnd)
        computer = f"{dc.name}.{tn.domain}"
        as_strings = rnd() < 0.3
        r = rnd()
        i = tn.ws.draw(rnd)
        user = tn.owners[i] if rnd() < 0.8 else tn.users.draw(rnd)
        if r < 0.02:
            # Administrators sign in only from the jump host: the baseline
            # the "admin from a new address" episode stands out against.
            f = logon_fields(4624, computer, "Administrator", tn.netbios, ip=tn.jump_host.ip,
                             port=49152 + int(rnd() * 16000), logon_type=10,
                             workstation=tn.jump_host.name, as_strings=as_strings)
        elif r < 0.6:
            lt = 3 if rnd() < 0.8 else 2
            if lt == 2:
                f = logon_fields(4624, computer, user, tn.netbios, logon_type=2,
                                 workstation=tn.workstations[i], as_strings=as_strings)
            else:
                f = logon_fields(4624, computer, user, tn.netbios, ip=tn.workstation_ips[i],
                                 port=49152 + int(rnd() * 16000), logon_type=3,
                                 workstation=tn.workstations[i], as_strings=as_strings)
        elif r < 0.66:
            f = logon_fields(4625, computer, user, tn.netbios, ip=tn.workstation_ips[i],
                             port=49152 + int(rnd() * 16000), logon_type=3,
                             workstation=tn.workstations[i],
                             status="0xc000006a" if rnd() < 0.9 else "0xc0000234", as_strings=as_strings)
        else:
            f = logon_fields(4634, computer, user, tn.netbios, logon_type=3, as_strings=as_strings)
        return format_windows(ts, tn.name, computer, f)
