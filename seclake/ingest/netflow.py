"""NetFlow v5, v9 and IPFIX export datagrams into flow records.

The version field (the first two bytes) tells them apart. v9 and IPFIX
describe their records with templates, kept per (exporter address,
source id / observation domain, template id) by ``Templates``; data that
arrives before its template is held up to ``HOLD_SECONDS`` and then
counted as dropped. Options data gives the exporter's system start time
(IPFIX times relative to it) and its sampling interval, which is applied
to bytes and packets and recorded in ``samplingRate``.

Each flow becomes a record of the flow dataset with the fields the flow
search uses (``sip, dip, sp, dp, prot, txB, txP, rxB, rxP, totalB, dur,
time_ms``: a NetFlow flow is one direction, what ``sip`` sent) plus
``tcpFlags``, ``tos``, ``inIf``/``outIf`` where the exporter sends them.

Written by hand: the formats are small and fixed (RFC 3954, RFC 7011, the
v5 layout), a parser is one screen, and the Python packages for them
either parse pcaps or pull in a whole collector.
"""

from __future__ import annotations

import ipaddress
import struct
import time
from dataclasses import dataclass, field
from typing import Any

HOLD_SECONDS = 2.0
MAX_HELD = 1000
MAX_TEMPLATES = 10_000

# Information elements used (the same numbers in v9 and IPFIX).
BYTES, PACKETS, PROTOCOL, TOS, TCP_FLAGS, SRC_PORT, SRC_V4, IN_IF, DST_PORT, DST_V4, OUT_IF = 1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 14
LAST_UPTIME, FIRST_UPTIME, SRC_V6, DST_V6, SAMPLING_V9 = 21, 22, 27, 28, 34
BYTES_TOTAL, PACKETS_TOTAL = 85, 86
START_S, END_S, START_MS, END_MS, SYSTEM_INIT_MS = 150, 151, 152, 153, 160
SAMPLING_INTERVAL, SAMPLING_PACKET_INTERVAL, SAMPLING_PACKET_SPACE = 50, 305, 306

_V5_HEADER = struct.Struct("!HHIIIIBBH")
_V5_RECORD = struct.Struct("!4s4s4sHHIIIIHHxBBBHHBBxx")


class NetflowError(ValueError):
    """A datagram that is not a NetFlow/IPFIX export, or is cut short."""


@dataclass
class Decoded:
    flows: list[dict[str, Any]] = field(default_factory=list)
    held: int = 0  # data sets waiting for their template
    dropped: int = 0  # flows given up (template never came)
    version: int = 0


@dataclass
class _Exporter:
    """What options data told about one exporter domain."""

    system_init_ms: int | None = None
    sampling: int = 1


class Templates:
    """Templates and options per exporter domain, and data waiting for a template."""

    def __init__(self) -> None:
        self.templates: dict[tuple, list[tuple[int, int]]] = {}
        self.options: dict[tuple, tuple[list[tuple[int, int]], int]] = {}
        self.exporters: dict[tuple, _Exporter] = {}
        self.held: list[tuple[float, tuple, bytes, dict[str, Any]]] = []

    def exporter(self, domain: tuple) -> _Exporter:
        found = self.exporters.get(domain)
        if found is None:
            found = self.exporters[domain] = _Exporter()
        return found

    def expire(self, now: float | None = None) -> int:
        """Give up data held longer than HOLD_SECONDS; how many data sets."""
        now = time.monotonic() if now is None else now
        kept = [h for h in self.held if now - h[0] <= HOLD_SECONDS]
        gone = len(self.held) - len(kept)
        self.held = kept
        return gone


def decode(data: bytes, exporter: str, templates: Templates, now_ms: int | None = None) -> Decoded:
    """The flows of one export datagram from ``exporter`` (its address)."""
    if len(data) < 4:
        raise NetflowError(f"{len(data)} bytes: too short for a NetFlow header")
    version = struct.unpack_from("!H", data)[0]
    out = Decoded(version=version)
    if version == 5:
        out.flows = _v5(data)
    elif version == 9:
        _v9(data, exporter, templates, out)
    elif version == 10:
        _ipfix(data, exporter, templates, out)
    else:
        raise NetflowError(f"version {version} is not NetFlow v5, v9 or IPFIX (10)")
    out.dropped += templates.expire()
    return out


# -- v5 ---------------------------------------------------------------------------


