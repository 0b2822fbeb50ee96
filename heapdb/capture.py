"""Capture the running Python process's object graph into a snap.bin file.

Usable from any program::

    import heapdb.capture
    heapdb.capture.capture("app.snapbin")

or around a script: ``python -m heapdb.capture out.snapbin script.py [args...]`` runs the script and
captures when it ends.

What is captured: every object the cyclic GC tracks (``gc.get_objects()``) plus everything reachable
from them through ``gc.get_referents`` (strings, numbers and other untracked objects), with
``sys.getsizeof`` sizes. Roots are the modules in ``sys.modules`` and each thread's current frame.
References are named where Python lets us know the name without running user code: dict keys,
attributes (through the instance ``__dict__``, which is created on demand for objects that keep their
attributes inline), ``__slots__``, list and tuple indexes, frame locals and closure variables.
Objects are written as they are visited, so the capture never builds the graph in memory.

The capture itself allocates (frame locals dicts, instance dicts); its own frames are left out.
"""

from __future__ import annotations

import datetime as _dt
import gc
import os
import platform
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

from heapdb.loader.formats.snapbin.writer import SnapbinWriter
from heapdb.loader.graph import EdgeKind

_STRING_PREVIEW = 1024  # characters of a str object's contents kept as its name

_KINDS: dict[type, str] = {
    str: "string",
    bytes: "string",
    bytearray: "string",
    int: "number",
    float: "number",
    complex: "number",
    bool: "number",
    list: "array",
    tuple: "array",
    set: "array",
    frozenset: "array",
    dict: "dict",
    types.MappingProxyType: "dict",
    types.FunctionType: "closure",
    types.BuiltinFunctionType: "native",
    types.MethodType: "closure",
    types.CodeType: "code",
    types.FrameType: "frame",
    types.ModuleType: "module",
    types.CellType: "cell",
}

# Attributes of built-in types that can be read without running user code, for naming references.
_FIELDS: dict[type, tuple[str, ...]] = {
    types.FunctionType: (
        "__code__",
        "__globals__",
        "__builtins__",
        "__defaults__",
        "__kwdefaults__",
        "__closure__",
        "__name__",
        "__qualname__",
        "__module__",
        "__doc__",
        "__annotations__",
        "__dict__",
    ),
    types.MethodType: ("__func__", "__self__"),
    types.FrameType: ("f_back", "f_code", "f_globals", "f_builtins", "f_trace"),
    types.CodeType: (
        "co_code",
        "co_consts",
        "co_names",
        "co_filename",
        "co_name",
        "co_qualname",
        "co_linetable",
        "co_exceptiontable",
        "co_localsplusnames",
    ),
    types.ModuleType: ("__dict__",),
    property: ("fget", "fset", "fdel", "__doc__"),
    staticmethod: ("__func__",),
    classmethod: ("__func__",),
}


def capture(path: str | os.PathLike[str], *, compress: bool = True, collect: bool = True) -> dict[str, int]:
    """Write this process's object graph to ``path`` (snap.bin); return counts of what was written.

    ``collect`` runs a full garbage collection first, so unreachable cycles are not reported.
    """
    if collect:
        gc.collect()
    # Listed before the capture makes its own bookkeeping objects, which then stay out of the snapshot
    # (they are reachable only from the capture's frames, which are left out).
    tracked = gc.get_objects()
    with SnapbinWriter(path, compress=compress) as writer:
        walker = _Walker(writer)
        roots = _roots()
        for _, _, obj in roots:
            walker.enqueue(obj)
        walker.enqueue_all(tracked)
        del tracked
        walker.run()
        for kind, name, obj in roots:
            writer.add_root(kind, name, id(obj))
        writer.set_metadata(
            runtime=sys.implementation.name,
            runtime_version=platform.python_version(),
            capture_time=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            total_heap_bytes=walker.total_size,
            gc_count=sum(s["collections"] for s in gc.get_stats()),
            pid=os.getpid(),
            pointer_size=8 if sys.maxsize > 2**32 else 4,
            argv=" ".join(sys.argv),
        )
    return {"objects": walker.objects, "refs": walker.refs, "roots": len(roots), "bytes": walker.total_size}


def _is_own_frame(obj: Any) -> bool:
    """Frames of this module: the capture's own work, left out of the snapshot."""
    return type(obj) is types.FrameType and obj.f_code.co_filename == __file__


