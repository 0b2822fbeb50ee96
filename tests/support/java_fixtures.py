"""A real dump of tests/java/Leak.java with VisualVM's reading of it, made once per test run.

The hprof oracle test and the Java owners test read the same dump: the JVM, ``jcmd`` and VisualVM's
heap library (driven headless by tests/java/VisualVMOracle.java) run once for each kind of dump,
whichever test asks first, on whichever worker (:func:`tests.support.once.once`).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from heapgen.java import compile_java, dump_leak
from tests.support.once import once

# The heap library's jar as Debian's visualvm package installs it (scripts/bootstrap.sh installs it).
VISUALVM_HEAP_JAR = Path("/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar")


@dataclass(frozen=True)
class LeakDump:
    dump: Path  # the hprof file
    table: Path  # what VisualVMOracle wrote of it (its docstring gives the lines)
    histogram: str  # ``jcmd GC.class_histogram -all`` of the same process, right after the dump


def leak_dump(tmp_path_factory: pytest.TempPathFactory, sessions: int, *, everything: bool) -> LeakDump:
    """Leak.java holding ``sessions`` sessions, dumped with ``-all`` (``everything``: no GC first,
    garbage and weakly held objects stay) or live objects only, and VisualVM's table of it. Skips
    the test where the JDK or VisualVM is missing."""
    if not all(shutil.which(tool) for tool in ("javac", "java", "jcmd")):
        pytest.skip("needs a JDK (javac, java, jcmd): scripts/bootstrap.sh installs it")
    if not VISUALVM_HEAP_JAR.is_file():
        pytest.skip(f"needs VisualVM's heap library ({VISUALVM_HEAP_JAR}): scripts/bootstrap.sh installs visualvm")

    def make(directory: Path) -> dict[str, str]:
        classes = compile_java(directory / "classes", "Leak.java", "VisualVMOracle.java", classpath=VISUALVM_HEAP_JAR)
        dump, table = directory / "leak.hprof", directory / "visualvm.tsv"
        histogram = dump_leak(classes, sessions, dump, everything=everything)
        subprocess.run(
            ["java", "-cp", f"{VISUALVM_HEAP_JAR}:{classes}", "VisualVMOracle", str(dump), str(table)],
            check=True,
            timeout=300,
            capture_output=True,
        )
        return {"dump": str(dump), "table": str(table), "histogram": histogram}

    made = once(tmp_path_factory, f"java-leak-{sessions}-{'all' if everything else 'live'}", make)
    return LeakDump(Path(made["dump"]), Path(made["table"]), made["histogram"])
