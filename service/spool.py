"""An upload streamed to a file: decompressed on the way (gzip, zstd), counted against the size
limit, its format sniffed from its first bytes, and a snap.bin checked chunk by chunk as it arrives
(:class:`~heapdb.loader.formats.snapbin.stream.StreamCheck`), so a corrupted or cut-off one is
refused at once. Memory stays bounded whatever the upload's size or compression ratio: each piece
of compressed input yields at most a few MiB of output at a time. ``heapdb receive`` spools a
socket's stream with it too."""

from __future__ import annotations

import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from heapdb.errors import FormatError, NoSpace, UnsupportedEncoding, UploadError, UploadTooLarge
from heapdb.units import human_bytes

if TYPE_CHECKING:
    from heapdb.loader.formats.snapbin.stream import StreamCheck

GZIP_OUTPUT = 4 << 20  # bytes of output per call into zlib
READ_BACK = 1 << 20  # bytes of the spool file read back at a time, to check what came before its format was known
ZSTD_INPUT = 1024  # compressed bytes per call into zstd: at most 128 KiB of output per 4 bytes of input
ENCODINGS = ("identity", "gzip", "zstd")
_MEDIA_ENCODINGS = {"application/gzip": "gzip", "application/x-gzip": "gzip", "application/zstd": "zstd"}


def check_room(directory: Path, needed: int, reserve: int) -> None:
    """Refuse (507) when writing ``needed`` more bytes into ``directory`` would leave less than
    ``reserve`` free on its file system."""
    if reserve == 0:
        return
    directory.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(directory).free
    if free - needed < reserve:
        raise NoSpace(
            f"no room for the upload: {human_bytes(free)} free in {directory}, and the service keeps "
            f"{human_bytes(reserve)} free (HEAPDB_MIN_FREE_BYTES) for loads and Neo4j"
        )


def encoding_of(content_encoding: str | None, content_type: str | None) -> str:
    """The upload's compression, from ``Content-Encoding`` (or a ``Content-Type`` of
    ``application/gzip`` or ``application/zstd``): one of :data:`ENCODINGS`."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        media = (content_type or "").split(";")[0].strip().lower()
        return _MEDIA_ENCODINGS.get(media, "identity")
    if encoding in ("gzip", "x-gzip"):
        return "gzip"
    if encoding == "zstd":
        return "zstd"
    raise UnsupportedEncoding(f"cannot decompress Content-Encoding {encoding!r}: send the snapshot as is, gzip or zstd")


class Decoder(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]: ...

    def complete(self) -> bool: ...


class Identity:
    def feed(self, data: bytes) -> Iterator[bytes]:
        yield data

    def complete(self) -> bool:
        return True


class Gzip:
    """gzip members one after the other (as ``cat a.gz b.gz`` makes), each output piece bounded."""

    def __init__(self) -> None:
        self._member: zlib._Decompress | None = None

    def feed(self, data: bytes) -> Iterator[bytes]:
        while True:
            if self._member is None:
                if not data:
                    return
                self._member = zlib.decompressobj(wbits=31)
            try:
                out = self._member.decompress(data, GZIP_OUTPUT)
            except zlib.error as e:
                raise UploadError(f"the gzip stream is corrupt: {e}") from None
            if out:
                yield out
            if self._member.eof:
                data, self._member = self._member.unused_data, None
                continue
            data = self._member.unconsumed_tail
            if not data and len(out) < GZIP_OUTPUT:
                return

    def complete(self) -> bool:
        return self._member is None


class Zstd:
    """zstd frames one after the other, fed a little at a time so that no call makes much output."""

    def __init__(self) -> None:
        self._frame: object | None = None

    def feed(self, data: bytes) -> Iterator[bytes]:
        import zstandard

        for start in range(0, len(data), ZSTD_INPUT):
            piece = data[start : start + ZSTD_INPUT]
            while piece:
                if self._frame is None:
                    self._frame = zstandard.ZstdDecompressor().decompressobj()
                frame = self._frame
                try:
                    out = frame.decompress(piece)  # type: ignore[attr-defined]
                except zstandard.ZstdError as e:
                    raise UploadError(f"the zstd stream is corrupt: {e}") from None
                if out:
                    yield out
                if frame.eof:  # type: ignore[attr-defined]
                    piece, self._frame = frame.unused_data, None  # type: ignore[attr-defined]
                else:
                    piece = b""

    def complete(self) -> bool:
        return self._frame is None


def decoder(encoding: str) -> Decoder:
    if encoding == "gzip":
        return Gzip()
    if encoding == "zstd":
        return Zstd()
    return Identity()


class Spooler:
    """Writes one upload to ``path``; :meth:`finish` checks it is whole and a snapshot, and returns
    its format. On any error the caller calls :meth:`discard`, which leaves nothing behind. Errors
    call it ``name``."""

    def __init__(self, path: Path, encoding: str, limit: int, reserve: int = 0, name: str = "the upload") -> None:
        from heapdb.loader.formats import SNIFF_BYTES

        self.path = path
        self.name = name
        self._check: StreamCheck | None = None  # once the upload sniffs as snap.bin
        self.encoding = encoding
        self.limit = limit
        self.reserve = reserve  # free bytes to leave on the disk (HEAPDB_MIN_FREE_BYTES)
        self.received = 0
        self.stored = 0
        self.format: str | None = None
        self._sniff_at = SNIFF_BYTES
        self._decoder = decoder(encoding)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb")  # noqa: SIM115 - closed by finish or discard

    def write(self, chunk: bytes) -> None:
        self.received += len(chunk)
        if self.received > self.limit:
            raise self._too_large()
        for piece in self._decoder.feed(chunk):
            self._store(piece)
        # Once per chunk (a few MiB): the disk fills from other writers too, Neo4j first of all.
        check_room(self.path.parent, 0, self.reserve)

    def _store(self, piece: bytes) -> None:
        self.stored += len(piece)
        if self.stored > self.limit:
            raise self._too_large()
        self._file.write(piece)
        if self._check is not None:
            self._check.feed(piece)
        elif self.format is None and self.stored >= self._sniff_at:
            self._sniff()

    def _too_large(self) -> UploadTooLarge:
        said = "decompressed, " if self.stored > self.limit and self.encoding != "identity" else ""
        return UploadTooLarge(
            f"{self.name} is {said}larger than the limit of {human_bytes(self.limit)} "
            f"({self.limit:,} bytes, HEAPDB_MAX_UPLOAD_BYTES)"
        )

    def _sniff(self) -> None:
        from heapdb.loader import formats

        self._file.flush()
        try:
            self.format = formats.detect(self.path).name
        except FormatError as e:
            raise UploadError(f"{self.name} is not a snapshot heapdb reads: {e.problem}") from None
        if self.format == formats.SNAPBIN.name:  # checked from here on as it arrives; first what is in
            from heapdb.loader.formats.snapbin.stream import StreamCheck

            self._check = StreamCheck(self.name)
            with open(self.path, "rb") as f:
                while head := f.read(READ_BACK):
                    self._check.feed(head)

    def finish(self) -> str:
        if not self._decoder.complete():
            raise UploadError(
                f"the {self.encoding} stream ends early: {self.name} was cut off after {self.received:,} bytes"
            )
        if self.stored == 0:
            raise UploadError(f"{self.name} is empty: it ended before the first byte of a snapshot")
        if self.format is None:
            self._sniff()
        if self._check is not None:
            self._check.finish()
        self._file.close()
        assert self.format is not None
        return self.format

    def discard(self) -> None:
        self._file.close()
        self.path.unlink(missing_ok=True)