def _roots() -> list[tuple[str, str, Any]]:
    # sys.modules may hold None (an import blocked on purpose), which its typeshed type leaves out.
    modules: Mapping[str, types.ModuleType | None] = sys.modules
    roots: list[tuple[str, str, Any]] = [
        ("module", name, mod) for name, mod in list(modules.items()) if mod is not None
    ]
    import threading

    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, top in sys._current_frames().items():
        frame: types.FrameType | None = top
        while frame is not None and _is_own_frame(frame):
            frame = frame.f_back
        if frame is not None:
            roots.append(("thread", f"{names.get(ident, 'thread')} ({ident})", frame))
    return roots


class _Walker:
    """Visits objects breadth-first from the GC's list, writing each with its named references."""

    def __init__(self, writer: SnapbinWriter) -> None:
        self.writer = writer
        self.queue: list[Any] = []  # also keeps every visited object alive, so ids stay unique
        self.seen: set[int] = set()
        self.types: dict[type, int] = {}
        self.cell_names: dict[int, str] = {}
        self.objects = self.refs = self.total_size = 0

    def enqueue(self, obj: Any) -> bool:
        key = id(obj)
        if key in self.seen:
            return True
        if _is_own_frame(obj):
            return False
        self.seen.add(key)
        self.queue.append(obj)
        return True

    def enqueue_all(self, objs: list[Any]) -> None:
        for obj in objs:
            if self.enqueue(obj) and type(obj) is types.FunctionType and obj.__closure__:
                # Closure cells do not know their variable's name; the function's code does.
                for name, cell in zip(obj.__code__.co_freevars, obj.__closure__):
                    self.cell_names[id(cell)] = name

    def run(self) -> None:
        i = 0
        while i < len(self.queue):
            obj = self.queue[i]
            i += 1
            self._write(obj)

    def _write(self, obj: Any) -> None:
        refs = [
            (id(target), kind, name)
            for target, kind, name in _named_referents(obj, self.cell_names)
            if self.enqueue(target)
        ]
        try:
            size = sys.getsizeof(obj)
        except Exception:  # a broken __sizeof__ in user code must not stop the capture
            size = 0
        tp = type(obj)
        type_index = self.types.get(tp)
        if type_index is None:
            type_index = self.types[tp] = self.writer.add_type(_type_name(tp), _kind(tp))
        self.writer.add_object(id(obj), type_index, size, refs, name=_object_name(obj))
        self.objects += 1
        self.refs += len(refs)
        self.total_size += size


def _type_name(tp: type) -> str:
    module = getattr(tp, "__module__", None)
    qualname = getattr(tp, "__qualname__", tp.__name__)
    return qualname if module in (None, "builtins") else f"{module}.{qualname}"


def _kind(tp: type) -> str:
    kind = _KINDS.get(tp)
    if kind is None:
        kind = "class" if issubclass(tp, type) else "object"
    return kind


def _object_name(obj: Any) -> str | None:
    tp = type(obj)
    if tp is str:
        return obj[:_STRING_PREVIEW]
    if tp in (types.FunctionType, types.ModuleType, types.BuiltinFunctionType) or isinstance(obj, type):
        for attribute in ("__qualname__", "__name__"):
            name = _field(obj, attribute)
            if isinstance(name, str):
                return name
        return None
    if tp is types.CodeType:
        return obj.co_qualname
    return None


_MISSING = object()


def _field(obj: Any, name: str) -> Any:
    try:
        return object.__getattribute__(obj, name)
    except Exception:
        return _MISSING


def _key_text(key: Any) -> str:
    if type(key) is str:
        return key
    if type(key) in (int, float, bool, bytes, complex) or key is None:
        return repr(key)
    return f"<{_type_name(type(key))}>"


def _named_referents(obj: Any, cell_names: dict[int, str]) -> list[tuple[Any, EdgeKind, str | int]]:
    """``obj``'s references as ``(target, kind, name)``, in the order the GC reports them."""
    try:
        return _named_referents_of(obj, cell_names)
    except RuntimeError:  # another thread resized a dict or set while we read it: keep the bare refs
        return [(r, EdgeKind.REFERENCE, "") for r in gc.get_referents(obj)]


def _named_referents_of(obj: Any, cell_names: dict[int, str]) -> list[tuple[Any, EdgeKind, str | int]]:
    tp = type(obj)
    if tp is list or tp is tuple:
        return [(item, EdgeKind.ELEMENT, i) for i, item in enumerate(obj)]
    if tp is dict:
        out: list[tuple[Any, EdgeKind, str | int]] = []
        for key, value in dict.items(obj):
            out.append((value, EdgeKind.PROPERTY, _key_text(key)))
            if type(key) is not str:  # str keys are the names above; other keys are objects worth an edge
                out.append((key, EdgeKind.INTERNAL, "(key)"))
        return out
    if tp is types.FrameType:
        return _frame_refs(obj)
    labels = _labels(obj, tp, cell_names)
    # Instances that keep attributes inline report the values, not a dict: reading __dict__ makes
    # the dict, so report it first and the referents then include it instead.
    return [(r, *labels.get(id(r), (EdgeKind.REFERENCE, ""))) for r in gc.get_referents(obj)]


