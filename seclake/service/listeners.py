"""Syslog listeners: sources send to seclake directly over UDP, TCP or TLS.

Started with the server (setting ``listeners``, ``seclake serve --listen
URL``), one asyncio loop in a thread of its own for all of them. URLs:

- ``syslog+udp://HOST:PORT``: one message per datagram (lines split);
- ``syslog+tcp://HOST:PORT``: newline framing or RFC 6587 octet counting,
  told apart per connection by its first byte (a digit: octet counting);
- ``syslog+tls://HOST:PORT?cert=FILE&key=FILE[&ca=FILE]`` (RFC 5425; with
  ``ca`` the sender must show a certificate it signed);

- ``netflow://HOST:PORT``: NetFlow v5, v9 and IPFIX over UDP, told apart by
  the version field (``ingest/netflow.py``), stored as flows;

with ``vendor=`` (default ``syslog``, ``netflow``), ``customer=`` and ``type=event|flow``
query parameters, as an import's URL has, on TCP/TLS listeners the connection
limits ``max_connections=``, ``max_per_address=``, ``first_frame_seconds=`` and
``idle_seconds=`` (``LIMITS``), and on syslog listeners ``charset=``
(default ``utf-8``): RFC 3164 names no encoding, and devices and Windows
forwarders set up in Latin-1 or cp1252 still send it; read as UTF-8 their
accented letters would become U+FFFD. A frame that starts its message with
the UTF-8 byte-order mark (RFC 5424 6.4) is UTF-8 whatever the listener
says.

Messages go the way imports go: parsed (RFC 3164 and 5424, with key=value,
CEF or JSON inside; anything else kept raw), behavior rules, the write-ahead
log; the sending address is kept in ``@fields.log.source.address``. A batch
of 32 KiB and more (a busy TCP sender's read) is parsed in the parse workers
where the node has them (setting ``parse_workers``), as an import body of
that size is.

What each transport can lose, and how it is seen:

- UDP: datagrams the kernel drops when its buffer is full (not seen by
  seclake), datagrams beyond ``MAX_UDP_PENDING`` waiting to be stored
  (counted as dropped), and at a crash the datagrams of the last batch
  (at most ``UDP_FLUSH_SECONDS`` of them) not yet in the log;
- TCP/TLS: nothing read is lost: a connection's records are in the log
  before more is read from it, so when the lake is behind, senders wait
  (TCP back-pressure) instead of records being dropped; at a crash only
  what sits unread in socket buffers, which the sender counts as sent.

Faults stay inside: a malformed message is kept raw or counted as
rejected; a frame longer than ``MAX_FRAME`` is cut (newline framing) or
ends its connection (octet counting cannot find the next frame); a TLS
handshake failure is counted and logged. No connection is refused (the
kernel has accepted it: its sender's first messages would be lost unseen):
past ``max_per_address`` connections from one address, or
``max_connections`` on the listener, the oldest one of the fullest source
is closed to make room (``service/connections.py``); a connection with no
complete frame after ``first_frame_seconds``, or none for ``idle_seconds``
since its last, is closed too. A closed connection reads what its sender
wrote until then and keeps its unfinished frame, as at an end of stream.
Each is counted per listener (``ds/collector_list``, ``/metrics``) and
logged at most once a minute per kind.

Written over asyncio streams (the standard library's): the framing and
accounting are ours, and a syslog server library would bring its own
threads and queues in front of the log.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from seclake.ingest.netflow import HOLD_SECONDS, NetflowError, Templates
from seclake.ingest.netflow import decode as decode_netflow
from seclake.ingest.reader import Line, text_encoding
from seclake.ingest.record import new_record
from seclake.ingest.vendor import validate_vendor
from seclake.errors import SeclakeError, ValidationFailed
from seclake.service.connections import Connection, ConnectionTable
from seclake.service.ingestion import check_customer

log = logging.getLogger("seclake.listeners")

SCHEMES = ("syslog+udp", "syslog+tcp", "syslog+tls", "netflow")
MAX_FRAME = 64 * 1024
# Connection limits of a TCP/TLS listener, the defaults of its URL's parameters (docs/receivers.md).
MAX_CONNECTIONS = 1000
MAX_PER_ADDRESS = 100
FIRST_FRAME_SECONDS = 20.0  # a connection that sent no complete frame yet
IDLE_SECONDS = 600.0  # one that did: since its last complete frame
# A connection closed to make room still reads this long: bytes its sender wrote before (even before the
# listener saw the connection) are in the kernel's buffer, and would otherwise be answered with a reset, unstored.
CLOSE_GRACE_SECONDS = 0.1
FAULT_LOG_SECONDS = 60.0  # a fault kind is logged the first time, then at most this often with its count
TLS_HANDSHAKE_SECONDS = 10.0
MAX_UDP_PENDING = 50_000
UDP_FLUSH_SECONDS = 0.1
READ_BYTES = 256 * 1024


@dataclass(frozen=True)
class ListenerSpec:
    url: str
    scheme: str
    host: str
    port: int
    vendor: str = "syslog"
    dataset: str = "event"
    customer: str | None = None
    cert: str | None = None
    key: str | None = None
    ca: str | None = None
    charset: str = "utf-8"
    max_connections: int = MAX_CONNECTIONS
    max_per_address: int = MAX_PER_ADDRESS
    first_frame_seconds: float = FIRST_FRAME_SECONDS
    idle_seconds: float = IDLE_SECONDS

    @property
    def name(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    @classmethod
    def parse(cls, url: str) -> ListenerSpec:
        """A listener URL, or ValueError saying what is wrong with it."""
        parts = urlsplit(url.strip())
        if parts.scheme not in SCHEMES:
            raise ValueError(f"listener {url!r}: the scheme must be one of {', '.join(SCHEMES)}")
        try:
            port = parts.port
        except ValueError:
            port = None
        if not parts.hostname or port is None:
            raise ValueError(f"listener {url!r}: give HOST:PORT, e.g. {parts.scheme}://0.0.0.0:5514")
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        unknown = set(query) - {"vendor", "customer", "type", "cert", "key", "ca", "charset", *LIMITS}
        if unknown:
            raise ValueError(f"listener {url!r}: unknown parameter(s) {', '.join(sorted(unknown))}")
        dataset = query.get("type", "event")
        if dataset not in ("event", "flow"):
            raise ValueError(f"listener {url!r}: type must be event or flow")
        customer = query.get("customer")
        try:
            check_customer(customer)
        except ValidationFailed as e:
            raise ValueError(f"listener {url!r}: {e}") from None
        if parts.scheme == "netflow":
            if "type" in query and dataset != "flow":
                raise ValueError(f"listener {url!r}: NetFlow/IPFIX listeners store flows (type=flow)")
            dataset = "flow"
        try:
            vendor = validate_vendor(query.get("vendor", "netflow" if parts.scheme == "netflow" else "syslog"))
        except SeclakeError as e:
            raise ValueError(f"listener {url!r}: {e.message}") from None
        if parts.scheme == "syslog+tls" and not (query.get("cert") and query.get("key")):
            raise ValueError(f"listener {url!r}: TLS needs cert=FILE and key=FILE")
        if "charset" in query and parts.scheme == "netflow":
            raise ValueError(f"listener {url!r}: charset is for syslog listeners (NetFlow is binary)")
        return cls(url=url, scheme=parts.scheme, host=parts.hostname, port=port, vendor=vendor, dataset=dataset,
                   customer=customer, cert=query.get("cert"), key=query.get("key"), ca=query.get("ca"),
                   charset=_charset(url, query.get("charset")), **_limits(url, parts.scheme, query))

    def limits(self) -> dict[str, float] | None:
        """A TCP/TLS listener's connection limits, as ``ds/collector_list`` shows them."""
        if self.scheme not in STREAMS:
            return None
        return {"maxConnections": self.max_connections, "maxPerAddress": self.max_per_address,
                "firstFrameSeconds": self.first_frame_seconds, "idleSeconds": self.idle_seconds}


