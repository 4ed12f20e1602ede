from __future__ import annotations

import gzip
import io
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.errors import PayloadTooLarge, ValidationFailed
from seclake.ingest import reader
from seclake.ingest.reader import IngestCounts, Line, iter_lines, measure

MB = 1 << 20


def _lines(data: bytes | io.BytesIO, **kw) -> list[Line]:
    kw.setdefault("max_bytes", 64 * MB)
    return list(iter_lines(data, **kw))


def test_plain_lines_numbers_crlf_and_blanks() -> None:
    data = b"first\r\n\r\n  \nsecond\nthird"
    assert _lines(data) == [Line(1, "first", False), Line(4, "second", False), Line(5, "third", False)]


def test_bom_is_dropped() -> None:
    assert _lines(b"\xef\xbb\xbfa=1\n") == [Line(1, "a=1", False)]


def test_invalid_utf8_is_replaced() -> None:
    assert _lines(b"user=\xff\xfebob\nok=\xc3\xa9\n") == [Line(1, "user=\ufffd\ufffdbob", False), Line(2, "ok=é", False)]


def test_file_object_and_bytes_agree() -> None:
    data = b"".join(b"line %d\n" % i for i in range(10000))
    assert _lines(io.BytesIO(data)) == _lines(data) == [Line(i + 1, f"line {i}", False) for i in range(10000)]


def test_lines_across_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "CHUNK_BYTES", 7)
    data = b"alpha\nbeta\r\ngamma delta\n\nepsilon"
    assert [(n, t) for n, t, _ in _lines(data)] == [(1, "alpha"), (2, "beta"), (3, "gamma delta"), (5, "epsilon")]
    assert [(n, t) for n, t, _ in _lines(gzip.compress(data))] == [
        (1, "alpha"), (2, "beta"), (3, "gamma delta"), (5, "epsilon"),
    ]  # fmt: skip


def test_long_lines_are_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "CHUNK_BYTES", 16)
    long = b"x" * 100
    data = b"short\n" + long + b"\nafter\n" + long
    assert _lines(data, max_line_bytes=10) == [
        Line(1, "short", False),
        Line(2, "x" * 10, True),
        Line(3, "after", False),
        Line(4, "x" * 10, True),
    ]


def test_cut_inside_a_multibyte_character() -> None:
    assert _lines("ab€€".encode(), max_line_bytes=4) == [Line(1, "ab", True)]


def test_gzip_detected_by_magic_and_forced() -> None:
    data = b"a=1\nb=2\n"
    assert _lines(gzip.compress(data)) == _lines(data)
    assert _lines(gzip.compress(data), compressed=True) == _lines(data)
    # forced off: the gzip bytes are just (binary) text
    assert _lines(gzip.compress(data), compressed=False) != _lines(data)


def test_concatenated_gzip_members_and_zero_padding() -> None:
    data = gzip.compress(b"one\n") + gzip.compress(b"two\n") + b"\x00" * 100
    assert _lines(data) == [Line(1, "one", False), Line(2, "two", False)]


def test_plain_body_over_the_cap() -> None:
    with pytest.raises(PayloadTooLarge, match="larger than 1000 bytes"):
        _lines(b"x\n" * 1000, max_bytes=1000)


def test_gzip_bomb_stops_at_the_cap() -> None:
    # 1 GiB of zeros in 64 gzip members of about 16 KiB each; only max_bytes get inflated.
    bomb = gzip.compress(b"\0" * (16 * MB), compresslevel=9) * 64
    assert len(bomb) < 2 * MB
    seen = 0
    with pytest.raises(PayloadTooLarge):
        for line in iter_lines(bomb, max_bytes=8 * MB):
            seen += len(line.text)
    assert seen <= 8 * MB


def test_gzip_bomb_of_newlines_stops_too() -> None:
    bomb = gzip.compress(b"a\n" * (8 * MB))
    with pytest.raises(PayloadTooLarge):
        for _ in iter_lines(bomb, max_bytes=MB):
            pass


