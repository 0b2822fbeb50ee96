"""What each runtime's program structure says of its objects' owners (:class:`DirectOwners`, per level).

The format's ``ownership`` trait (:class:`~heapdb.loader.formats.Ownership`) picks the reading:

- **V8**: a closure's or constructor's script (``graph.locations``), its file; the file's npm
  package from its path (:func:`package_of_script`). Two levels: ``package``, ``file``. A Dart
  snapshot profile, V8's format with Dart's node types, is read by :mod:`.dart` instead.
- **Java**: an instance's class (a class object: the class it stands for) gives its ``package``
  and its ``class loader``. Arrays have no package of their own and follow their dominator.
- **Luau**: every object's memory ``category`` (what ``lua_setmemcat`` was when it was made); a
  function's ``script``.
- **.NET** (Mono's module and heapshots): a class's ``namespace``.
- **Python** (``heapdb.capture``): a module object and its namespace, the functions and classes a
  module defines, and the instances of those classes belong to that ``module``, and to its
  top-level ``package``.

Names are read once per distinct type or script (thousands), never per object.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from heapdb.loader.formats import Ownership, named
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.owners.attribution import DirectOwners
from heapdb.loader.owners.kernels import first_target

APP = "(app)"  # a script outside any node_modules folder: the program's own
NODE = "node"  # Node's own scripts (node:fs, node:internal/...)
DEFAULT_PACKAGE = "(default package)"  # a Java class declared without a package
BOOTSTRAP = "(bootstrap)"  # Java classes with no class loader object: the JVM's own

_NODE_MODULES = re.compile(r"(?:^|[/\\])node_modules[/\\]((?:@[^/\\]+[/\\])?[^/\\]+)")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://([^/]*)", re.IGNORECASE)


def direct_owners(graph: HeapGraph) -> tuple[DirectOwners, ...]:
    """Every level the graph's format gives, coarse first; () for a format that names no owner."""
    declared = named(graph.meta.get("format"))
    ownership = declared.ownership if declared else None
    if ownership is Ownership.RUNTIME:
        ownership = _BY_RUNTIME.get(str(graph.meta.get("runtime", "")).lower())
    if ownership is None:
        return ()
    return _READINGS[ownership](graph)


def package_of_script(script: str) -> str:
    """The npm package a script is in: the folder after its last ``node_modules`` (with its scope,
    ``@scope/name``; a nested ``node_modules`` names the inner package), Node's own for ``node:``
    scripts, a page's host for a URL outside ``node_modules``, else the program's own (:data:`APP`)."""
    found = _NODE_MODULES.findall(script)
    if found:
        return found[-1].replace("\\", "/")
    if script.startswith("node:"):
        return NODE
    url = _URL.match(script)
    if url and url.group(1):
        return url.group(1)
    return APP


def v8_owners(graph: HeapGraph) -> tuple[DirectOwners, ...]:
    from heapdb.loader.owners.dart import dart_owners, is_dart

    if is_dart(graph):
        return dart_owners(graph)
    return _script_levels(graph, ("package", "file"), package_of_script)


def _script_levels(graph: HeapGraph, levels: tuple[str, str], coarse: Callable[[str], str]) -> tuple[DirectOwners, ...]:
    """A located object's file, and ``coarse`` of it: the two levels a script location gives.
    Scripts the runtime left unnamed say nothing."""
    n = graph.node_count
    file_owner = np.full(n, -1, dtype=np.int32)
    coarse_owner = np.full(n, -1, dtype=np.int32)
    files: tuple[str, ...] = ()
    packages: list[str] = []
    loc = graph.locations
    if loc is not None and loc.node.shape[0]:
        named_rows = loc.script >= 0
        located = loc.script[named_rows]
        # Scripts are string indexes and few: a table by index groups them without sorting every
        # located object (np.unique's sort was most of this reading on a 220 MB Node snapshot).
        seen = np.bincount(located)
        scripts = np.flatnonzero(seen)
        slot = np.zeros(seen.shape[0], dtype=np.int32)
        slot[scripts] = np.arange(scripts.shape[0], dtype=np.int32)
        which = slot[located]
        files = tuple(graph.strings[int(s)] for s in scripts)
        files_code = np.arange(len(files), dtype=np.int32)
        package_names = [coarse(f) for f in files]
        packages = sorted(set(package_names))
        position = {p: i for i, p in enumerate(packages)}
        package_code = np.array([position[p] for p in package_names], dtype=np.int32)
        nodes = loc.node[named_rows]
        file_owner[nodes] = files_code[which]
        coarse_owner[nodes] = package_code[which]
    return (
        DirectOwners(levels[0], coarse_owner, tuple(packages)),
        DirectOwners(levels[1], file_owner, files),
    )