STREAMS = ("syslog+tcp", "syslog+tls")
# URL parameter -> (type, its default's module constant): read when a URL is parsed, so tests can patch them.
LIMITS = {"max_connections": (int, "MAX_CONNECTIONS"), "max_per_address": (int, "MAX_PER_ADDRESS"),
          "first_frame_seconds": (float, "FIRST_FRAME_SECONDS"), "idle_seconds": (float, "IDLE_SECONDS")}


def _limits(url: str, scheme: str, query: dict[str, str]) -> dict[str, float]:
    """A TCP/TLS listener's connection limits: its URL's, or the defaults."""
    given = sorted(set(query) & set(LIMITS))
    if given and scheme not in STREAMS:
        raise ValueError(f"listener {url!r}: {', '.join(given)} are for TCP and TLS listeners")
    out: dict[str, float] = {}
    for name, (kind, default) in LIMITS.items():
        if name not in query:
            out[name] = globals()[default]
            continue
        what = "a whole number" if kind is int else "a number of seconds"
        try:
            value = kind(query[name])
        except ValueError:
            value = None
        if value is None or not 0 < value < 1e9:  # also nan and inf
            raise ValueError(f"listener {url!r}: {name} must be {what} above 0, not {query[name][:40]!r}")
        out[name] = value
    return out


