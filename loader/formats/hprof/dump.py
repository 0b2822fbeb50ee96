"""What every part of the hprof reader reads from: the mapped file with its id size, the dump's
``STRING`` and ``LOAD_CLASS`` records (names decoded only when asked for), and the string table of
the graph being built."""

from __future__ import annotations

import mmap
import os

import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.formats.hprof.layout import TAG_LOAD_CLASS, TAG_STRING, java_name
from heapdb.loader.graph import StringTable


class Dump:
    """One hprof file being read: ``buf`` maps it whole, its records start at ``start``."""

    def __init__(self, path: str | os.PathLike[str], id_size: int, start: int) -> None:
        self.path = path
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        # A plain ndarray over the mapping (numba takes no memmap subclass); it keeps the mapping
        # alive for as long as the graph's values read from it.
        self.buf = np.frombuffer(self._map, dtype=np.uint8)
        self.id_size = id_size
        self.start = start
        self.strings = StringTable()  # the graph's, which every part interns into
        # Each STRING and class name decoded once: many records may name one string (a class's
        # fields, classes, heaps), and a copy each would cost its length times theirs.
        self._texts: dict[int, str | None] = {}
        self._class_names: dict[int, str] = {}

    def release(self, start: int, end: int) -> None:
        """Drop the pages of ``buf[start:end]`` from the process's memory once a pass has read them:
        they stay in the kernel's page cache and come back on the next read, but do not count in the
        process's memory beside its arrays (a dump of several GB would otherwise add its whole size
        to the reader's peak)."""
        page = mmap.PAGESIZE
        lo, hi = start // page * page, end // page * page
        if hi > lo:
            self._map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def error(self, problem: str, offset: int) -> FormatError:
        return FormatError(self.path, problem, offset=int(offset))

    def ids_at(self, positions: np.ndarray) -> np.ndarray:
        out = np.zeros(len(positions), dtype=np.uint64)
        for k in range(self.id_size):
            out = (out << np.uint64(8)) | self.buf[positions + k].astype(np.uint64)
        return out.view(np.int64)

    def u4s_at(self, positions: np.ndarray) -> np.ndarray:
        out = np.zeros(len(positions), dtype=np.int64)
        for k in range(4):
            out = (out << 8) | self.buf[positions + k].astype(np.int64)
        return out

    def index_names(self, tags: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> None:
        """Index the ``STRING`` and ``LOAD_CLASS`` records among the top-level records (their tags,
        body offsets and lengths)."""
        id_size = self.id_size
        # Strings: sorted ids -> (offset, length) for binary search; names decoded only when needed.
        is_string = tags == TAG_STRING
        short = is_string & (lengths < id_size)
        if short.any():
            raise self.error(f"a STRING record shorter than its {id_size}-byte id", offsets[short][0] - 9)
        s_off, s_len = offsets[is_string], lengths[is_string]
        s_ids = self.ids_at(s_off)
        order = np.argsort(s_ids, kind="stable")
        self.s_ids, self.s_off, self.s_len = s_ids[order], s_off[order], s_len[order]

        # LOAD_CLASS: class object id -> name string id.
        is_load = tags == TAG_LOAD_CLASS
        bad_load = is_load & (lengths != 8 + 2 * id_size)
        if bad_load.any():
            raise self.error(f"a LOAD_CLASS record must be {8 + 2 * id_size} bytes long", offsets[bad_load][0] - 9)
        l_off = offsets[is_load]
        self.load_class = dict(
            zip(self.ids_at(l_off + 4).tolist(), self.ids_at(l_off + 8 + id_size).tolist(), strict=True)
        )
        self.class_by_serial = dict(zip(self.u4s_at(l_off).tolist(), self.ids_at(l_off + 4).tolist(), strict=True))

    def string(self, string_id: int) -> str | None:
        """The ``STRING`` record ``string_id``'s text, None when the dump has none."""
        if string_id not in self._texts:
            self._texts[string_id] = self._decode(string_id)
        return self._texts[string_id]

    def _decode(self, string_id: int) -> str | None:
        i = int(np.searchsorted(self.s_ids, string_id))
        if i >= len(self.s_ids) or self.s_ids[i] != string_id:
            return None
        lo = int(self.s_off[i]) + self.id_size
        hi = int(self.s_off[i] + self.s_len[i])
        return bytes(self.buf[lo:hi]).decode("utf-8", errors="replace")

    def class_name(self, class_id: int) -> str:
        """The Java name ``LOAD_CLASS`` gives the class object ``class_id``."""
        name_id = self.load_class.get(class_id)
        text = self.string(name_id) if name_id is not None else None
        if text is None:
            return f"(class 0x{class_id:x})"
        assert name_id is not None
        if name_id not in self._class_names:
            self._class_names[name_id] = java_name(text)
        return self._class_names[name_id]
