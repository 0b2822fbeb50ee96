"""A snap.bin checked as its bytes arrive: :class:`StreamCheck`.

A producer streaming a snapshot (``heapdb receive``, an upload to the service) is refused at its
first bad chunk, not after the whole stream is on disk: the file header, every chunk header's and
payload's checksum, unknown critical kinds and the total expansion limit (docs/format.md, 2.2) are
checked by the reader's own checks (:class:`~heapdb.loader.formats.snapbin.reader.ChunkChecks`) as
soon as their bytes are in, and a stream that ends before its trailer is refused naming the bytes
received. Memory is constant: a payload's checksum is computed as its bytes pass, nothing is kept.
What needs a payload decoded (string indexes, the trailer's counts, duplicate ids) is the reader's,
when the spooled stream is loaded.
"""

from __future__ import annotations

import zlib

from heapdb.loader.formats.snapbin.layout import CHUNK_HEADER, FILE_HEADER, KIND_NAMES, MAGIC, TRAILER
from heapdb.loader.formats.snapbin.reader import ChunkChecks, ChunkHead


class StreamCheck:
    """Feed a snap.bin stream's bytes in any pieces (:meth:`feed`), then :meth:`finish` at its end;
    either raises :class:`~heapdb.errors.FormatError` naming ``name``, the byte offset and the chunk."""

    def __init__(self, name: str) -> None:
        self.checks = ChunkChecks(name, None)
        self.received = 0
        self.complete = False  # the trailer's payload is in
        self._head = bytearray()  # the header being received (the file's, then each chunk's)
        self._chunk: ChunkHead | None = None  # the chunk whose payload is being received
        self._left = 0  # its payload bytes still to come
        self._crc = 0
        self._started = False  # the file header is in and checked

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        while view:
            if self.complete:
                raise self.checks.fail("bytes follow the trailer chunk (nothing may)", self.received)
            if self._chunk is not None:
                part = view[: self._left]
                self._crc = zlib.crc32(part, self._crc)
                self._left -= len(part)
            else:
                part = view[: self._wanted() - len(self._head)]
                self._head += part
            self.received += len(part)
            view = view[len(part) :]
            if self._chunk is not None:
                if not self._left:
                    self._payload_in(self._chunk)
            elif len(self._head) == self._wanted():
                self._header_in()

    def finish(self) -> None:
        """Raise unless the stream ended right after its trailer chunk."""
        if self.complete:
            return
        got = f"after {self.received:,} bytes, before the end of its trailer chunk: cut off (did its producer stop?)"
        if not self._started:
            head = bytes(self._head)
            if not head or not (head.startswith(MAGIC) or MAGIC.startswith(head)):
                self.checks.file_header(head)  # empty, or not snap.bin at all: the reader's words
            raise self.checks.fail(f"the stream ends inside the file header {got}", 0)
        if self._chunk is not None:
            stored = self._chunk.stored
            raise self.checks.fail(
                f"the stream ends inside the payload ({stored - self._left:,} of {stored:,} bytes) {got}",
                self._chunk.offset,  # where the file reader puts a file cut there
                self._chunk.label,
            )
        offset = self.received - len(self._head)
        where = f"inside a chunk header ({len(self._head)} of {CHUNK_HEADER.size} bytes) " if self._head else ""
        raise self.checks.fail(f"the stream ends {where}{got}", offset, f"chunk #{self.checks.totals.chunks}")

    def _wanted(self) -> int:
        return CHUNK_HEADER.size if self._started else FILE_HEADER.size

    def _header_in(self) -> None:
        head, offset = bytes(self._head), self.received - len(self._head)
        self._head.clear()
        if not self._started:
            self.checks.file_header(head)
            self._started = True
            return
        h = self.checks.chunk_header(head, offset)
        if h.kind in KIND_NAMES:  # refused before its payload comes: a stream needs no file size for it
            self.checks.expansion(h)
        self._chunk, self._left, self._crc = h, h.stored, 0
        if not h.stored:
            self._payload_in(h)

    def _payload_in(self, h: ChunkHead) -> None:
        self._chunk = None
        self.complete = self.checks.payload(h, self._crc) and h.kind == TRAILER
