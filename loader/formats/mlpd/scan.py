"""The .mlpd reader's numba kernels: walking every buffer and event of the file (count, then fill)
into row tables of the buffers, classes, vtables, root areas, heapshots and root events, then reading
one heapshot's objects, references and roots into flat arrays.

Every number and string is checked against the end of its buffer; a kernel stops at the first
problem and records its code (:data:`~heapdb.loader.formats.mlpd.layout.ERRORS`) and position in the
state array, which the reader (:mod:`heapdb.loader.formats.mlpd`) turns into a message.

Why this module is long: every event kind of the log format must be decoded to be skipped (one
branch each, in the order ``mono/profiler/log.h`` lists them), and each decoder checks every number
and string against its buffer's end.
"""

from __future__ import annotations

import numba
import numpy as np

from heapdb.loader.formats.mlpd.layout import (
    B_AT,
    B_LEN,
    B_OBJ,
    B_PTR,
    B_THREAD,
    B_TIME,
    BUF_ID,
    BUFFER_HEADER,
    C_NAME_AT,
    C_NAME_END,
    C_PTR,
    CODE_BUFFER_SPECIFIC_TRAMPOLINE,
    COUNTER_DOUBLE,
    COUNTER_PERFCOUNTERS,
    COUNTER_STRING,
    E_AT,
    E_BUF,
    E_COUNT,
    E_TIME,
    END_LOAD,
    GC_EVENT_START,
    H_END,
    H_END_AT,
    H_END_BUF,
    H_EVENTS,
    H_FIRST_AT,
    H_FIRST_BUF,
    H_GCS,
    H_HEAP_SIZE,
    H_NURSERY,
    H_OBJECTS,
    H_REFS,
    H_START,
    H_THREAD,
    HEAP_END,
    HEAP_OBJECT,
    HEAP_ROOT,
    HEAP_ROOT_REGISTER,
    HEAP_ROOT_UNREGISTER,
    HEAP_START,
    META_ASSEMBLY,
    META_CLASS,
    META_CONTEXT,
    META_DOMAIN,
    META_IMAGE,
    META_THREAD,
    META_VTABLE,
    R_DESC_AT,
    R_DESC_END,
    R_KEY,
    R_SIZE,
    R_SOURCE,
    R_START,
    R_TIME,
    ST_BUFFERS,
    ST_CLASSES,
    ST_ERROR,
    ST_ERROR_AT,
    ST_HEAPSHOTS,
    ST_REGISTERS,
    ST_ROOT_EVENTS,
    ST_THREADS,
    ST_VTABLES,
    TYPE_ALLOC,
    TYPE_EXCEPTION,
    TYPE_GC,
    TYPE_HEAP,
    TYPE_META,
    TYPE_METADATA,
    TYPE_METHOD,
    TYPE_MONITOR,
    TYPE_RUNTIME,
    TYPE_SAMPLE,
    V_CLASS,
    V_PTR,
)

_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # spreads thread ids over the thread table
FREE_SLOT = -2  # a thread table slot no thread has taken (-1 is a thread with no heapshot open)

# Negative positions the decoders return instead of a position: the error code is its negation.
_CUT, _LONG, _TYPE, _SUBTYPE, _META, _COUNTER = -4, -5, -6, -7, -8, -9


@numba.njit(cache=True, nogil=True, inline="always")
def _u32(buf, p):
    return np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16) | (np.int64(buf[p + 3]) << 24)


@numba.njit(cache=True, nogil=True, inline="always")
def _u64(buf, p):
    value = np.uint64(0)
    for k in range(8):
        value |= np.uint64(buf[p + k]) << np.uint64(8 * k)
    return np.int64(value)


@numba.njit(cache=True, nogil=True, inline="always")
def _leb(buf, p, end, signed):
    """(value, position after it) of a LEB128 number, ``signed`` ones sign-extended from the last
    byte's bit 6; the position is negative (an error code) past ``end`` or past 64 bits."""
    value = np.uint64(0)
    shift = 0
    while True:
        if p >= end:
            return np.int64(0), np.int64(_CUT)
        b = buf[p]
        p += 1
        if shift > 63:
            return np.int64(0), np.int64(_LONG)
        value |= np.uint64(b & 0x7F) << np.uint64(shift)
        shift += 7
        if b < 0x80:
            if signed and shift < 64 and (b & 0x40):
                value |= ~np.uint64(0) << np.uint64(shift)
            return np.int64(value), np.int64(p)


