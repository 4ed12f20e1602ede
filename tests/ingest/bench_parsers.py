"""Lines per second of each parser, on one core: ``python tests/ingest/bench_parsers.py [N]``.

Not a test (pytest does not collect it): numbers depend on the machine, so
each figure is the best of five runs (noise from other processes only ever
slows a run down). It
times ``parse_line`` alone and the whole path a body takes
(``iter_lines`` + ``iter_records``, plain and gzip) for realistic lines that
vary per line (addresses, ports, users), so no cache flatters the result.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections.abc import Callable

from seclake.ingest import IngestCounts, iter_lines, iter_records, parse_line

RECEIVED = 1714564801000


def _ip(i: int) -> str:
    return f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


SAMPLES: dict[str, tuple[str, Callable[[int], str]]] = {
    "syslog3164": (
        "event",
        lambda i: f"<38>May  1 11:{i // 60 % 60:02d}:{i % 60:02d} web{i % 50:02d} sshd[{4000 + i % 900}]: "
        f"Failed password for invalid user admin{i % 97} from {_ip(i)} port {1024 + i % 60000} ssh2",
    ),
    "syslog5424": (
        "event",
        lambda i: f'<165>1 2024-05-01T11:59:{i % 60:02d}.{i % 1000:03d}Z host{i % 50} evntslog {i % 9999} ID47 '
        f'[exampleSDID@32473 iut="3" eventSource="Application" eventID="{i % 5000}"] An application event {i}',
    ),
    "cef": (
        "event",
        lambda i: f"CEF:0|Suricata|Suricata IDS|6.0.10|{2019000 + i % 500}|ET SCAN Possible Nmap User-Agent|7|"
        f"src={_ip(i)} spt={1024 + i % 60000} dst=10.0.0.20 dpt=80 proto=TCP act=alert "
        f"cs1Label=classification cs1=Web Application Attack rt={1714564740000 + i} dvchost=ids{i % 4}",
    ),
    "syslog+cef": (
        "event",
        lambda i: f"<134>May  1 11:59:58 edr{i % 20} CEF:0|CrowdStrike|FalconHost|1.0|5|Detection Summary|High|"
        f"suser=CORP\\\\user{i % 300} shost=LAPTOP-{i % 700} fname=evil{i % 9}.exe act=quarantined",
    ),
    "kv": (
        "event",
        lambda i: f'date=2024-05-01 time=11:59:{i % 60:02d} devname="FGT60E-HQ" devid="FGT60ETK19000001" '
        f'eventtime={1714564740123456789 + i * 1000} tz="+0000" logid="0000000013" type="traffic" '
        f'subtype="forward" level="notice" vd="root" srcip={_ip(i)} srcport={1024 + i % 60000} '
        f'srcintf="internal" dstip=8.8.{i % 256}.8 dstport=53 dstintf="wan1" proto=17 action="deny" '
        f'policyid={i % 40} service="DNS" duration={i % 100} sentbyte={i % 5000} rcvdbyte={i % 9000}',
    ),
    "jsonl-flat": (
        "event",
        lambda i: json.dumps(
            {
                "timestamp": f"2024-05-01T11:59:{i % 60:02d}Z",
                "host": f"dc{i % 8}",
                "EventID": 4625,
                "TargetUserName": f"user{i % 300}",
                "IpAddress": _ip(i),
                "LogonType": 3,
                "Process": {"Name": "lsass.exe", "Id": i % 9000},
            }
        ),
    ),
    "jsonl-shaped": (
        "event",
        lambda i: json.dumps(
            {
                "@timestamp": 1714564740000 + i,
                "@message": f"Failed password for user{i % 300} from {_ip(i)}",
                "@sender": f"web{i % 50}",
                "@facility": "auth",
                "@tags": ["linux"],
                "@fields": {"user": f"user{i % 300}", "src": _ip(i), "port": 22},
            }
        ),
    ),
    "flow-metaflow": (
        "flow",
        lambda i: json.dumps(
            {
                "@timestamp": 1714564740000 + i,
                "@metaflow": {
                    "flow": {
                        "sip": _ip(i), "dip": "1.1.1.1", "sp": 1024 + i % 60000, "dp": 443, "prot": 6,
                        "rxB": i % 100000, "txB": i % 7000, "totalB": i % 107000, "rxP": i % 80,
                        "txP": i % 60, "dur": i % 3000, "time_ms": 1714564740000 + i,
                    }
                },
            }
        ),
    ),  # fmt: skip
    "raw": ("event", lambda i: f"2024-05-01 11:59:00,{i % 1000:03d} INFO [main-{i % 8}] request {i} served in {i % 97} ms"),
}


def _best(run: Callable[[], None], repeats: int) -> float:
    """Fastest of several runs: other processes only ever slow a run down."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def bench(n: int, repeats: int = 5) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, (dataset, make) in SAMPLES.items():
        lines = [make(i) for i in range(n)]

        def parse_all() -> None:
            for line in lines:
                parse_line(line, vendor="bench", dataset=dataset, received_ms=RECEIVED)

        rates = {"parse_line": n / _best(parse_all, repeats)}
        body = ("\n".join(lines) + "\n").encode()
        for label, data in (("stream", body), ("gzip", gzip.compress(body, compresslevel=6))):

            def stream(data: bytes = data) -> None:
                counts = IngestCounts()
                for _ in iter_records(
                    iter_lines(data, max_bytes=1 << 30),
                    vendor="bench",
                    dataset=dataset,
                    received_ms=RECEIVED,
                    counts=counts,
                ):
                    pass
                assert counts.accepted + counts.raw == n, (name, counts)

            rates[label] = n / _best(stream, repeats)
        out[name] = {**rates, "avg_bytes": len(body) / n}
    return out


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    print(f"{'format':<14} {'parse_line/s':>13} {'reader+parse/s':>15} {'gzip/s':>10} {'bytes/line':>11}")
    for name, r in bench(n).items():
        print(f"{name:<14} {r['parse_line']:>13,.0f} {r['stream']:>15,.0f} {r['gzip']:>10,.0f} {r['avg_bytes']:>11.0f}")