def java_owners(graph: HeapGraph) -> tuple[DirectOwners, ...]:
    """An instance's class's package and loader; a class object's own (its statics are its class's)."""
    n = graph.node_count
    strings = graph.strings
    kinds = graph.node_kinds
    class_kind = kinds.index("class") if "class" in kinds else -1
    is_class = graph.kind == class_kind
    class_of = _named_target(graph, "<class>")
    loader_of = _named_target(graph, "<classloader>")
    # The class each object's owners come from: a class object stands for its own.
    cls = np.where(is_class, np.arange(n, dtype=np.int32), class_of)
    has = cls >= 0
    class_name = np.full(n, -1, dtype=np.int32)
    class_name[has] = graph.name[cls[has]]
    # Arrays name no package (their class, `com.acme.Foo[]`, is the JVM's): they follow their dominator.
    package = _by_string(class_name, strings, _java_package)
    loader = np.full(n, -1, dtype=np.int32)
    loader[has] = loader_of[cls[has]]
    loaders, loader_code = _loader_names(graph, loader, has & (package.owner >= 0))
    return (DirectOwners("package", package.owner, package.names), DirectOwners("class loader", loader_code, loaders))


def _java_package(name: str) -> str | None:
    if not name or name.endswith("]") or name.startswith("("):
        return None
    outer = name.split("$", 1)[0]
    return outer.rpartition(".")[0] or DEFAULT_PACKAGE


