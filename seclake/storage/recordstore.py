"""The records of a split (format 2): JSON bodies in zstd blocks, by docId.

tantivy-py cannot set the compression of tantivy's own document store (lz4
in 16 KiB blocks: about 1.1x the raw log bytes for parsed records), so a
format-2 split keeps its records in a file of its own, ``records.zst``:

    [dictionary][block 0][block 1]...[block index][footer]

- the **dictionary** is trained by zstd on a sample of the split's records:
  log records of one dataset repeat their keys and much of their values, so
  with it, small blocks compress about as well as large ones without it
  (measured on the benchmark's records: 16 KiB blocks 0.37x raw with a
  dictionary, 0.68x without; 256 KiB blocks without one 0.38x). Small
  blocks keep fetching a page of scattered hits cheap: a block decompresses
  in ~15 us, where a 256 KiB one takes ~170 us.
- a **block** holds consecutive records in docId order: ``u32`` count, the
  docIds (``u64`` each), the end offset of each body (``u32`` each), then
  the bodies, compressed as one zstd frame.
- the **block index** is, per block, its first docId, offset and length.
- the **footer** (32 bytes) names the format, the number of blocks, where
  the index starts and the dictionary's length (0: none; a split with few
  records has too little to train one on).

Decompressed blocks are kept in one cache shared by every open split,
bounded in bytes, so paging through a result does not decompress a block
once per hit.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import zstandard
from cachetools import LRUCache

FILE_NAME = "records.zst"
MAGIC = b"SLRECS01"
BLOCK_BYTES = 16 * 1024
LEVEL = 3
# The dictionary: at most DICT_BYTES, and a hundredth of the records' bytes
# (it is stored in the file: a large one would outweigh what it saves on a
# small split); trained on up to SAMPLE_RECORDS records spread over the
# split. Measured on the benchmark's event records: 500 samples train in
# 2-4 us per record of the split and give 144 bytes per record, 2000 take
# 7-14 us for 143. Below MIN_SAMPLES records it is not worth it (and zstd
# may refuse to train).
DICT_BYTES = 32 * 1024
DICT_SHARE = 100
MIN_DICT_BYTES = 1024
SAMPLE_RECORDS = 500
# ... and at most this many bytes of them (of each, and in all).
SAMPLE_RECORD_BYTES = 16 * 1024
SAMPLE_BYTES = 2 * 1024 * 1024
# A pass over the whole file gives the pages it has read back in steps of this many bytes.
RELEASE_BYTES = 1024 * 1024
MIN_SAMPLES = 64
# Decompressed blocks kept across all splits (bytes).
CACHE_BYTES = 16 * 1024 * 1024

_FOOTER = struct.Struct("<8sIIQQ")  # magic, version, blocks, index offset, dictionary length
_ENTRY = struct.Struct("<QQI")  # first docId, offset, length
_COUNT = struct.Struct("<I")
VERSION = 1


class StoreError(ValueError):
    """A records file that is not one, or is damaged; the message says which and where."""


def _dictionary(bodies: Sequence[bytes]) -> zstandard.ZstdCompressionDict | None:
    if len(bodies) < MIN_SAMPLES:
        return None
    size = min(DICT_BYTES, sum(len(b) for b in bodies) // DICT_SHARE)
    if size < MIN_DICT_BYTES:
        return None
    step = max(1, len(bodies) // SAMPLE_RECORDS)
    sample, taken = [], 0
    for body in bodies[::step]:
        # Huge records (a hostile import) must not make training slow: a
        # dictionary learns from many records, not from a few long ones.
        body = body[:SAMPLE_RECORD_BYTES]
        sample.append(body)
        taken += len(body)
        if taken >= SAMPLE_BYTES:
            break
    try:
        return zstandard.train_dictionary(size, sample, level=LEVEL)
    except zstandard.ZstdError:
        return None  # too little variety to train on: blocks without one


def _block(docids: Sequence[int], bodies: Sequence[bytes]) -> bytes:
    ends = []
    end = 0
    for b in bodies:
        end += len(b)
        ends.append(end)
    n = len(docids)
    return b"".join((_COUNT.pack(n), struct.pack(f"<{n}Q", *docids), struct.pack(f"<{n}I", *ends), *bodies))


def _blocks(items: Sequence[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    """(first docId, uncompressed block) of consecutive records up to BLOCK_BYTES of bodies."""
    start = 0
    while start < len(items):
        size, stop = 0, start
        while stop < len(items) and (stop == start or size + len(items[stop][1]) <= BLOCK_BYTES):
            size += len(items[stop][1])
            stop += 1
        chunk = items[start:stop]
        yield chunk[0][0], _block([d for d, _ in chunk], [b for _, b in chunk])
        start = stop


def _worth_it(dictionary: zstandard.ZstdCompressionDict, blocks: list[bytes], total: int) -> bool:
    """Whether the dictionary (stored in the file) saves bytes over blocks
    without one, judged on a few blocks spread over the split: very
    repetitive records compress as well alone, and the dictionary would be
    dead weight."""
    sample = blocks[::max(1, len(blocks) // 8)]
    plain = zstandard.ZstdCompressor(level=LEVEL)
    primed = zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary)
    saved = sum(len(plain.compress(b)) - len(primed.compress(b)) for b in sample)
    return saved * total / len(sample) > len(dictionary.as_bytes())


def write(path: Path, records: Iterable[tuple[int, bytes]], dictionary: bool = True) -> int:
    """Write (docId, body) records, any order, as a records file; return its size.

    ``dictionary=False`` writes the blocks without training one (a split
    about to be merged: see ``split.write_split``)."""
    items = sorted(records, key=lambda r: r[0])
    dictionary = _dictionary([b for _, b in items]) if dictionary else None
    blocks = list(_blocks(items))
    del items
    if dictionary is not None and not _worth_it(dictionary, [b for _, b in blocks], len(blocks)):
        dictionary = None
    compressor = zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary)
    dict_bytes = dictionary.as_bytes() if dictionary is not None else b""
    index: list[bytes] = []
    with open(path, "wb") as f:
        f.write(dict_bytes)
        offset = len(dict_bytes)
        for first, block in blocks:
            frame = compressor.compress(block)
            f.write(frame)
            index.append(_ENTRY.pack(first, offset, len(frame)))
            offset += len(frame)
        f.write(b"".join(index))
        f.write(_FOOTER.pack(MAGIC, VERSION, len(index), offset, len(dict_bytes)))
        return offset + len(index) * _ENTRY.size + _FOOTER.size


_cache: LRUCache = LRUCache(CACHE_BYTES, getsizeof=lambda block: len(block[2]) + 12 * len(block[0]) + 64)
_cache_lock = threading.Lock()


class RecordStore:
    """An open records file: the record of a docId, or every record in order."""

    def __init__(self, path: Path):
        self.path = path
        # Mapped, not read: the page cache holds what searches touch, and the
        # kernel can drop it (as with tantivy's own files).
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < _FOOTER.size:
                raise StoreError(f"{path}: {size} bytes is too short for a records file")
            data = self._data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        magic, version, blocks, index_at, dict_len = _FOOTER.unpack_from(data, size - _FOOTER.size)
        if magic != MAGIC or version != VERSION:
            raise StoreError(f"{path}: not a seclake records file (format {version})")
        if index_at + blocks * _ENTRY.size + _FOOTER.size != size or dict_len > index_at:
            raise StoreError(f"{path}: the block index does not fit the file's {size} bytes")
        # The block index as flat arrays: 20 bytes per block held, not a
        # tuple of Python integers.
        self._firsts = array("Q")
        self._offsets = array("Q")
        self._lengths = array("I")
        for i in range(blocks):
            first, offset, length = _ENTRY.unpack_from(data, index_at + i * _ENTRY.size)
            self._firsts.append(first)
            self._offsets.append(offset)
            self._lengths.append(length)
        self._dict = zstandard.ZstdCompressionDict(data[:dict_len]) if dict_len else None
        # One decompressor per open split, used under a lock (zstd's are not
        # for concurrent use): a block takes ~15 us, and one per thread and
        # split would hold a context of its own for every request thread.
        self._zstd = zstandard.ZstdDecompressor(dict_data=self._dict)
        self._zstd_lock = threading.Lock()
        self._key = str(path)

    def _read(self, i: int) -> tuple[tuple[int, ...], tuple[int, ...], bytes]:
        offset, length = self._offsets[i], self._lengths[i]
        try:
            frame = self._data[offset:offset + length]
            with self._zstd_lock:
                raw = self._zstd.decompress(frame)
            (n,) = _COUNT.unpack_from(raw, 0)
            docids = struct.unpack_from(f"<{n}Q", raw, 4)
            ends = struct.unpack_from(f"<{n}I", raw, 4 + 8 * n)
        except (zstandard.ZstdError, struct.error) as e:
            raise StoreError(f"{self.path}: block {i} at byte {offset} is damaged ({e})") from None
        return docids, ends, raw[4 + 12 * n:]

    def _block(self, i: int) -> tuple[tuple[int, ...], tuple[int, ...], bytes]:
        key = (self._key, i)
        with _cache_lock:
            block = _cache.get(key)
        if block is not None:
            return block
        block = self._read(i)
        with _cache_lock:
            _cache[key] = block
        return block

    def get(self, docid: int) -> bytes | None:
        """The body of ``docid``, or None if the split does not hold it."""
        i = bisect.bisect_right(self._firsts, docid) - 1
        if i < 0:
            return None
        docids, ends, bodies = self._block(i)
        j = bisect.bisect_left(docids, docid)
        if j == len(docids) or docids[j] != docid:
            return None
        return bodies[ends[j - 1] if j else 0:ends[j]]

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        """Every (docId, body), in docId order (a merge's input: read past the
        cache, so a merge does not evict what searches keep there).

        The pages a pass has read are given back to the kernel as it goes
        (``MADV_DONTNEED`` on the read-only mapping: the page cache keeps the
        file, a later read maps it again). A pass reads the whole file (a
        merge, a split's columns computed, a split scanned by a query), and
        its pages stayed resident in this process until the kernel needed
        them: 65 MB of record files after the analytics stage of `make bench`
        computed seven splits' columns, counted in the server's memory."""
        released = 0
        for i in range(len(self._firsts)):
            docids, ends, bodies = self._read(i)
            start = 0
            for docid, end in zip(docids, ends):
                yield docid, bodies[start:end]
                start = end
            upto = (self._offsets[i] + self._lengths[i]) // mmap.PAGESIZE * mmap.PAGESIZE
            if upto - released >= RELEASE_BYTES:
                self._release(released, upto)
                released = upto
        self._release(released, len(self._data))

    def _release(self, start: int, end: int) -> None:
        if end > start:
            try:
                self._data.madvise(mmap.MADV_DONTNEED, start, end - start)
            except (ValueError, OSError):  # closed meanwhile, or a kernel without it: only memory
                pass
