"""Raw import bodies as numbered text lines, and the counts of what became of them.

``iter_lines`` reads bytes or a binary file in chunks and yields
``Line(number, text, truncated)``:

- gzip is undone when the body starts with the gzip magic ``1f 8b`` (or when
  ``compressed=True``); concatenated gzip members are read one after another,
  and zero padding after the last member is ignored; ``compressed="deflate"``
  (HTTP's ``Content-Encoding: deflate``) undoes a zlib stream, or a raw
  deflate one when the body lacks zlib's header (some senders send that);
- ``max_bytes`` caps the body *after* decompression: past it,
  ``PayloadTooLarge`` is raised at once, so a gzip bomb costs at most
  ``max_bytes`` of work and one chunk of memory;
- text is UTF-8 with invalid bytes replaced (U+FFFD): a line with one bad byte
  is still worth keeping; a UTF-8 BOM at the start is dropped; a body in another
  encoding (an HTTP sender's declared charset, ``text_encoding``) is made UTF-8
  first by ``transcode``;
- lines end at ``\\n``; a ``\\r`` before it is dropped;
- a line longer than ``max_line_bytes`` is cut to it (``truncated=True``),
  backed off so no UTF-8 character is split; the rest up to the next newline
  is skipped without being held in memory;
- blank lines (ASCII whitespace only) are skipped but still counted, so
  ``number`` is the 1-based line number a user sees in an editor.

A compressed body that is corrupt or ends early raises ``ValidationFailed("body", ...)``
when the problem is reached; lines before it have already been yielded.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

from seclake.errors import PayloadTooLarge, ValidationFailed

GZIP_MAGIC = b"\x1f\x8b"
DEFLATE = "deflate"
# What ``compressed`` takes, by Content-Encoding ("" and identity: none).
ENCODINGS = {"": False, "identity": False, "gzip": True, "x-gzip": True, DEFLATE: DEFLATE}
MAX_LINE_BYTES = 65536
# Read and decompress in chunks of this size: large enough that per-chunk
# Python overhead vanishes, small enough to bound memory per import.
CHUNK_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"


class Line(NamedTuple):
    number: int
    text: str
    truncated: bool


def _chunks(source: bytes | bytearray | memoryview | BinaryIO) -> Iterator[bytes]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source)
        for start in range(0, len(view), CHUNK_BYTES):
            yield bytes(view[start : start + CHUNK_BYTES])
        return
    while True:
        chunk = source.read(CHUNK_BYTES)
        if not chunk:
            return
        yield chunk


def _too_large(max_bytes: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"import body is larger than {max_bytes} bytes (after decompression)")


def _capped(chunks: Iterable[bytes], max_bytes: int) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_bytes:
            raise _too_large(max_bytes)
        yield chunk


def compression_of(content_encoding: str) -> bool | str | None:
    """``compressed`` for a request's Content-Encoding header: None (absent:
    gzip is told by its magic bytes), or ``ValidationFailed`` naming the
    header and what is read."""
    encoding = content_encoding.strip().lower()
    if encoding not in ENCODINGS:
        raise ValidationFailed("Content-Encoding", f"{encoding[:80]!r} cannot be read: send gzip, deflate or none")
    return ENCODINGS[encoding] if encoding else None


def _deflate_wbits(head: bytes) -> int:
    """zlib's wrapper (RFC 1950, what RFC 9110 calls deflate) when the head is
    one (method 8, check bits), raw deflate otherwise: both are sent."""
    if len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and (head[0] << 8 | head[1]) % 31 == 0:
        return 15
    return -15


def _gunzip(chunks: Iterable[bytes], max_bytes: int, wbits: int = 31) -> Iterator[bytes]:
    """Inflated chunks: gzip (``wbits`` 31: its header and trailer), zlib (15) or raw deflate (-15)."""
    name = "gzip" if wbits == 31 else DEFLATE
    d = zlib.decompressobj(wbits=wbits)
    total = 0
    started = False
    for chunk in chunks:
        data = chunk
        while data:
            if d.eof:
                if not data.strip(b"\x00"):
                    break  # zero padding after the last member
                d = zlib.decompressobj(wbits=wbits)
            started = True
            try:
                # max_length bounds the output of one call: the bomb never inflates
                # in memory past one chunk before the size check below.
                out = d.decompress(data, CHUNK_BYTES)
            except zlib.error as exc:
                raise ValidationFailed("body", f"invalid {name} data after {total} decompressed bytes: {exc}") from None
            total += len(out)
            if total > max_bytes:
                raise _too_large(max_bytes)
            if out:
                yield out
            if d.eof:
                data = d.unused_data
            elif d.unconsumed_tail:
                data = d.unconsumed_tail
            elif len(out) == CHUNK_BYTES:
                data = b""
                # Input used up but the output was full: drain what zlib still holds.
                while True:
                    out = d.decompress(b"", CHUNK_BYTES)
                    total += len(out)
                    if total > max_bytes:
                        raise _too_large(max_bytes)
                    if out:
                        yield out
                    if len(out) < CHUNK_BYTES or d.eof:
                        break
                if d.eof:
                    data = d.unused_data
            else:
                data = b""
    if started and not d.eof:
        raise ValidationFailed("body", f"{name} data ends early, after {total} decompressed bytes")


def iter_lines(
    source: bytes | bytearray | memoryview | BinaryIO,
    *,
    compressed: bool | str | None = None,
    max_bytes: int,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[Line]:
    """Numbered, decoded, non-blank lines of an import body (see the module doc).

    ``compressed``: None detects gzip by its magic bytes; True or False forces;
    ``"deflate"``: zlib or raw deflate.
    """
    return _split(_decoded(source, compressed, max_bytes), max_line_bytes)


def measure(source: bytes | bytearray | memoryview, *, compressed: bool | str | None = None, max_bytes: int) -> tuple[int, int]:
    """(lines, bytes) of a body after decompression, counted without parsing
    a line (newlines are counted at C speed): what an import will cost is
    known before its records are built. Errors as ``iter_lines``."""
    lines = size = 0
    last = b"\n"
    for chunk in _decoded(source, compressed, max_bytes):
        lines += chunk.count(b"\n")
        size += len(chunk)
        last = chunk[-1:]
    return lines + (last != b"\n"), size


def text_encoding(charset: str | None) -> str | None:
    """The codec of a body sent in ``charset`` (a Content-Type's parameter), or
    None when its bytes are read as they are: UTF-8, ASCII (a subset of it) or
    none declared. ``ValidationFailed`` names a charset that is not a text
    encoding (an unknown name, or a codec such as ``base64``)."""
    if not charset:
        return None
    try:
        name = codecs.lookup(charset).name
        b"a".decode(name, "replace")  # LookupError for codecs that are not text encodings
    except (LookupError, ValueError):
        raise ValidationFailed("Content-Type", f"charset {charset[:80]!r} is not a text encoding") from None
    return None if name in ("utf-8", "ascii") else name


def transcode(source: bytes | bytearray | memoryview, encoding: str, *, compressed: bool | str | None, max_bytes: int) -> bytes:
    """The body in UTF-8, read in ``encoding`` (gzip undone first); undecodable
    bytes become U+FFFD. ``max_bytes`` caps the body as sent and its UTF-8
    form alike (``PayloadTooLarge``), so a body takes no more memory here
    than the same text sent in UTF-8 would.

    Java's HTTP clients send text as ISO-8859-1 unless told otherwise: read as
    UTF-8, every accented letter of such a body would be lost."""
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    out = bytearray()
    for chunk in (*_decoded(source, compressed, max_bytes), b""):
        out += decoder.decode(chunk, final=not chunk).encode("utf-8", "replace")  # "replace": lone surrogates (UTF-7)
        if len(out) > max_bytes:
            raise _too_large(max_bytes)
    return bytes(out)  # bytes, as imports take them (the memory budget checks bytes)


def _decoded(source: bytes | bytearray | memoryview | BinaryIO, compressed: bool | str | None, max_bytes: int) -> Iterator[bytes]:
    """The body's bytes in chunks, gzip or deflate undone, capped at ``max_bytes``."""
    if isinstance(source, (bytes, bytearray, memoryview)) and compressed is False and len(source) > max_bytes:
        raise _too_large(max_bytes)  # known before reading a byte
    chunks = _chunks(source)
    head = b""
    for chunk in chunks:  # enough bytes to see the magic, whatever the reads return
        head += chunk
        if len(head) >= 2:
            break
    if compressed is None:
        compressed = head[:2] == GZIP_MAGIC

    def body() -> Iterator[bytes]:
        if head:
            yield head
        yield from chunks

    if compressed == DEFLATE:
        return _gunzip(body(), max_bytes, _deflate_wbits(head))
    return _gunzip(body(), max_bytes) if compressed else _capped(body(), max_bytes)


def _line(number: int, raw: bytes, truncated: bool) -> Line | None:
    if raw[-1:] == b"\r":
        raw = raw[:-1]
    if not raw or raw.isspace():
        return None
    return Line(number, raw.decode("utf-8", "replace"), truncated)


def _cut(raw: bytes, max_line: int) -> bytes:
    """The first max_line bytes, backed off so no multi-byte character is split.

    A UTF-8 continuation byte (10xxxxxx) right after the cut means the cut is
    inside a character: drop that character's first bytes too (at most 3).
    """
    end = max_line
    while end > max(1, max_line - 3) and raw[end] & 0xC0 == 0x80:
        end -= 1
    return raw[:end]


def _split(chunks: Iterable[bytes], max_line: int) -> Iterator[Line]:
    number = 0
    pending = b""  # the start of a line whose end has not arrived yet
    skipping = False  # pending is an over-long line already cut; drop until \n
    first = True
    for chunk in chunks:
        if first:
            first = False
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if skipping:
            nl = chunk.find(b"\n")
            if nl == -1:
                continue
            number += 1
            line = _line(number, pending, True)
            if line is not None:
                yield line
            pending, skipping = b"", False
            chunk = chunk[nl + 1 :]
        pieces = (pending + chunk if pending else chunk).split(b"\n")
        pending = pieces.pop()
        for raw in pieces:
            number += 1
            cut = len(raw) > max_line
            line = _line(number, _cut(raw, max_line) if cut else raw, cut)
            if line is not None:
                yield line
        if len(pending) > max_line:
            pending, skipping = _cut(pending, max_line), True
    if pending or skipping:
        number += 1
        line = _line(number, pending, skipping)
        if line is not None:
            yield line


@dataclass
class IngestCounts:
    """What became of the lines of one import.

    ``accepted``: records a parser understood; ``raw``: lines kept as raw
    events (stored too); ``rejected``: lines not stored, each with a reason;
    ``truncated``: stored lines that were cut (counted in accepted or raw as
    well). ``reasons`` keeps the first ``max_reasons`` rejections as
    ``"line N: <what>: <problem>"``; a flood of bad lines cannot grow it.
    """

    max_reasons: int = 10
    accepted: int = 0
    raw: int = 0
    rejected: int = 0
    truncated: int = 0
    reasons: list[str] = field(default_factory=list)

    def count(self, understood: bool, *, truncated: bool = False) -> None:
        if understood:
            self.accepted += 1
        else:
            self.raw += 1
        if truncated:
            self.truncated += 1

    def reject(self, line: int, reason: str) -> None:
        self.rejected += 1
        if len(self.reasons) < self.max_reasons:
            self.reasons.append(f"line {line}: {reason}")

    def add(self, other: IngestCounts) -> None:
        """Count ``other``'s lines too (a part of the same import counted apart), reasons in order."""
        self.accepted += other.accepted
        self.raw += other.raw
        self.rejected += other.rejected
        self.truncated += other.truncated
        self.reasons.extend(other.reasons[: max(0, self.max_reasons - len(self.reasons))])

    def as_dict(self) -> dict[str, object]:
        return {
            "accepted": self.accepted,
            "raw": self.raw,
            "rejected": self.rejected,
            "truncated": self.truncated,
            "reasons": list(self.reasons),
        }
