"""Real Java heap dumps for the tests and benchmarks: the programs of tests/java/ run in their own JVM,
dumped with ``jcmd``."""

from __future__ import annotations

import subprocess
from pathlib import Path

JAVA_DIR = Path(__file__).resolve().parent.parent / "tests" / "java"
# tests/java/LifecycleLeak.java and its stand-ins for Android's classes (tests/java/lifecycle/).
LIFECYCLE_SOURCES = (
    "LifecycleLeak.java",
    "lifecycle/android/app/Activity.java",
    "lifecycle/android/app/Application.java",
    "lifecycle/android/app/Fragment.java",
    "lifecycle/android/view/View.java",
    "lifecycle/android/view/inputmethod/InputMethodManager.java",
)


def compile_java(out: Path, *sources: str, classpath: Path | None = None) -> Path:
    """Compile tests/java/``sources`` (default Leak.java) into ``out``; returns ``out``."""
    files = [str(JAVA_DIR / name) for name in (sources or ("Leak.java",))]
    cp = ["-cp", str(classpath)] if classpath else []
    subprocess.run(["javac", *cp, "-d", str(out), *files], check=True, timeout=180)
    return out


def dump_program(classes: Path, main: str, dump: Path, *args: str) -> list[str]:
    """Run the class ``main`` until it prints "ready <pid> ...", dump its live heap to ``dump`` with
    ``jcmd`` and return the words of that line after the pid."""
    proc = subprocess.Popen(["java", "-Xmx64m", "-cp", str(classes), main, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        words = proc.stdout.readline().split()
        assert words[:1] == ["ready"], words
        subprocess.run(["jcmd", words[1], "GC.heap_dump", str(dump)], check=True, timeout=60, capture_output=True)
        return words[2:]
    finally:
        proc.kill()
        proc.wait()


def dump_leak(classes: Path, sessions: int, dump: Path, *, everything: bool) -> str:
    """Run Leak with ``sessions`` leaked sessions, write its heap to ``dump`` and return the class
    histogram taken right after. ``everything``: ``-all``, no GC first (garbage and weakly held objects
    stay in the dump); else a full GC first (jcmd's default: live objects only). The histogram is
    always ``-all``: a GC of its own would already collect what the dump's GC freed by reference
    processing, and the two would not count the same heap."""
    proc = subprocess.Popen(
        ["java", "-Xmx64m", "-cp", str(classes), "Leak", str(sessions)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ready "), line
        pid = line.split()[1]
        option = ["-all"] if everything else []
        subprocess.run(["jcmd", pid, "GC.heap_dump", *option, str(dump)], check=True, timeout=60, capture_output=True)
        return subprocess.run(
            ["jcmd", pid, "GC.class_histogram", "-all"], check=True, timeout=60, capture_output=True, text=True
        ).stdout
    finally:
        proc.kill()
        proc.wait()