def test_truncated_gzip() -> None:
    data = gzip.compress(b"line one\nline two\n" * 1000)
    with pytest.raises(ValidationFailed, match="gzip data ends early"):
        _lines(data[: len(data) // 2])


def test_corrupt_gzip() -> None:
    data = bytearray(gzip.compress(b"line one\n" * 1000))
    data[20:40] = b"\xff" * 20
    with pytest.raises(ValidationFailed, match="invalid gzip data") as info:
        _lines(bytes(data))
    assert info.value.field == "body"


def _raw_deflate(data: bytes, level: int = 6) -> bytes:
    packer = zlib.compressobj(level, wbits=-15)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize("pack", [zlib.compress, _raw_deflate], ids=["zlib", "raw"])
def test_deflate_zlib_wrapped_or_raw_is_read_and_capped(pack) -> None:
    body = b"".join(b"line %d\n" % i for i in range(5000))
    assert [line.text for line in _lines(pack(body), compressed="deflate")] == [f"line {i}" for i in range(5000)]
    with pytest.raises(ValidationFailed, match="deflate data ends early"):
        _lines(pack(body)[:200], compressed="deflate")
    with pytest.raises(PayloadTooLarge):  # a bomb of newlines stops at the cap
        _lines(pack(b"\n" * (4 * MB), 9), compressed="deflate", max_bytes=MB)


def test_a_content_encoding_names_what_is_read() -> None:
    assert [reader.compression_of(h) for h in ("", " gzip", "X-GZIP", "deflate", "identity")] == [
        None, True, True, "deflate", False]
    with pytest.raises(ValidationFailed, match="Content-Encoding: 'br' cannot be read: send gzip, deflate or none"):
        reader.compression_of("br")


def test_empty_bodies() -> None:
    assert _lines(b"") == []
    assert _lines(b"\n\n\r\n") == []
    assert _lines(b"", compressed=True) == []


def test_counts() -> None:
    counts = IngestCounts(max_reasons=2)
    counts.count(True)
    counts.count(False, truncated=True)
    for n in (3, 4, 5):
        counts.reject(n, f"@fields: bad {n}")
    assert counts.as_dict() == {
        "accepted": 1,
        "raw": 1,
        "rejected": 3,
        "truncated": 1,
        "reasons": ["line 3: @fields: bad 3", "line 4: @fields: bad 4"],
    }


def test_forced_plain_body_over_the_cap_fails_before_reading() -> None:
    with pytest.raises(PayloadTooLarge):
        iter_lines(b"x" * 2000, compressed=False, max_bytes=1000)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=1, max_value=40))
def test_any_bytes_give_numbered_lines(data: bytes, max_line: int) -> None:
    # Not gzip (forced plain): every byte string reads as lines, in order, none blank or too long.
    lines = _lines(data, compressed=False, max_line_bytes=max_line)
    numbers = [line.number for line in lines]
    assert numbers == sorted(set(numbers))
    assert not numbers or numbers[-1] <= data.count(b"\n") + 1
    for line in lines:
        assert line.text.strip(" \t\r\n\v\f")  # blank = ASCII whitespace, as in the parser
        assert len(line.text.encode("utf-8", "surrogatepass")) <= max_line * 3  # U+FFFD is 3 bytes
        assert line.truncated or len(line.text) <= max_line


@pytest.mark.parametrize("body", [b"", b"a", b"a\n", b"a\nb", b"a\r\nb\r\n\n", b"x" * 70_000 + b"\ny\n"])
def test_measure_counts_what_iter_lines_would_read(body: bytes) -> None:
    # At most one more than the non-blank lines (blank ones count too), and
    # the same through gzip, without building a line.
    lines, size = measure(body, max_bytes=1 << 20)
    assert size == len(body)
    assert len(list(iter_lines(body, max_bytes=1 << 20))) <= lines <= body.count(b"\n") + 1
    assert measure(gzip.compress(body), max_bytes=1 << 20) == (lines, size)


def test_measure_keeps_the_size_cap() -> None:
    with pytest.raises(PayloadTooLarge):
        measure(gzip.compress(b"a\n" * 100_000), max_bytes=1000)


@pytest.mark.parametrize(("charset", "codec"), [
    (None, None), ("", None), ("utf-8", None), ("UTF8", None), ("us-ascii", None),
    ("iso-8859-1", "iso8859-1"), ("latin1", "iso8859-1"), ("windows-1252", "cp1252"), ("utf-16", "utf-16"),
])
def test_a_declared_charset_names_its_codec_and_utf8_needs_none(charset, codec) -> None:
    assert reader.text_encoding(charset) == codec


@pytest.mark.parametrize("charset", ["no-such-thing", "base64", "rot13", "zlib", "../../etc/passwd", "x" * 10_000])
def test_a_charset_that_is_no_text_encoding_is_refused_naming_the_header(charset) -> None:
    with pytest.raises(ValidationFailed) as e:
        reader.text_encoding(charset)
    assert e.value.field == "Content-Type" and len(str(e.value)) < 300


def test_transcoding_reads_the_declared_encoding_across_chunks_and_gzip(monkeypatch) -> None:
    monkeypatch.setattr(reader, "CHUNK_BYTES", 3)  # a character cut between two chunks
    text = "caf\u00e9 \u20ac1\nna\u00efve\n"
    assert reader.transcode(text.encode("utf-16"), "utf-16", compressed=None, max_bytes=MB) == text.encode()
    latin = "caf\u00e9\nna\u00efve\n".encode("iso-8859-1")
    assert reader.transcode(gzip.compress(latin), "iso8859-1", compressed=None, max_bytes=MB) == "caf\u00e9\nna\u00efve\n".encode()
    # Undecodable bytes are replaced, as in UTF-8 bodies; the size cap holds on the body
    # as sent and on its UTF-8 form (1,000 Latin-1 letters take 2,000 bytes in UTF-8).
    assert reader.transcode(b"a\x81b", "cp1252", compressed=False, max_bytes=MB) == "a\ufffdb".encode()
    with pytest.raises(PayloadTooLarge):
        reader.transcode(gzip.compress(b"x" * 5000), "iso8859-1", compressed=None, max_bytes=1000)
    assert len(reader.transcode(b"\xe9" * 500, "iso8859-1", compressed=False, max_bytes=1000)) == 1000
    with pytest.raises(PayloadTooLarge):
        reader.transcode(b"\xe9" * 501, "iso8859-1", compressed=False, max_bytes=1000)

