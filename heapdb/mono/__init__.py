"""heapdb's Mono profiler module: a C library Mono loads with ``--profile=heapdb``, which streams the
managed heap as snap.bin (docs/format.md, "Producers"), and ``Heapdb.dll``, the managed API
``Heapdb.Capture(path)`` that calls into it.

Both are built from the sources beside this file with the system C compiler against Debian's
``mono-devel`` (``pkg-config mono-2``) and with ``mcs``, once per source (a hash of the sources and
of the compile flags names the build), into the cache directory, so every checkout on the machine
shares them; never into the package. Mono 6.8 finds a profiler named ``heapdb`` as
``libmono-profiler-heapdb.so`` on the dynamic loader's path: :func:`environment` puts the build's
directory on ``LD_LIBRARY_PATH`` (and on ``MONO_PATH``, where programs find ``Heapdb.dll``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from heapdb import config
from heapdb.errors import MonoError

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "profiler.c"
API_SOURCE = HERE / "Heapdb.cs"
PROFILER_NAME = "heapdb"  # mono --profile=heapdb: Mono loads libmono-profiler-<name>.so
LIBRARY = f"libmono-profiler-{PROFILER_NAME}.so"
API = "Heapdb.dll"
# The module takes its Mono symbols from the running mono executable, which exports them (as
# Mono's own libmono-profiler-log.so does): linking libmono-2.0 would load a second runtime.
CFLAGS = ("-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror")
LIBS = ("-lz",)  # crc32 for the chunk checksums


@dataclass(frozen=True)
class Build:
    """Where one build of the module lives."""

    directory: Path
    library: Path  # libmono-profiler-heapdb.so
    api: Path  # Heapdb.dll, to reference with mcs -r: and to find at run time (MONO_PATH)


def _tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise MonoError(f"`{name}` is not installed (Debian: apt-get install {package}; scripts/bootstrap.sh does it)")
    return found


def mono_cflags() -> list[str]:
    """The compile flags of Debian's mono-devel (``pkg-config --cflags mono-2``)."""
    result = subprocess.run(
        [_tool("pkg-config", "pkg-config"), "--cflags", "mono-2"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise MonoError("Mono's headers are missing: `pkg-config --cflags mono-2` failed (apt-get install mono-devel)")
    return result.stdout.split()


def _digest(cflags: Sequence[str]) -> str:
    digest = hashlib.sha256("\0".join([*cflags, *CFLAGS, *LIBS]).encode())
    for path in (SOURCE, API_SOURCE):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _run(argv: list[str], what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise MonoError(f"could not build {what} (exit {result.returncode}): " + " | ".join(s.strip() for s in tail))


def build(say: Callable[[str], None] = lambda _: None) -> Build:
    """Build the profiler module and Heapdb.dll if this source has not been built yet; their paths."""
    cflags = mono_cflags()
    directory = config.cache_dir() / "mono" / _digest(cflags)
    done = Build(directory, directory / LIBRARY, directory / API)
    if done.library.exists() and done.api.exists():
        return done
    say(f"Building heapdb's Mono profiler module into {directory} ...")
    directory.parent.mkdir(parents=True, exist_ok=True)
    cc, mcs = _tool("cc", "gcc"), _tool("mcs", "mono-mcs")
    with tempfile.TemporaryDirectory(dir=directory.parent) as work:
        staged = Path(work)
        _run([cc, *CFLAGS, *cflags, "-o", str(staged / LIBRARY), str(SOURCE), *LIBS], LIBRARY)
        _run([mcs, "-nologo", "-target:library", f"-out:{staged / API}", str(API_SOURCE)], API)
        try:
            os.replace(staged, directory)  # atomic: a concurrent build finds the whole build or none
        except OSError:
            if not done.library.exists():  # another build won the race; anything else is an error
                raise
    return done


def environment(built: Build, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the build's directory on the paths where
    Mono looks for profiler modules (``LD_LIBRARY_PATH``) and assemblies (``MONO_PATH``)."""
    env = dict(os.environ if base is None else base)
    for key in ("LD_LIBRARY_PATH", "MONO_PATH"):
        env[key] = os.pathsep.join(p for p in (str(built.directory), env.get(key, "")) if p)
    return env


def mono_command(program: str, args: Sequence[str], options: Sequence[str] = ()) -> list[str]:
    """``mono --profile=heapdb:OPTIONS program args...``."""
    profile = PROFILER_NAME + (":" + ",".join(options) if options else "")
    return [_tool("mono", "mono-runtime"), f"--profile={profile}", program, *args]
