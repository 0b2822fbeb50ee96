#!/usr/bin/env bash
# Installs everything heapdb needs for development, tests and the demo. Safe to run again: each step
# checks first and downloads go to the usual per-user caches (~/.cache/pip, ~/.npm, ~/.m2).
# With --fast, only what the fast test tier and scripts/check.sh need: Python and graphviz.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=false
if [ "${1:-}" = "--fast" ]; then fast=true; fi

log() { printf '==> %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Debian packages: Java 17 and Maven run Neo4j, Node runs the V8 test programs and memlab,
#    Chromium checks the Neo4j Browser and takes browser heap snapshots, graphviz renders SVG.
missing=()
if [ "$fast" = false ]; then
  # The JDK (javac, jcmd), not the JRE alone: the hprof tests compile and dump a Java program.
  command -v javac >/dev/null && command -v jcmd >/dev/null || missing+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null || missing+=(maven)
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  command -v chromium >/dev/null || missing+=(chromium)
  # VisualVM's heap library (a jar, used headless) is the hprof tests' independent oracle.
  [ -f /usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar ] || missing+=(visualvm)
  # Mono 6.8 runs the .NET test programs: the runtime, the C# compiler, the profiler headers that
  # heapdb's profiler module is built against, and zlib's headers for its checksums.
  command -v mono >/dev/null || missing+=(mono-runtime)
  command -v mcs >/dev/null || missing+=(mono-mcs)
  pkg-config --exists mono-2 2>/dev/null || missing+=(mono-devel)
  [ -f /usr/include/zlib.h ] || missing+=(zlib1g-dev)
  # Mono's own log profiler (heapshots in .mlpd files) and its report tool, mprof-report: the
  # independent oracle for heapdb's profiler module and .mlpd reader.
  [ -f /usr/lib/libmono-profiler-log.so ] || missing+=(libmono-profiler)
  command -v mprof-report >/dev/null || missing+=(mono-utils)
fi
command -v dot >/dev/null || missing+=(graphviz)
if ! command -v python3 >/dev/null; then
  missing+=(python3 python3-venv)
elif ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  missing+=(python3-venv)  # Debian splits venv's pip bootstrap out of python3
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Python: a virtualenv in .venv with heapdb installed editable, plus the test tools and the static
#    checks (scripts/check.sh), at the exact versions of constraints.txt. Installed again when
#    pyproject.toml or constraints.txt is newer than the stamp.
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.heapdb-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
  log "installing heapdb and its Python dependencies into .venv (versions from constraints.txt)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[test,check]'
  touch "$stamp"
fi

if [ "$fast" = true ]; then
  exit 0
fi

# 3. Node tools for the tests and benchmarks (memlab as an independent oracle). Puppeteer's own
#    browser download is skipped: heapdb never drives a browser through it.
if [ -f tests/js/package-lock.json ]; then
  if [ ! -d tests/js/node_modules ] || [ tests/js/package-lock.json -nt tests/js/node_modules ]; then
    log "installing Node tools (memlab) into tests/js/node_modules"
    (cd tests/js && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
    touch tests/js/node_modules
  fi
fi

# 4. Neo4j's jars from Maven Central into ~/.m2 (the managed instance is set up by `heapdb neo4j install`).
log "resolving Neo4j from Maven Central (cached in ~/.m2)"
.venv/bin/python -m heapdb.neo4j_server resolve
log "building heapdb's Neo4j plugin (cached in ~/.cache/heapdb)"
.venv/bin/heapdb neo4j plugin >/dev/null

# 5. heapdb's Mono profiler module (C, against mono-devel) and Heapdb.dll, built like the plugin:
#    once per source, into ~/.cache/heapdb/mono (tests/test_mono.py runs programs under it).
log "building heapdb's Mono profiler module (cached in ~/.cache/heapdb)"
.venv/bin/heapdb mono build >/dev/null