def _loader_names(graph: HeapGraph, loader: np.ndarray, owned: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """Each owned object's class loader named ``type@id`` (two loaders of one class stay apart),
    :data:`BOOTSTRAP` for classes without one."""
    code = np.full(loader.shape[0], -1, dtype=np.int32)
    distinct, which = np.unique(loader[owned], return_inverse=True)
    names = tuple(
        BOOTSTRAP if d < 0 else f"{graph.type_name(int(d))}@{int(graph.ids[int(d)]):#x}" for d in distinct.tolist()
    )
    code[owned] = which.astype(np.int32)
    return names, code


def luau_owners(graph: HeapGraph) -> tuple[DirectOwners, ...]:
    """Every object's memory category (named as the dump names it, else by number); each function's script."""
    category = graph.meta.get("category")
    levels = []
    if category is not None:
        # (keys are numbers as the reader gives them, text where they came back from stored JSON)
        named_categories = {int(k): v for k, v in (graph.meta.get("category_names") or {}).items()}
        present = np.unique(category).tolist()
        names = tuple(str(named_categories.get(c, f"category {c}")) for c in present)
        table = np.full(256, -1, dtype=np.int32)
        table[present] = np.arange(len(present), dtype=np.int32)
        levels.append(DirectOwners("category", table[np.asarray(category, dtype=np.intp)], names))
    levels.append(_script_levels(graph, ("script", "script"), str)[1])
    return tuple(levels)


def dotnet_owners(graph: HeapGraph) -> tuple[DirectOwners, ...]:
    """A class's namespace (``System.Collections.Generic`` for ``List<T>``); arrays and C#'s
    keyword names (``string``, ``int[]``) name none and follow their dominator."""
    return (_by_string(graph.type, graph.strings, _dotnet_namespace, level="namespace"),)


def _dotnet_namespace(name: str) -> str | None:
    if not name or name.endswith("]") or name.startswith("("):
        return None
    outer = re.split(r"[<+`]", name, maxsplit=1)[0]
    return outer.rpartition(".")[0] or None


def python_owners(graph: HeapGraph) -> tuple[DirectOwners, ...]:
    """A module object's own module, and its namespace's (its ``__dict__``); a function's or class's,
    the module its ``__module__`` names; an instance's, the longest module its class's dotted name
    starts with. Without the namespaces, functions and classes, a module's globals would be
    ``@shared`` wherever another module imported one of its names (their ``__globals__`` lead
    back to the namespace): nearly half of a small program's heap."""
    strings = graph.strings
    module_type = strings.index("module") if "module" in strings else -1
    is_module = graph.type == module_type
    modules = {strings[int(s)] for s in np.unique(graph.name[is_module]).tolist()}

    def module_of(type_name: str) -> str | None:
        head = type_name
        while "." in head:
            head = head.rpartition(".")[0]
            if head in modules:
                return head
        return None

    kinds = graph.node_kinds
    is_class = graph.kind == kinds.index("class") if "class" in kinds else np.zeros(graph.node_count, dtype=bool)
    namespace = _named_target(graph, "__dict__")
    defined = _defined_in(graph, namespace, is_class)
    # A class's type is its metaclass (``abc.ABCMeta``), another module's: only its ``__module__`` counts.
    code = np.where(is_module, graph.name, np.where(is_class | (defined >= 0), defined, graph.type)).astype(np.int32)
    by_module = _by_string(code, strings, lambda s: s if s in modules else module_of(s), level="module")
    module_nodes = np.flatnonzero(is_module & (namespace >= 0))
    by_module.owner[namespace[module_nodes]] = by_module.owner[module_nodes]
    top = tuple(name.split(".", 1)[0] for name in by_module.names)
    packages = tuple(sorted(set(top)))
    position = np.array([packages.index(t) for t in top] or [0], dtype=np.int32)
    package = np.where(by_module.owner >= 0, position[np.maximum(by_module.owner, 0)], -1).astype(np.int32)
    return (DirectOwners("package", package, packages), by_module)


def _defined_in(graph: HeapGraph, namespace: np.ndarray, is_class: np.ndarray) -> np.ndarray:
    """Per function or class, the string naming the module it was defined in (a function's own
    ``__module__``, the ``__module__`` entry of a class's namespace) as an index into
    ``graph.strings``; -1 for everything else."""
    entry = _named_target(graph, "__module__", EdgeKind.PROPERTY)
    of_class = np.where(namespace >= 0, entry[np.maximum(namespace, 0)], -1)
    text = np.where(is_class, of_class, _named_target(graph, "__module__"))
    return np.where(text >= 0, graph.name[np.maximum(text, 0)], -1).astype(np.int32)


def _by_string(
    code: np.ndarray, strings: list[str], owner_of: Callable[[str], str | None], level: str = "package"
) -> DirectOwners:
    """Owners read from one string per object (``code`` indexes ``strings``, -1 for none): each
    distinct string read once by ``owner_of`` (None: it names none)."""
    owner = np.full(code.shape[0], -1, dtype=np.int32)
    has = code >= 0
    distinct, which = np.unique(code[has], return_inverse=True)
    found = [owner_of(strings[int(s)]) for s in distinct.tolist()]
    names = tuple(sorted({f for f in found if f is not None}))
    position = {name: i for i, name in enumerate(names)}
    table = np.array([position[f] if f is not None else -1 for f in found] or [-1], dtype=np.int32)
    owner[has] = table[which]
    return DirectOwners(level, owner, names)


def _named_target(graph: HeapGraph, name: str, kind: EdgeKind = EdgeKind.INTERNAL) -> np.ndarray:
    """Each object's first reference of ``kind`` named ``name`` (-1: none)."""
    if name not in graph.strings:
        return np.full(graph.node_count, -1, dtype=np.int32)
    code = graph.strings.index(name)
    return first_target(graph.edge_start, graph.edge_to, graph.edge_name, graph.edge_kind, code, int(kind))


_READINGS: dict[Ownership, Callable[[HeapGraph], tuple[DirectOwners, ...]]] = {
    Ownership.V8: v8_owners,
    Ownership.JAVA: java_owners,
    Ownership.LUAU: luau_owners,
    Ownership.DOTNET: dotnet_owners,
    Ownership.PYTHON: python_owners,
}
# The runtimes a snap.bin file names (its writer's ``runtime``), by the reading their objects take.
_BY_RUNTIME = {
    "cpython": Ownership.PYTHON,
    "pypy": Ownership.PYTHON,
    "python": Ownership.PYTHON,
    "dotnet": Ownership.DOTNET,
    "mono": Ownership.DOTNET,
}