def _charset(url: str, name: str | None) -> str:
    """The codec a syslog listener reads its frames in. Frames are cut on
    newline bytes and octet counts are ASCII digits before the text is
    decoded, so only encodings that write those as ASCII do (UTF-16 does not)."""
    try:
        codec = text_encoding(name) or "utf-8"
    except ValidationFailed:
        raise ValueError(f"listener {url!r}: charset {name[:80]!r} is not a text encoding") from None
    probe = "\n\r 0123456789<>"
    try:
        ascii_compatible = probe.encode(codec) == probe.encode("ascii")
    except (UnicodeError, LookupError):
        ascii_compatible = False
    if not ascii_compatible:
        raise ValueError(f"listener {url!r}: charset {name[:80]!r} does not write newlines and digits as ASCII, "
                         "so syslog frames cannot be told apart in it")
    return codec


@dataclass
class SourceStats:
    """What one sending address sent to one listener."""

    listener: str
    address: str
    records: int = 0
    bytes: int = 0
    rejected: int = 0
    dropped: int = 0
    first_seen_ms: int = 0
    last_seen_ms: int = 0
    # records per second of the last seconds: (second, count), newest last
    _recent: deque = field(default_factory=lambda: deque(maxlen=11))

    def saw(self, records: int, size: int, rejected: int) -> None:
        now = time.time()
        self.records += records
        self.bytes += size
        self.rejected += rejected
        self.last_seen_ms = int(now * 1000)
        self.first_seen_ms = self.first_seen_ms or self.last_seen_ms
        second = int(now)
        if self._recent and self._recent[-1][0] == second:
            self._recent[-1] = (second, self._recent[-1][1] + records)
        else:
            self._recent.append((second, records))

    def rate(self) -> float:
        """Records per second over the last 10 whole seconds."""
        now = int(time.time())
        return sum(n for s, n in self._recent if now - 10 <= s < now) / 10

    def to_dict(self) -> dict[str, Any]:
        return {"listener": self.listener, "address": self.address, "records": self.records, "bytes": self.bytes,
                "recordsPerSecond": self.rate(), "rejected": self.rejected, "dropped": self.dropped,
                "firstSeen": self.first_seen_ms, "lastSeen": self.last_seen_ms}