def _labels(obj: Any, tp: type, cell_names: dict[int, str]) -> dict[int, tuple[EdgeKind, str | int]]:
    labels: dict[int, tuple[EdgeKind, str | int]] = {}

    def label(target: Any, kind: EdgeKind, name: str | int) -> None:
        if target is not _MISSING and target is not None:
            labels.setdefault(id(target), (kind, name))

    if tp is types.CellType:
        label(_field(obj, "cell_contents"), EdgeKind.CONTEXT, cell_names.get(id(obj), "cell_contents"))
    for name in _FIELDS.get(tp, ()):
        label(_field(obj, name), EdgeKind.INTERNAL, name)
    if tp not in _FIELDS and tp not in _KINDS:
        label(tp, EdgeKind.INTERNAL, "__class__")
        d = _instance_dict(obj)
        if d is not None:
            label(d, EdgeKind.INTERNAL, "__dict__")
        for name, value in _slot_values(obj, tp):
            label(value, EdgeKind.PROPERTY, name)
    # Subclasses of the containers: a named tuple's fields, a dict subclass's keys, list indexes.
    if isinstance(obj, tuple) and isinstance(fields := getattr(tp, "_fields", None), tuple):
        for name, value in zip(fields, tuple.__iter__(obj)):
            label(value, EdgeKind.PROPERTY, str(name))
    elif isinstance(obj, (list, tuple)):
        # The base class's __iter__: a subclass's own __iter__ is code the capture must not run.
        items = list.__iter__(obj) if isinstance(obj, list) else tuple.__iter__(obj)
        for i, value in enumerate(items):
            label(value, EdgeKind.ELEMENT, i)
    elif isinstance(obj, dict):
        for key, value in dict.items(obj):
            label(value, EdgeKind.PROPERTY, _key_text(key))
    if isinstance(obj, type):
        for name in ("__mro__", "__bases__", "__base__", "__dict__"):
            label(_underlying(_field(obj, name)), EdgeKind.INTERNAL, name)
    return labels


def _frame_refs(frame: types.FrameType) -> list[tuple[Any, EdgeKind, str | int]]:
    """A frame's references, read from its attributes: the GC reports none for a running frame."""
    out: list[tuple[Any, EdgeKind, str | int]] = []
    for name in _FIELDS[types.FrameType]:
        value = _field(frame, name)
        if value is not _MISSING and value is not None:
            out.append((value, EdgeKind.INTERNAL, name))
    try:
        local_vars = frame.f_locals
    except Exception:
        return out
    if local_vars is not frame.f_globals:  # a module's frame: its locals are its globals
        out.extend((value, EdgeKind.CONTEXT, name) for name, value in local_vars.items())
    return out


def _instance_dict(obj: Any) -> dict[str, Any] | None:
    if not getattr(type(obj), "__dictoffset__", 0):
        return None
    d = _field(obj, "__dict__")
    return d if type(d) is dict else None


def _underlying(value: Any) -> Any:
    """A class's ``__dict__`` is a fresh mappingproxy each time; the dict behind it is the referent."""
    if type(value) is types.MappingProxyType:
        inner = gc.get_referents(value)
        return inner[0] if inner else None
    return value


def _slot_values(obj: Any, tp: type) -> Iterator[tuple[str, Any]]:
    for klass in tp.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            descriptor = klass.__dict__.get(name)
            if type(descriptor) is types.MemberDescriptorType:
                try:
                    value = descriptor.__get__(obj, tp)
                except AttributeError:  # an unset slot
                    continue
                yield name, value


def main(argv: list[str] | None = None) -> int:
    """``python -m heapdb.capture OUT script.py [args...]``: run a script, then capture its heap."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print("usage: python -m heapdb.capture OUT.snapbin script.py [args...]", file=sys.stderr)
        return 2
    out, script = args[0], args[1]
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec")
    # Run the script as the real __main__ module (not runpy's temporary one), so what its globals
    # hold is still reachable from sys.modules when the capture runs.
    module = types.ModuleType("__main__")
    module.__file__ = script
    sys.modules["__main__"] = module
    sys.argv = args[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        exec(code, module.__dict__)
    finally:
        counts = capture(out)
        print(f"heapdb: captured {counts['objects']} objects, {counts['refs']} references to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