def _v5(data: bytes) -> list[dict[str, Any]]:
    if len(data) < _V5_HEADER.size:
        raise NetflowError("v5 header cut short")
    _v, count, uptime, secs, nsecs, _seq, _etype, _eid, sampling = _V5_HEADER.unpack_from(data)
    if len(data) < _V5_HEADER.size + count * _V5_RECORD.size:
        raise NetflowError(f"v5 datagram says {count} records but holds {len(data) - _V5_HEADER.size} bytes of them")
    boot_ms = secs * 1000 + nsecs // 1_000_000 - uptime
    rate = sampling & 0x3FFF or 1
    flows = []
    for i in range(count):
        (src, dst, _hop, in_if, out_if, packets, octets, first, last, sport, dport, flags, prot, tos,
         _sas, _das, _smask, _dmask) = _V5_RECORD.unpack_from(data, _V5_HEADER.size + i * _V5_RECORD.size)
        flows.append(_flow(
            str(ipaddress.IPv4Address(src)), str(ipaddress.IPv4Address(dst)), sport, dport, prot, octets * rate,
            packets * rate, boot_ms + first, boot_ms + last, rate, flags=flags, tos=tos, in_if=in_if, out_if=out_if))
    return flows


# -- v9 and IPFIX ---------------------------------------------------------------------


def _v9(data: bytes, exporter: str, templates: Templates, out: Decoded) -> None:
    if len(data) < 20:
        raise NetflowError("v9 header cut short")
    _v, _count, uptime, secs, _seq, source_id = struct.unpack_from("!HHIIII", data)
    context = {"boot_ms": secs * 1000 - uptime, "export_ms": secs * 1000}
    _sets(data, 20, (exporter, 9, source_id), templates, out, context, ipfix=False)


def _ipfix(data: bytes, exporter: str, templates: Templates, out: Decoded) -> None:
    if len(data) < 16:
        raise NetflowError("IPFIX header cut short")
    _v, length, export_s, _seq, domain = struct.unpack_from("!HHIII", data)
    if length > len(data) or length < 16:
        raise NetflowError(f"IPFIX message says {length} bytes but {len(data)} arrived")
    context = {"boot_ms": None, "export_ms": export_s * 1000}
    _sets(data[:length], 16, (exporter, 10, domain), templates, out, context, ipfix=True)


def _sets(data: bytes, pos: int, domain: tuple, templates: Templates, out: Decoded, context: dict, *, ipfix: bool) -> None:
    template_set, options_set = (2, 3) if ipfix else (0, 1)
    while pos + 4 <= len(data):
        set_id, length = struct.unpack_from("!HH", data, pos)
        if length < 4 or pos + length > len(data):
            raise NetflowError(f"a set at byte {pos} says {length} bytes; {len(data) - pos} are left")
        body = data[pos + 4: pos + length]
        if set_id == template_set:
            _templates(body, domain, templates, ipfix)
            _release(domain, templates, out)
        elif set_id == options_set:
            _options_templates(body, domain, templates, ipfix)
            _release(domain, templates, out)
        elif set_id >= 256:
            _data(body, domain, set_id, templates, out, context, ipfix)
        pos += length


def _field_list(body: bytes, pos: int, count: int, ipfix: bool) -> tuple[list[tuple[int, int]], int]:
    fields = []
    for _ in range(count):
        if pos + 4 > len(body):
            raise NetflowError("a template is cut short")
        ie, size = struct.unpack_from("!HH", body, pos)
        pos += 4
        if ipfix and ie & 0x8000:  # an enterprise element: its number follows, and it is not ours
            pos += 4
            ie = -1
        fields.append((ie, size))
    return fields, pos


def _templates(body: bytes, domain: tuple, templates: Templates, ipfix: bool) -> None:
    pos = 0
    while pos + 4 <= len(body):
        template_id, count = struct.unpack_from("!HH", body, pos)
        if template_id < 256:
            return  # padding
        fields, pos = _field_list(body, pos + 4, count, ipfix)
        if len(templates.templates) < MAX_TEMPLATES or (*domain, template_id) in templates.templates:
            templates.templates[(*domain, template_id)] = fields