@numba.njit(cache=True, nogil=True)
def _uleb(buf, p, end):
    return _leb(buf, p, end, False)


@numba.njit(cache=True, nogil=True)
def _sleb(buf, p, end):
    return _leb(buf, p, end, True)


@numba.njit(cache=True, nogil=True)
def _skip_leb(buf, p, end, count):
    """The position after ``count`` LEB128 numbers (signed or not: the same bytes end them)."""
    for _ in range(count):
        _, p = _uleb(buf, p, end)
        if p < 0:
            return p
    return p


@numba.njit(cache=True, nogil=True)
def _skip_string(buf, p, end):
    """The position after a NUL-terminated string."""
    while p < end:
        if buf[p] == 0:
            return p + 1
        p += 1
    return np.int64(_CUT)


@numba.njit(cache=True, nogil=True)
def _skip_backtrace(buf, p, end):
    count, p = _uleb(buf, p, end)
    if p < 0:
        return p
    return _skip_leb(buf, p, end, count)


@numba.njit(cache=True, nogil=True)
def _skip_byte(p, end):
    return p + 1 if p < end else np.int64(_CUT)


@numba.njit(cache=True, nogil=True)
def skip_payload(buf, p, end, event):
    """The position after the payload of ``event`` (its first byte), ``p`` being just after its time."""
    kind = event & 0x0F
    sub = event & 0xF0
    if kind == TYPE_ALLOC:  # vtable, object, size, [backtrace]
        p = _skip_leb(buf, p, end, 3)
        if p >= 0 and sub == 0x10:
            p = _skip_backtrace(buf, p, end)
        return p
    if kind == TYPE_GC:
        if sub == 0x10:  # GC event: event type and generation bytes
            return _skip_byte(_skip_byte(p, end), end) if p < end else np.int64(_CUT)
        if sub == 0x20:  # resize: heap size
            return _skip_leb(buf, p, end, 1)
        if sub == 0x30:  # moves: count, then count addresses
            count, p = _uleb(buf, p, end)
            return p if p < 0 else _skip_leb(buf, p, end, count)
        if sub == 0x40 or sub == 0x60:  # handle created: type, handle, object, [backtrace]
            p = _skip_leb(buf, p, end, 3)
            if p >= 0 and sub == 0x60:
                p = _skip_backtrace(buf, p, end)
            return p
        if sub == 0x50 or sub == 0x70:  # handle destroyed: type, handle, [backtrace]
            p = _skip_leb(buf, p, end, 2)
            if p >= 0 and sub == 0x70:
                p = _skip_backtrace(buf, p, end)
            return p
        if sub == 0x80 or sub == 0x90:  # finalization starts, ends
            return p
        if sub == 0xA0 or sub == 0xB0:  # an object's finalizer starts, ends
            return _skip_leb(buf, p, end, 1)
        return np.int64(_SUBTYPE)
    if kind == TYPE_METADATA:
        if p >= end:
            return np.int64(_CUT)
        meta = buf[p]
        p = _skip_leb(buf, p + 1, end, 1)  # the pointer
        if p < 0:
            return p
        if meta == META_CLASS:  # image, name
            p = _skip_leb(buf, p, end, 1)
            return p if p < 0 else _skip_string(buf, p, end)
        if meta == META_IMAGE:  # name, and on load the module version id
            p = _skip_string(buf, p, end)
            if p >= 0 and sub == END_LOAD:
                p = _skip_string(buf, p, end)
            return p
        if meta == META_ASSEMBLY:  # image, name
            p = _skip_leb(buf, p, end, 1)
            return p if p < 0 else _skip_string(buf, p, end)
        if meta in (META_DOMAIN, META_THREAD):  # a name event (no sub-type) has the name
            return _skip_string(buf, p, end) if sub == 0 else p
        if meta == META_CONTEXT:  # domain
            return _skip_leb(buf, p, end, 1)
        if meta == META_VTABLE:  # domain, class
            return _skip_leb(buf, p, end, 2)
        return np.int64(_META)
    if kind == TYPE_METHOD:  # method, and for a JIT event code address, size, name
        p = _skip_leb(buf, p, end, 1)
        if p >= 0 and sub == 0x40:
            p = _skip_leb(buf, p, end, 2)
            if p >= 0:
                p = _skip_string(buf, p, end)
        return p
    if kind == TYPE_EXCEPTION:
        if event & 0x70 == 0x10:  # clause: type byte, index, method, exception object
            return _skip_leb(buf, _skip_byte(p, end), end, 3) if p < end else np.int64(_CUT)
        p = _skip_leb(buf, p, end, 1)  # a throw: the object, [backtrace]
        if p >= 0 and event & 0x80:
            p = _skip_backtrace(buf, p, end)
        return p
    if kind == TYPE_MONITOR:  # event byte, object, [backtrace]
        if p >= end:
            return np.int64(_CUT)
        p = _skip_leb(buf, p + 1, end, 1)
        if p >= 0 and event & 0x80:
            p = _skip_backtrace(buf, p, end)
        return p
    if kind == TYPE_HEAP:
        if sub in (HEAP_START, HEAP_END):
            return p
        if sub == HEAP_OBJECT:  # object, vtable, size, generation byte, count, count (offset, object)
            p = _skip_leb(buf, p, end, 3)
            if p < 0:
                return p
            if p >= end:
                return np.int64(_CUT)
            count, p = _uleb(buf, p + 1, end)
            return p if p < 0 else _skip_leb(buf, p, end, 2 * count)
        if sub == HEAP_ROOT:  # count, count (address, object)
            count, p = _uleb(buf, p, end)
            return p if p < 0 else _skip_leb(buf, p, end, 2 * count)
        if sub == HEAP_ROOT_REGISTER:  # start, size, source byte, key, description
            p = _skip_leb(buf, p, end, 2)
            if p < 0:
                return p
            if p >= end:
                return np.int64(_CUT)
            p = _skip_leb(buf, p + 1, end, 1)
            return p if p < 0 else _skip_string(buf, p, end)
        if sub == HEAP_ROOT_UNREGISTER:  # start
            return _skip_leb(buf, p, end, 1)
        return np.int64(_SUBTYPE)
    if kind == TYPE_SAMPLE:
        if sub == 0x00:  # hit: thread, count addresses, count methods
            p = _skip_leb(buf, p, end, 1)
            for _ in range(2):
                if p < 0:
                    return p
                count, p = _uleb(buf, p, end)
                if p >= 0:
                    p = _skip_leb(buf, p, end, count)
            return p
        if sub == 0x10:  # unmanaged symbol: address, size, name
            p = _skip_leb(buf, p, end, 2)
            return p if p < 0 else _skip_string(buf, p, end)
        if sub == 0x30:  # counter descriptions
            count, p = _uleb(buf, p, end)
            for _ in range(count):
                if p < 0:
                    return p
                section, p = _uleb(buf, p, end)
                if p >= 0 and section == COUNTER_PERFCOUNTERS:
                    p = _skip_string(buf, p, end)
                if p >= 0:
                    p = _skip_string(buf, p, end)  # the counter's name
                if p >= 0:
                    p = _skip_leb(buf, p, end, 4)  # type, unit, variance, index
            return p
        if sub == 0x40:  # counter values, up to an index 0
            while True:
                index, p = _uleb(buf, p, end)
                if p < 0 or index == 0:
                    return p
                kind_of_value, p = _uleb(buf, p, end)
                if p < 0:
                    return p
                if kind_of_value == COUNTER_STRING:
                    if p >= end:
                        return np.int64(_CUT)
                    present = buf[p]
                    p += 1
                    if present:
                        p = _skip_string(buf, p, end)
                elif kind_of_value == COUNTER_DOUBLE:
                    p = p + 8 if p + 8 <= end else np.int64(_CUT)
                elif kind_of_value <= 4 or kind_of_value == 7:
                    p = _skip_leb(buf, p, end, 1)
                else:
                    return np.int64(_COUNTER)
        return np.int64(_SUBTYPE)
    if kind == TYPE_RUNTIME:
        if sub == 0x10:  # code buffer: kind byte, address, size, [name]
            if p >= end:
                return np.int64(_CUT)
            buffer_kind = buf[p]
            p = _skip_leb(buf, p + 1, end, 2)
            if p >= 0 and buffer_kind == CODE_BUFFER_SPECIFIC_TRAMPOLINE:
                p = _skip_string(buf, p, end)
            return p
        return np.int64(_SUBTYPE)
    if kind == TYPE_META:
        if sub == 0x00:  # sync point: type byte
            return _skip_byte(p, end)
        if sub == 0x10:  # AOT id
            return _skip_string(buf, p, end)
        return np.int64(_SUBTYPE)
    return np.int64(_TYPE)