class Listeners:
    """Every listener of the node: a component (start/stop) of ``Services``."""

    def __init__(self, specs: list[ListenerSpec], ingestion: Any, metrics: Any = None):
        self.specs = specs
        self.ingestion = ingestion
        self.metrics = metrics
        self._lock = threading.Lock()
        self._sources: dict[tuple[str, str], SourceStats] = {}
        # Listener-wide faults: refused connections, handshake failures, timeouts, dropped datagrams.
        self.faults: dict[str, dict[str, int]] = {s.name: {} for s in specs}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._store = ThreadPoolExecutor(2, thread_name_prefix="seclake-listener-store")
        self._tables = {s.name: ConnectionTable(s.max_connections, s.max_per_address) for s in specs
                        if s.scheme in STREAMS}
        self._logged: dict[tuple[str, str], tuple[float, int]] = {}  # (listener, kind): when logged, count then
        self.bound: dict[str, tuple[str, int]] = {}
        self.started_ms = 0
        if metrics is not None:
            from seclake.service.metrics import ListenerCollector

            metrics.watch(ListenerCollector(self))

    # -- life cycle -------------------------------------------------------

    def start(self) -> None:
        self.started_ms = int(time.time() * 1000)
        if not self.specs:
            return
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.set_exception_handler(self._loop_fault)
            try:
                loop.run_until_complete(self._open_all())
            except BaseException as e:  # noqa: BLE001 - reported to start(), which raises it
                failure.append(e)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._close_all())
            loop.close()

        self._thread = threading.Thread(target=run, name="seclake-listeners", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise RuntimeError(f"a listener could not start: {failure[0]}") from failure[0]
        for spec in self.specs:
            log.info("listening for %s on %s (vendor %s, %s)", spec.scheme, spec.name, spec.vendor, spec.dataset)

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(30)
        self._store.shutdown(wait=True)

    async def _open_all(self) -> None:
        self._servers: list[Any] = []
        self._udp: list[_UdpBatch] = []
        for spec in self.specs:
            if spec.scheme in ("syslog+udp", "netflow"):
                batch = _UdpBatch(self, spec) if spec.scheme == "syslog+udp" else _FlowBatch(self, spec)
                transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
                    lambda b=batch: _UdpProtocol(b), local_addr=(spec.host, spec.port))
                batch.transport = transport
                self._udp.append(batch)
                self.bound[spec.name] = transport.get_extra_info("sockname")[:2]
                batch.task = asyncio.ensure_future(batch.run())
            else:
                context = None
                if spec.scheme == "syslog+tls":
                    context = _tls_context(spec, lambda e, s=spec: self._fault(s, "tls_handshake_failures", str(e)))
                server = await asyncio.start_server(
                    lambda r, w, s=spec: self._connection(s, r, w), spec.host, spec.port, ssl=context,
                    ssl_handshake_timeout=TLS_HANDSHAKE_SECONDS if context else None, limit=MAX_FRAME * 2)
                self._servers.append(server)
                self.bound[spec.name] = server.sockets[0].getsockname()[:2]

    async def _close_all(self) -> None:
        for server in self._servers:
            server.close()
        for batch in self._udp:
            batch.transport.close()
            if batch.task is not None:
                batch.task.cancel()
            await batch.flush()  # what was received is stored before the server stops

    def _loop_fault(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # Whatever escapes a connection's own handling: logged, and the loop goes on.
        exc = context.get("exception")
        log.warning("listener: %s (%s)", context.get("message", ""), type(exc).__name__ if exc else "-")

    # -- accounting -------------------------------------------------------

    def _fault(self, spec: ListenerSpec, kind: str, detail: str, n: int = 1) -> None:
        """Count a fault; log it the first time, then at most every ``FAULT_LOG_SECONDS`` with the count
        since (a flood makes thousands a second: one line each would bury the log)."""
        now = time.monotonic()
        with self._lock:
            counts = self.faults[spec.name]
            total = counts[kind] = counts.get(kind, 0) + n
            when, then = self._logged.get((spec.name, kind), (None, 0))
            due = when is None or now - when >= FAULT_LOG_SECONDS
            if due:
                self._logged[(spec.name, kind)] = (now, total)
        if when is None:
            log.warning("listener %s: %s: %s", spec.name, kind, detail)
        elif due:
            log.warning("listener %s: %s: %s (%d since %.0f s ago)", spec.name, kind, detail, total - then, now - when)
        else:
            log.debug("listener %s: %s: %s", spec.name, kind, detail)

    def counts(self) -> list[tuple[ListenerSpec, int | None, dict[str, int]]]:
        """Each listener with its open connections (None: UDP) and fault counts, for /metrics."""
        with self._lock:
            faults = {name: dict(counts) for name, counts in self.faults.items()}
        return [(s, self._tables[s.name].count if s.name in self._tables else None, faults.get(s.name, {}))
                for s in self.specs]

    def sources(self) -> dict[str, list[dict[str, Any]]]:
        """Listeners, their senders, and the same listeners as the clients' collector entries."""
        with self._lock:
            rows = [s.to_dict() for s in self._sources.values()]
            faults = {name: dict(counts) for name, counts in self.faults.items()}
        # Not the URL itself: a TLS listener's names the key file, which callers need not see.
        listeners = [{"listener": s.name, "vendor": s.vendor, "type": s.dataset,
                      "customer": s.customer, "charset": None if s.scheme == "netflow" else s.charset,
                      "faults": faults.get(s.name, {}), "limits": s.limits(),
                      "connections": self._tables[s.name].count if s.name in self._tables else 0}
                     for s in self.specs]
        # The clients' collector model (ingext-api CollectorForWeb), one per listener.
        entries = [{"id": s.name, "name": s.name, "local": True, "ebpf": False,
                    "description": f"{s.scheme} listener: vendor {s.vendor}, {s.dataset}s", "createdOn": self.started_ms,
                    "token": "", "lastPoll": max([r["lastSeen"] for r in rows if r["listener"] == s.name],
                                                 default=self.started_ms)} for s in self.specs]
        return {"entries": entries, "listeners": listeners, "sources": rows}

    def _stats(self, spec: ListenerSpec, address: str) -> SourceStats:
        key = (spec.name, address)
        stats = self._sources.get(key)
        if stats is None:
            stats = self._sources[key] = SourceStats(spec.name, address)
        return stats

    def store(self, spec: ListenerSpec, address: str, messages: list[tuple[str, bool]], size: int) -> None:
        """Parse and log messages of one sender (in a worker thread); durable when it returns.
        A large batch is parsed in the parse workers, if the node has them (``Ingestion.import_messages``)."""
        lines = [Line(n, text, truncated) for n, (text, truncated) in enumerate(messages, 1)]
        counts = self.ingestion.import_messages(lines, vendor=spec.vendor, dataset=spec.dataset,
                                                customer=spec.customer, address=address, size=size)
        if counts.rejected:
            # The reasons name a message by its place in the batch (``line N``).
            self._fault(spec, "rejected", f"from {address}: {counts.reasons[0]}", counts.rejected)
        with self._lock:
            self._stats(spec, address).saw(counts.accepted + counts.raw, size, counts.rejected)
        if self.metrics is not None:
            counter = self.metrics.records
            for outcome, n in (("accepted", counts.accepted), ("raw", counts.raw), ("rejected", counts.rejected)):
                if n:
                    counter.labels(spec.name, spec.dataset, outcome).inc(n)

    def store_flows(self, spec: ListenerSpec, address: str, flows: list[dict[str, Any]], size: int) -> None:
        """Log decoded NetFlow/IPFIX flows of one exporter (in a worker thread)."""
        items = []
        for f in flows:
            message = f"{f['prot']} {f['sip']}:{f['sp']} -> {f['dip']}:{f['dp']} {f['txB']} bytes {f['txP']} packets"
            record = new_record(message, f, vendor=spec.vendor, dataset="flow", timestamp=f["time_ms"],
                                sender=address, customer=spec.customer)
            record["@fields"]["log"] = {"source": {"address": address}}
            items.append(("flow", record))
        if items:
            self.ingestion.append_records(items)
        with self._lock:
            self._stats(spec, address).saw(len(items), size, 0)
        if self.metrics is not None and items:
            self.metrics.records.labels(spec.name, "flow", "accepted").inc(len(items))

    def dropped(self, spec: ListenerSpec, address: str, n: int) -> None:
        with self._lock:
            self._stats(spec, address).dropped += n
        if self.metrics is not None:
            self.metrics.records.labels(spec.name, spec.dataset, "dropped").inc(n)

    # -- TCP and TLS ------------------------------------------------------

    async def _connection(self, spec: ListenerSpec, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        address = peer[0] if peer else "?"
        # Never refused: the kernel has accepted it, and a sender's first messages would be lost unseen. Room is
        # made by closing the oldest connection of the fullest source (service/connections.py).
        table = self._tables[spec.name]
        loop = asyncio.get_running_loop()
        conn = Connection(address, lambda: loop.call_later(CLOSE_GRACE_SECONDS, writer.transport.abort))
        victim = table.admit(conn)
        if victim is not None:
            cap = (f"{spec.max_per_address} connections from {victim.source}"
                   if victim.closed_for == "evicted_per_address" else f"{spec.max_connections} connections on the listener")
            self._fault(spec, victim.closed_for, f"{victim.address}: closed to make room for {address} ({cap}; "
                        f"{'no complete frame' if not victim.frames else 'idle'} for "
                        f"{time.monotonic() - victim.progress:.1f} s)")
        framer = _Framer(spec.charset)
        try:
            while True:
                # A connection has first_frame_seconds for its first complete frame, then idle_seconds for
                # each next one: trickling bytes of a frame that never ends does not keep it open. Once it is
                # being closed (here or to make room), what its sender wrote until then is read to the end.
                if conn.closed_for is None:
                    wait = conn.progress + (spec.idle_seconds if conn.frames else spec.first_frame_seconds)
                else:
                    wait = time.monotonic() + CLOSE_GRACE_SECONDS + 10  # the abort's end of stream comes first
                try:
                    data = await asyncio.wait_for(reader.read(READ_BYTES), max(0.0, wait - time.monotonic()))
                except asyncio.TimeoutError:
                    data = b""  # below, if no end of stream came after the abort: the framer's rest is kept
                    if conn.closed_for is None:
                        if conn.frames:
                            self._fault(spec, "idle_timeouts", f"{address}: no complete frame for "
                                        f"{spec.idle_seconds:g} s, closed")
                        else:
                            self._fault(spec, "first_frame_timeouts", f"{address}: no complete frame in its first "
                                        f"{spec.first_frame_seconds:g} s, closed")
                        conn.closed_for = "timeout"
                        table.remove(conn)
                        conn.close()
                        continue
                messages = framer.feed(data) if data else framer.end()
                if framer.error:
                    self._fault(spec, "bad_frames", f"{address}: {framer.error}")
                if messages:
                    if data:
                        table.progressed(conn, len(messages))
                    # Stored before the next read: a slow lake slows the sender, nothing is dropped.
                    await loop.run_in_executor(self._store, self.store, spec, address, messages, len(data))
                if not data or framer.error:
                    break
        except (ConnectionError, ssl.SSLError) as e:
            self._fault(spec, "connection_errors", f"{address}: {type(e).__name__}: {e}")
        except Exception as e:  # noqa: BLE001 - a store failure (disk full...) ends this connection only
            self._fault(spec, "store_failures", f"{address}: {type(e).__name__}: {e}")
        finally:
            table.remove(conn)
            writer.close()


class _Framer:
    """Messages out of a TCP byte stream: newline framing or RFC 6587 octet counting."""

    def __init__(self, charset: str = "utf-8") -> None:
        self.charset = charset
        self.buffer = b""
        self.octets: bool | None = None
        self.skipping = False  # newline framing: the rest of an overlong line is dropped
        self.error: str | None = None

    def feed(self, data: bytes) -> list[tuple[str, bool]]:
        self.buffer += data
        if self.octets is None:
            stripped = self.buffer.lstrip()
            if not stripped:
                return []
            self.octets = stripped[:1].isdigit()
            self.buffer = stripped
        return self._octet_frames() if self.octets else self._lines()

    def end(self) -> list[tuple[str, bool]]:
        """What is left at the end of the stream (or when the listener closes the connection): an unfinished
        line is a message; an unfinished counted frame is kept too, marked truncated."""
        if self.error or self.skipping or not self.buffer.strip():
            return []
        text, self.buffer = self.buffer, b""
        if self.octets:
            length, _, text = text.lstrip(b"\r\n ").partition(b" ")
            if not (length.isdigit() and text.strip()):
                return []
            return [(_decode(text.rstrip(b"\r\n"), self.charset), True)]
        return [(_decode(text, self.charset), False)]

    def _lines(self) -> list[tuple[str, bool]]:
        out = []
        while True:
            cut = self.buffer.find(b"\n")
            if cut < 0:
                if len(self.buffer) > MAX_FRAME:
                    if not self.skipping:
                        out.append((_decode(self.buffer[:MAX_FRAME], self.charset), True))
                    self.skipping = True
                    self.buffer = b""
                return out
            line, self.buffer = self.buffer[:cut], self.buffer[cut + 1:]
            if self.skipping:
                self.skipping = False
                continue
            line = line.rstrip(b"\r")
            if line.strip():
                out.append((_decode(line[:MAX_FRAME], self.charset), len(line) > MAX_FRAME))

    def _octet_frames(self) -> list[tuple[str, bool]]:
        out = []
        while True:
            self.buffer = self.buffer.lstrip(b"\r\n ")
            space = self.buffer.find(b" ", 0, 12)
            if space < 0:
                if len(self.buffer) >= 12:
                    self.error = "octet counting: no length before the frame"
                return out
            length = self.buffer[:space]
            if not length.isdigit():
                self.error = f"octet counting: {length[:12]!r} is not a length"
                return out
            n = int(length)
            if n > MAX_FRAME:
                self.error = f"octet counting: a frame of {n} bytes is over {MAX_FRAME}"
                return out
            if len(self.buffer) < space + 1 + n:
                return out
            frame = self.buffer[space + 1: space + 1 + n]
            self.buffer = self.buffer[space + 1 + n:]
            if frame.strip():
                out.append((_decode(frame.rstrip(b"\r\n"), self.charset), False))


UTF8_BOM = b"\xef\xbb\xbf"


def _decode(data: bytes, charset: str) -> str:
    """A frame's text; bytes the charset cannot read become U+FFFD. An RFC 5424
    message whose MSG begins with the BOM says it is UTF-8 (structured data of
    any length may come before it, so the whole frame is searched, at C speed)."""
    if charset == "utf-8" or UTF8_BOM in data:
        return data.decode("utf-8", errors="replace")
    # Some codecs (utf-7, raw_unicode_escape) decode a sender's bytes to lone
    # surrogates, which no JSON encoder takes: the log would refuse the whole
    # batch, other senders' messages with it. Replaced here, as imports do.
    return data.decode(charset, errors="replace").encode("utf-8", "replace").decode("utf-8")


# -- UDP ------------------------------------------------------------------------


class _UdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, batch: _UdpBatch):
        self.batch = batch

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.batch.add(data, addr[0])

    def error_received(self, exc: Exception) -> None:
        self.batch.owner._fault(self.batch.spec, "socket_errors", f"{type(exc).__name__}: {exc}")


class _UdpBatch:
    """Datagrams waiting to be stored, flushed every ``UDP_FLUSH_SECONDS``."""

    def __init__(self, owner: Listeners, spec: ListenerSpec):
        self.owner = owner
        self.spec = spec
        self.pending: list[tuple[bytes, str]] = []
        self.transport: Any = None
        self.task: Any = None

    def add(self, data: bytes, address: str) -> None:
        if len(self.pending) >= MAX_UDP_PENDING:
            self.owner.dropped(self.spec, address, 1)
            return
        self.pending.append((data, address))

    async def run(self) -> None:
        while True:
            await asyncio.sleep(UDP_FLUSH_SECONDS)
            try:
                await self.flush()
            except Exception as e:  # noqa: BLE001 - counted as dropped below; the listener keeps going
                log.exception("listener %s: storing datagrams failed", self.spec.name)
                self.owner._fault(self.spec, "store_failures", f"{type(e).__name__}: {e}")

    async def flush(self) -> None:
        if not self.pending:
            return
        taken, self.pending = self.pending, []
        by_sender: dict[str, list[tuple[str, bool]]] = {}
        sizes: dict[str, int] = {}
        for data, address in taken:
            messages = by_sender.setdefault(address, [])
            sizes[address] = sizes.get(address, 0) + len(data)
            for line in data.split(b"\n"):
                line = line.rstrip(b"\r\x00")
                if line.strip():
                    messages.append((_decode(line[:MAX_FRAME], self.spec.charset), len(line) > MAX_FRAME))
        await self._store_each(self.owner.store, by_sender, sizes)

    async def _store_each(self, store: Any, by_sender: dict[str, list], sizes: dict[str, int]) -> None:
        """``store`` each sender's batch in a worker thread; a failed one is counted as dropped."""
        loop = asyncio.get_running_loop()
        for address, batch in by_sender.items():
            try:
                await loop.run_in_executor(self.owner._store, store, self.spec, address, batch, sizes[address])
            except Exception:
                self.owner.dropped(self.spec, address, len(batch))
                raise


class _FlowBatch(_UdpBatch):
    """NetFlow v5/v9/IPFIX datagrams, decoded as they arrive (templates per
    exporter), their flows stored every ``UDP_FLUSH_SECONDS``."""

    def __init__(self, owner: Listeners, spec: ListenerSpec):
        super().__init__(owner, spec)
        self.templates = Templates()
        self.flows: list[tuple[dict[str, Any], str, int]] = []

    def add(self, data: bytes, address: str) -> None:
        if len(self.flows) >= MAX_UDP_PENDING:
            self.owner.dropped(self.spec, address, 1)
            return
        try:
            decoded = decode_netflow(data, address, self.templates)
        except NetflowError as e:
            self.owner._fault(self.spec, "bad_datagrams", f"{address}: {e}")
            with self.owner._lock:
                self.owner._stats(self.spec, address).rejected += 1
            return
        if decoded.dropped:
            self.owner._fault(self.spec, "data_without_template", f"{address}: {decoded.dropped} data set(s) "
                              f"waited {HOLD_SECONDS:g} s for their template and were dropped")
            self.owner.dropped(self.spec, address, decoded.dropped)
        size = len(data)
        for flow in decoded.flows:
            self.flows.append((flow, address, size))
            size = 0  # the datagram's bytes are counted once

    async def flush(self) -> None:
        if not self.flows:
            return
        taken, self.flows = self.flows, []
        by_sender: dict[str, list[dict[str, Any]]] = {}
        sizes: dict[str, int] = {}
        for flow, address, size in taken:
            by_sender.setdefault(address, []).append(flow)
            sizes[address] = sizes.get(address, 0) + size
        await self._store_each(self.owner.store_flows, by_sender, sizes)


def _tls_context(spec: ListenerSpec, failed: Any) -> ssl.SSLContext:
    """The listener's TLS context; ``failed(error)`` hears of every failed handshake.

    asyncio drops handshake errors without a word (an SSLError is an
    OSError, logged only in debug mode): the SSL objects it makes through
    the context's ``sslobject_class`` report them on their way out."""

    class Counted(ssl.SSLObject):
        def do_handshake(self) -> None:
            try:
                super().do_handshake()
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                raise
            except ssl.SSLError as e:
                failed(e)
                raise

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.sslobject_class = Counted
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(spec.cert, spec.key)  # type: ignore[arg-type]
    if spec.ca:
        context.load_verify_locations(spec.ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


