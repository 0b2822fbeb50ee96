"""The stack traces of an hprof dump (``STACK_FRAME`` and ``STACK_TRACE`` records) as the graph's
source locations and allocation stacks (:mod:`heapdb.loader.sources`); the docstring of
:mod:`heapdb.loader.formats.hprof` says which objects get which. Frames and traces are decoded with
numpy into flat arrays: no Python object per record."""

from __future__ import annotations

import numpy as np

from heapdb.loader.formats.hprof.dump import Dump
from heapdb.loader.formats.hprof.layout import ROOT_KINDS, TAG_STACK_FRAME, TAG_STACK_TRACE
from heapdb.loader.formats.hprof.scan import EDGE_RUN, object_traces
from heapdb.loader.sources import AllocationTraces, SourceLocations
from heapdb.units import shorten

# The most characters of a class's or a method's name a frame's function name takes: frames naming
# one huge name would each make a copy of it, their lengths times its.
FUNCTION_PART_LIMIT = 1000


class StackTraces:
    """Frames sorted by id, traces sorted by serial (a serial written twice: the first), the traces'
    frame ids end to end."""

    def __init__(self, dump: Dump, tags: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> None:
        """Decode every ``STACK_FRAME`` and ``STACK_TRACE`` among the top-level records (their tags,
        body offsets and lengths)."""
        self.dump = dump
        id_size = self.dump.id_size
        is_frame = tags == TAG_STACK_FRAME
        bad = is_frame & (lengths != 4 * id_size + 8)
        if bad.any():
            raise self.dump.error(f"a STACK_FRAME record must be {4 * id_size + 8} bytes long", offsets[bad][0] - 9)
        f_off = offsets[is_frame]
        f_ids = self.dump.ids_at(f_off)
        order = np.argsort(f_ids, kind="stable")
        self.frame_ids = f_ids[order]
        f_off = f_off[order]
        self.frame_method = self.dump.ids_at(f_off + id_size)
        self.frame_source = self.dump.ids_at(f_off + 3 * id_size)
        self.frame_class = self.dump.u4s_at(f_off + 4 * id_size)
        self.frame_line = self.dump.u4s_at(f_off + 4 * id_size + 4).astype(np.uint32).view(np.int32)

        is_trace = tags == TAG_STACK_TRACE
        short = is_trace & (lengths < 12)
        if short.any():
            raise self.dump.error("a STACK_TRACE record shorter than its 12-byte head", offsets[short][0] - 9)
        t_off, t_len = offsets[is_trace], lengths[is_trace]
        count = self.dump.u4s_at(t_off + 8)
        wrong = t_len != 12 + count * id_size
        if wrong.any():
            raise self.dump.error(
                f"a STACK_TRACE record's length does not match its frame count ({id_size}-byte frame ids)",
                t_off[wrong][0] - 9,
            )
        serial = self.dump.u4s_at(t_off)
        self.trace_serials, first = np.unique(serial, return_index=True)  # sorted; a repeated serial: its first
        self.trace_thread = self.dump.u4s_at(t_off + 4)[first]
        self.trace_count = count[first]
        self.trace_start = np.zeros(len(first), dtype=np.int64)
        if len(first):
            np.cumsum(self.trace_count[:-1], out=self.trace_start[1:])
        total = int(self.trace_count.sum())
        within = np.arange(total, dtype=np.int64) - np.repeat(self.trace_start, self.trace_count)
        self.trace_frames = self.dump.ids_at(np.repeat(t_off[first] + 12, self.trace_count) + within * id_size)

    def frame_index(self, frame_ids: np.ndarray) -> np.ndarray:
        """Indexes of frame ids into the sorted frame arrays, -1 where no STACK_FRAME has that id."""
        return lookup(self.frame_ids, frame_ids)

    def frame_function(self, f: int) -> str:
        """Frame ``f``'s method as Java names it, ``com.example.Cache.put`` (its class when known;
        each part cut to :data:`FUNCTION_PART_LIMIT` characters, an ellipsis marking the cut)."""
        method = self.dump.string(int(self.frame_method[f])) or "(unknown method)"
        class_id = self.dump.class_by_serial.get(int(self.frame_class[f]))
        if class_id is None or class_id not in self.dump.load_class:
            return method
        return f"{shorten(self.dump.class_name(class_id), FUNCTION_PART_LIMIT)}.{shorten(method, FUNCTION_PART_LIMIT)}"

    def source_strings(self, frames: np.ndarray) -> np.ndarray:
        """The source file of each frame (indexes, -1: none) as an index into the graph's strings, -1
        when the frame, its source id or its string is unknown or the name is empty."""
        out = np.full(len(frames), -1, dtype=np.int64)
        known = frames >= 0
        source_ids = self.frame_source[frames[known]]
        unique, inverse = np.unique(source_ids, return_inverse=True)
        texts = [self.dump.string(int(sid)) for sid in unique.tolist()]
        interned = np.asarray([self.dump.strings.intern(t) if t else -1 for t in texts], dtype=np.int64)
        out[known] = interned[inverse.reshape(-1)]
        return out

    def frame_locations(self, rows: dict[str, np.ndarray], rooted: np.ndarray) -> SourceLocations | None:
        """The locations of objects held by Java frame and JNI local roots (see the module docstring)."""
        kinds = rows["root_kind"]
        codes = {kind: i for i, kind in enumerate(ROOT_KINDS)}
        thread_roots = kinds == codes["thread"]
        # Thread serial -> its stack trace: the thread object's root first, else the one trace naming the
        # thread (a thread several traces name, say Android's allocation sites, has no stack here).
        named, once = np.unique(self.trace_thread, return_counts=True)
        alone = np.isin(self.trace_thread, named[once == 1]) & (self.trace_thread != 0)
        t_serial = np.concatenate([rows["root_thread"][thread_roots], self.trace_thread[alone]])
        t_trace = np.concatenate([rows["root_frame"][thread_roots], self.trace_serials[alone]])
        t_serial, first = np.unique(t_serial, return_index=True)
        t_trace = t_trace[first]

        held = ((kinds == codes["java frame"]) | (kinds == codes["jni local"])) & (rooted >= 0)
        which = np.flatnonzero(held)
        if not len(which) or not len(self.trace_serials):
            return None
        thread = rows["root_thread"][which]
        depth = rows["root_frame"][which]
        trace = lookup(self.trace_serials, pick(t_trace, lookup(t_serial, thread), -1))
        ok = (trace >= 0) & (depth < pick(self.trace_count, trace, 0))  # a frame number -1 is 0xFFFFFFFF here
        frame_id = self.trace_frames[self.trace_start[trace[ok]] + depth[ok]]
        frame = self.frame_index(frame_id)
        script = self.source_strings(frame)
        good = script >= 0
        which, thread, depth = which[ok][good], thread[ok][good], depth[ok][good]
        frame, script = frame[good], script[good]
        if not len(which):
            return None
        node = rooted[which].astype(np.int64)
        # Per object: the thread of its first root in file order, then that thread's innermost frame.
        by_root = np.lexsort((which, node))
        starts = np.ones(len(by_root), dtype=bool)
        starts[1:] = node[by_root][1:] != node[by_root][:-1]
        first_thread = np.repeat(thread[by_root][starts], np.diff(np.flatnonzero(np.append(starts, True))))
        same = np.zeros(len(node), dtype=bool)
        same[by_root] = thread[by_root] == first_thread
        keep = np.flatnonzero(same)
        by_depth = keep[np.lexsort((depth[keep], node[keep]))]
        starts = np.ones(len(by_depth), dtype=bool)
        starts[1:] = node[by_depth][1:] != node[by_depth][:-1]
        chosen = by_depth[starts]
        line = self.frame_line[frame[chosen]]
        return SourceLocations(
            node=node[chosen].astype(np.int32),
            script_id=np.full(len(chosen), -1, dtype=np.int32),
            script=script[chosen].astype(np.int32),
            line=np.where(line > 0, line - 1, -1).astype(np.int32),
            column=np.full(len(chosen), -1, dtype=np.int32),
        )

    def allocation_traces(self, rows: dict[str, np.ndarray], n: int, first_obj: int) -> AllocationTraces | None:
        """Allocation stacks of the instances and arrays whose stack trace serial names a trace with
        frames (see the module docstring), as a call tree: one chain of nodes per trace used, under a
        synthetic top node 0."""
        if not len(self.trace_serials) or not (self.trace_count > 0).any() or not len(rows["obj_off"]):
            return None
        with_frames = np.flatnonzero(self.trace_count > 0)
        serials, kinds, offsets = self.trace_serials[with_frames], rows["obj_kind"], rows["obj_off"]
        # A run of objects at a time, its part of the file released once read; the whole column
        # only once an object names such a trace (HotSpot's all name its dummy trace: none does).
        out = None
        for a in range(0, len(offsets), EDGE_RUN):
            b = min(a + EDGE_RUN, len(offsets))
            run = np.zeros(b - a, dtype=np.int32)  # the kernel writes each object's trace, index into with_frames
            if object_traces(self.dump.buf, kinds[a:b], offsets[a:b], self.dump.id_size, serials, run):
                if out is None:
                    out = np.full(n, -1, dtype=np.int32)
                out[first_obj + a : first_obj + b] = run
            self.dump.release(int(offsets[a]), int(offsets[b - 1]))
        if out is None:
            return None
        part = out[first_obj:]
        hit = part >= 0
        named = part[hit]
        used = np.flatnonzero(np.bincount(named, minlength=len(with_frames)))
        counts = self.trace_count[with_frames[used]]
        tree_start = np.ones(len(used), dtype=np.int64)  # node 0 is the top
        np.cumsum(counts[:-1], out=tree_start[1:])
        tree_start[1:] += 1
        t = 1 + int(counts.sum())
        within = np.arange(t - 1, dtype=np.int64) - np.repeat(tree_start - 1, counts)
        frame = self.frame_index(self.trace_frames[np.repeat(self.trace_start[with_frames[used]], counts) + within])
        # Functions: 0 is "(unknown frame)" (also the top node's), then each frame used, once.
        real = np.unique(frame[frame >= 0])
        intern = self.dump.strings.intern
        names = [intern("(unknown frame)")] + [intern(self.frame_function(int(f))) for f in real.tolist()]
        scripts = np.concatenate([[intern("")], self.source_strings(real)])
        scripts[scripts < 0] = intern("")
        lines = np.concatenate([[-1], self.frame_line[real].astype(np.int64)])
        nodes = np.arange(1, t, dtype=np.int64)
        outermost = np.repeat(tree_start + counts - 1, counts)  # each chain hangs off the top node
        parent = np.concatenate([[-1], np.where(nodes == outermost, 0, nodes + 1)]).astype(np.int32)
        function = np.zeros(t, dtype=np.int32)
        function[1:] = np.where(frame < 0, 0, 1 + np.searchsorted(real, frame))
        chain = np.full(len(with_frames), -1, dtype=np.int64)
        chain[used] = tree_start
        part[hit] = chain[named]
        f = len(names)
        return AllocationTraces(
            trace=out,
            parent=parent,
            function=function,
            function_name=np.asarray(names, dtype=np.int32),
            function_script=scripts.astype(np.int32),
            function_script_id=np.full(f, -1, dtype=np.int32),
            function_line=np.where(lines > 0, lines - 1, -1).astype(np.int32),
            function_column=np.full(f, -1, dtype=np.int32),
        )


def lookup(sorted_keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Indexes of ``wanted`` in ``sorted_keys``, -1 where absent."""
    if not len(sorted_keys):
        return np.full(len(wanted), -1, dtype=np.int64)
    pos = np.searchsorted(sorted_keys, wanted)
    pos[pos >= len(sorted_keys)] = 0
    return np.where(sorted_keys[pos] == wanted, pos, -1).astype(np.int64)


def pick(values: np.ndarray, index: np.ndarray, missing: int) -> np.ndarray:
    """``values[index]``, ``missing`` where ``index`` is -1."""
    if not len(values):
        return np.full(len(index), missing, dtype=np.int64)
    return np.where(index >= 0, values[np.maximum(index, 0)], missing).astype(np.int64)