@numba.njit(cache=True, nogil=True, inline="always")
def _take(st, counter):
    """The next row of the table whose row count is ``st[counter]``, counted."""
    row = st[counter]
    st[counter] = row + 1
    return row


@numba.njit(cache=True, nogil=True)
def _fail(st, code, at):
    st[ST_ERROR] = code
    st[ST_ERROR_AT] = at


@numba.njit(cache=True, nogil=True)
def _thread_slot(threads, open_hs, st, thread):
    """The slot of ``thread`` in the thread table (open addressing over a power-of-two table at least
    twice the buffer count, so a file of many threads costs no more than one of few), taken (with
    no heapshot open) when new."""
    mask = threads.shape[0] - 1
    j = np.int64((np.uint64(thread) * _FIBONACCI) >> np.uint64(32)) & mask
    while open_hs[j] != FREE_SLOT:
        if threads[j] == thread:
            return j
        j = (j + 1) & mask
    threads[j] = thread
    open_hs[j] = -1
    st[ST_THREADS] += 1
    return j


@numba.njit(cache=True, nogil=True)
def scan(buf, start, fill, buffers, classes, vtables, registers, heapshots, root_events, threads, open_hs, st):
    """Walk every buffer and event from ``start``: count the rows of each table (``fill`` False), or
    fill them (``fill`` True, tables sized by the count). Heap events belong to the heapshot their
    thread has open (a heapshot is walked by one thread, between its HEAP_START and HEAP_END); root
    events are kept with their time, for the reader to match with heapshots. Stops at the first error."""
    end_of_file = buf.shape[0]
    pos = start
    gcs = 0
    heap_size = 0
    while pos < end_of_file:
        if pos + BUFFER_HEADER > end_of_file:
            _fail(st, 1, pos)
            return
        if _u32(buf, pos) != BUF_ID:
            _fail(st, 2, pos)
            return
        length = _u32(buf, pos + 4)
        p = pos + BUFFER_HEADER
        end = p + length
        if end > end_of_file:
            _fail(st, 3, pos)
            return
        b = _take(st, ST_BUFFERS)
        t = _u64(buf, pos + 8)
        ptr_base = _u64(buf, pos + 16)
        thread = _u64(buf, pos + 32)
        slot = -1
        if fill:
            buffers[b, B_AT] = p
            buffers[b, B_LEN] = length
            buffers[b, B_TIME] = t
            buffers[b, B_PTR] = ptr_base
            buffers[b, B_OBJ] = _u64(buf, pos + 24)
            buffers[b, B_THREAD] = thread
            slot = _thread_slot(threads, open_hs, st, thread)
        while p < end:
            at = p
            event = buf[p]
            kind = event & 0x0F
            sub = event & 0xF0
            diff, p = _uleb(buf, p + 1, end)
            if p < 0:
                _fail(st, -p, at)
                return
            t += diff
            hs = open_hs[slot] if fill else -1
            if kind == TYPE_METADATA and p < end and (buf[p] == META_CLASS or buf[p] == META_VTABLE):
                meta = buf[p]
                pointer, q = _sleb(buf, p + 1, end)
                if q >= 0:
                    other, q = _sleb(buf, q, end)  # a class's image, a vtable's domain
                if q >= 0 and meta == META_VTABLE:
                    other, q = _sleb(buf, q, end)  # the vtable's class
                    if q >= 0:
                        r = _take(st, ST_VTABLES)
                        if fill:
                            vtables[r, V_PTR] = ptr_base + pointer
                            vtables[r, V_CLASS] = ptr_base + other
                elif q >= 0:
                    name_at = q
                    q = _skip_string(buf, q, end)
                    if q >= 0:
                        r = _take(st, ST_CLASSES)
                        if fill:
                            classes[r, C_PTR] = ptr_base + pointer
                            classes[r, C_NAME_AT] = name_at
                            classes[r, C_NAME_END] = q - 1
                p = q
            elif kind == TYPE_GC and sub == 0x10 and p + 2 <= end:
                if buf[p] == GC_EVENT_START:
                    gcs += 1
                p += 2
            elif kind == TYPE_GC and sub == 0x20:
                heap_size, p = _uleb(buf, p, end)
            elif kind == TYPE_HEAP and sub == HEAP_START:
                r = _take(st, ST_HEAPSHOTS)
                if fill:
                    if hs >= 0:
                        _fail(st, 10, at)
                        return
                    open_hs[slot] = r
                    heapshots[r, H_THREAD] = thread
                    heapshots[r, H_START] = t
                    heapshots[r, H_END] = -1
                    heapshots[r, H_FIRST_BUF] = b
                    heapshots[r, H_FIRST_AT] = p
            elif kind == TYPE_HEAP and sub == HEAP_END:
                if hs >= 0:
                    heapshots[hs, H_END] = t
                    heapshots[hs, H_END_BUF] = b
                    heapshots[hs, H_END_AT] = at
                    heapshots[hs, H_GCS] = gcs  # the collection the heapshot was taken in included
                    heapshots[hs, H_HEAP_SIZE] = heap_size
                    open_hs[slot] = -1
            elif kind == TYPE_HEAP and sub == HEAP_OBJECT:
                _, p = _sleb(buf, p, end)  # the object
                if p >= 0:
                    _, p = _sleb(buf, p, end)  # its vtable
                if p >= 0:
                    size, p = _uleb(buf, p, end)
                if p >= 0 and p >= end:
                    p = np.int64(_CUT)
                if p >= 0:
                    generation = buf[p]
                    count, p = _uleb(buf, p + 1, end)
                if p >= 0:
                    p = _skip_leb(buf, p, end, 2 * count)
                if p >= 0 and hs >= 0:  # (an object outside every heapshot is no heapshot's)
                    heapshots[hs, H_EVENTS] += 1
                    heapshots[hs, H_REFS] += count
                    if size != 0:
                        heapshots[hs, H_OBJECTS] += 1
                        if generation == 0:
                            heapshots[hs, H_NURSERY] += size
            elif kind == TYPE_HEAP and sub == HEAP_ROOT:
                count, q = _uleb(buf, p, end)
                if q >= 0:
                    r = _take(st, ST_ROOT_EVENTS)
                    if fill:
                        root_events[r, E_BUF] = b
                        root_events[r, E_AT] = p
                        root_events[r, E_TIME] = t
                        root_events[r, E_COUNT] = count
                    q = _skip_leb(buf, q, end, 2 * count)
                p = q
            elif kind == TYPE_HEAP and sub in (HEAP_ROOT_REGISTER, HEAP_ROOT_UNREGISTER):
                area, q = _sleb(buf, p, end)
                size = -1
                source = 0
                key = np.int64(0)
                desc_at = 0
                if q >= 0 and sub == HEAP_ROOT_REGISTER:
                    size, q = _uleb(buf, q, end)
                    if q >= 0 and q >= end:
                        q = np.int64(_CUT)
                    if q >= 0:
                        source = buf[q]
                        key, q = _sleb(buf, q + 1, end)
                    if q >= 0:
                        desc_at = q
                        q = _skip_string(buf, q, end)
                if q >= 0:
                    r = _take(st, ST_REGISTERS)
                    if fill:
                        registers[r, R_TIME] = t
                        registers[r, R_START] = ptr_base + area
                        registers[r, R_SIZE] = size
                        registers[r, R_SOURCE] = source
                        registers[r, R_KEY] = ptr_base + key
                        registers[r, R_DESC_AT] = desc_at
                        registers[r, R_DESC_END] = q - 1 if size >= 0 else desc_at
                p = q
            else:
                p = skip_payload(buf, p, end, event)
            if p < 0:
                _fail(st, -p, at)
                return
        pos = end