def _options_templates(body: bytes, domain: tuple, templates: Templates, ipfix: bool) -> None:
    pos = 0
    while pos + 6 <= len(body):
        if ipfix:
            template_id, count, _scopes = struct.unpack_from("!HHH", body, pos)
            if template_id < 256:
                return
            fields, pos = _field_list(body, pos + 6, count, ipfix)
        else:
            template_id, scope_bytes, option_bytes = struct.unpack_from("!HHH", body, pos)
            if template_id < 256:
                return
            fields, pos = _field_list(body, pos + 6, (scope_bytes + option_bytes) // 4, ipfix)
        if len(templates.options) < MAX_TEMPLATES:
            templates.options[(*domain, template_id)] = (fields, 0)


def _release(domain: tuple, templates: Templates, out: Decoded) -> None:
    """Decode held data whose template has now arrived."""
    waiting, templates.held = [h for h in templates.held if h[1][:3] == domain], [h for h in templates.held if h[1][:3] != domain]
    for _at, key, body, context in waiting:
        if key in templates.templates or key in templates.options:
            _data(body, domain, key[3], templates, out, context, key[1] == 10)
        else:
            templates.held.append((_at, key, body, context))


def _values(body: bytes, pos: int, fields: list[tuple[int, int]]) -> tuple[dict[int, bytes], int]:
    values = {}
    for ie, size in fields:
        if size == 65535:  # IPFIX variable length
            if pos >= len(body):
                raise NetflowError("a variable-length field is cut short")
            size, pos = body[pos], pos + 1
            if size == 255:
                size, pos = struct.unpack_from("!H", body, pos)[0], pos + 2
        if pos + size > len(body):
            raise NetflowError("a data record is cut short")
        values[ie] = body[pos: pos + size]
        pos += size
    return values, pos


def _data(body: bytes, domain: tuple, template_id: int, templates: Templates, out: Decoded, context: dict,
          ipfix: bool) -> None:
    key = (*domain, template_id)
    options = templates.options.get(key)
    if options is not None:
        _options_data(body, domain, options[0], templates)
        return
    fields = templates.templates.get(key)
    if fields is None:
        if len(templates.held) < MAX_HELD:
            templates.held.append((time.monotonic(), key, body, context))
            out.held += 1
        else:
            out.dropped += 1
        return
    minimum = sum(1 if size == 65535 else size for _, size in fields)
    if minimum == 0:
        return
    exporter = templates.exporter(domain)
    pos = 0
    while len(body) - pos >= minimum:
        values, pos = _values(body, pos, fields)
        flow = _from_values(values, context, exporter)
        if flow is not None:
            out.flows.append(flow)


def _options_data(body: bytes, domain: tuple, fields: list[tuple[int, int]], templates: Templates) -> None:
    size = sum(s for _, s in fields)
    if size == 0 or any(s == 65535 for _, s in fields):
        return
    exporter = templates.exporter(domain)
    pos = 0
    while len(body) - pos >= size:
        values, pos = _values(body, pos, fields)
        if SYSTEM_INIT_MS in values:
            exporter.system_init_ms = _int(values[SYSTEM_INIT_MS])
        for ie in (SAMPLING_INTERVAL, SAMPLING_V9, SAMPLING_PACKET_SPACE):
            if ie in values:
                interval = _int(values[ie])
                if ie == SAMPLING_PACKET_SPACE:  # one of (interval + space) packets sampled
                    interval = (_int(values.get(SAMPLING_PACKET_INTERVAL, b"\x01")) or 1) + interval
                exporter.sampling = max(1, interval)


def _int(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def _address(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw))
    if len(raw) == 16:
        return str(ipaddress.IPv6Address(raw))
    return None


def _from_values(values: dict[int, bytes], context: dict, exporter: _Exporter) -> dict[str, Any] | None:
    sip = _address(values.get(SRC_V4)) or _address(values.get(SRC_V6))
    dip = _address(values.get(DST_V4)) or _address(values.get(DST_V6))
    if sip is None or dip is None:
        return None  # not an IP flow (or a record of another kind)
    boot = context["boot_ms"] if context["boot_ms"] is not None else exporter.system_init_ms
    start = _time(values, START_MS, START_S, FIRST_UPTIME, boot, context["export_ms"])
    end = _time(values, END_MS, END_S, LAST_UPTIME, boot, context["export_ms"])
    rate = exporter.sampling
    octets = _int(values.get(BYTES) or values.get(BYTES_TOTAL) or b"\0")
    packets = _int(values.get(PACKETS) or values.get(PACKETS_TOTAL) or b"\0")
    return _flow(sip, dip, _int(values.get(SRC_PORT, b"\0")), _int(values.get(DST_PORT, b"\0")),
                 _int(values.get(PROTOCOL, b"\0")), octets * rate, packets * rate, start, max(end, start), rate,
                 flags=_int(values[TCP_FLAGS]) if TCP_FLAGS in values else None,
                 tos=_int(values[TOS]) if TOS in values else None,
                 in_if=_int(values[IN_IF]) if IN_IF in values else None,
                 out_if=_int(values[OUT_IF]) if OUT_IF in values else None)


def _time(values: dict[int, bytes], ms: int, seconds: int, uptime: int, boot: int | None, default: int) -> int:
    """A flow time in epoch ms from whichever element the template has."""
    if ms in values:
        return _int(values[ms])
    if seconds in values:
        return _int(values[seconds]) * 1000
    if uptime in values and boot is not None:
        return boot + _int(values[uptime])
    return default


def _flow(sip: str, dip: str, sport: int, dport: int, prot: int, octets: int, packets: int, start_ms: int,
          end_ms: int, rate: int, *, flags: int | None = None, tos: int | None = None, in_if: int | None = None,
          out_if: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "sip": sip, "dip": dip, "sp": sport, "dp": dport, "prot": prot, "txB": octets, "txP": packets,
        "rxB": 0, "rxP": 0, "totalB": octets, "dur": max(0, end_ms - start_ms), "time_ms": start_ms,
    }
    if rate > 1:
        out["samplingRate"] = rate
    for name, value in (("tcpFlags", flags), ("tos", tos), ("inIf", in_if), ("outIf", out_if)):
        if value is not None:
            out[name] = value
    return out