@numba.njit(cache=True, nogil=True)
def read_objects(
    buf, buffers, thread, first_buf, first_at, end_buf, end_at, addr, vtable, size, owner, target, offset, cont, st
):
    """Read one heapshot's objects (address, vtable, size) and references (the owning object, the
    target address, the offset in the owner), from its first event to its HEAP_END, in the buffers of
    the thread that walked the heap. An object's references may continue in further events of size 0
    (the runtime reports them in batches); those name their object by address, which is normally the
    object just read: ``owner`` is then its index, else ``-2 - k`` for ``cont[k]``, the address named."""
    n = 0
    m = 0
    k_cont = 0
    for b in range(first_buf, end_buf + 1):
        if buffers[b, B_THREAD] != thread:
            continue
        p = first_at if b == first_buf else buffers[b, B_AT]
        end = end_at if b == end_buf else buffers[b, B_AT] + buffers[b, B_LEN]
        ptr_base = buffers[b, B_PTR]
        obj_base = buffers[b, B_OBJ]
        while p < end:
            at = p
            event = buf[p]
            _, p = _uleb(buf, p + 1, end)
            if p >= 0 and event == (TYPE_HEAP | HEAP_OBJECT):
                diff, p = _sleb(buf, p, end)
                object_addr = (obj_base + diff) << 3
                vt, bytes_, count = np.int64(0), np.int64(0), np.int64(0)
                if p >= 0:
                    vt, p = _sleb(buf, p, end)
                if p >= 0:
                    bytes_, p = _uleb(buf, p, end)
                if p >= 0:
                    count, p = _uleb(buf, p + 1, end)  # past the generation byte (checked by scan)
                if p < 0:
                    _fail(st, -p, at)
                    return n, m, k_cont
                if bytes_ != 0:
                    addr[n] = object_addr
                    vtable[n] = ptr_base + vt
                    size[n] = bytes_
                    n += 1
                    who = n - 1
                elif n > 0 and addr[n - 1] == object_addr:
                    who = n - 1
                else:
                    cont[k_cont] = object_addr
                    who = -2 - k_cont
                    k_cont += 1
                last = 0
                for _ in range(count):
                    step, p = _uleb(buf, p, end)
                    if p >= 0:
                        diff, p = _sleb(buf, p, end)
                    if p < 0:
                        break
                    last += step
                    owner[m] = who
                    target[m] = (obj_base + diff) << 3
                    offset[m] = last
                    m += 1
            elif p >= 0:
                p = skip_payload(buf, p, end, event)
            if p < 0:  # scan read the same bytes without error: only a file changed underneath gets here
                _fail(st, -p, at)
                return n, m, k_cont
    return n, m, k_cont


@numba.njit(cache=True, nogil=True)
def read_roots(buf, buffers, events, address, target):
    """Read the roots of the root events ``events`` (rows of the root event table): each root's
    address (where the reference lies) and the object it refers to."""
    r = 0
    for e in range(events.shape[0]):
        b = events[e, E_BUF]
        end = buffers[b, B_AT] + buffers[b, B_LEN]
        ptr_base = buffers[b, B_PTR]
        obj_base = buffers[b, B_OBJ]
        _, p = _uleb(buf, events[e, E_AT], end)
        for _ in range(events[e, E_COUNT]):
            where, p = _sleb(buf, p, end)
            if p >= 0:
                diff, p = _sleb(buf, p, end)
            if p < 0:  # scan read these bytes without error
                return -1
            address[r] = ptr_base + where
            target[r] = (obj_base + diff) << 3
            r += 1
    return r
