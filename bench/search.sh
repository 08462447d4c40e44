#!/usr/bin/env bash
# Full-text search against PostgreSQL and SQLite FTS5 (bench/search.py, docs/benchmarks/search.md):
# builds the release binary, makes a venv with psycopg on first use, starts QuiverDB and a
# PostgreSQL of its own on loopback with fresh temporary data directories, and prints the
# comparison tables.
#
#   bench/search.sh [--docs 1000000] [--repeat 5] [--import-threads 2] [--small-batch 100]
#                    [--small-docs 50000] [--skip-writes] [--port P (QuiverDB; PostgreSQL P+1)]
#
# Needs: PostgreSQL from Debian (postgresql), run as root (PostgreSQL runs as user postgres),
# Python 3 with sqlite3 built with FTS5 (Debian's is).
# Environment:
#   QUIVER_BIN        a quiver binary to measure instead of building one
#   CARGO_TARGET_DIR  where the release build goes (default target/)
#   VENV              the venv for psycopg (default ~/.cache/quiver-search-bench-venv)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${QUIVER_BIN:-}" ]; then
  (cd "$REPO" && cargo build --release --bin quiver >&2)
  QUIVER_BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/quiver"
fi
ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 \
  || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
venv=${VENV:-$HOME/.cache/quiver-search-bench-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import psycopg' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet 'psycopg[binary]' >&2
fi
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
echo "# binary: $QUIVER_BIN; PostgreSQL $(ls /usr/lib/postgresql | sort -n | tail -1); SQLite $(python3 -c 'import sqlite3; print(sqlite3.sqlite_version)')"
echo "# load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$venv/bin/python" "$REPO/bench/search.py" --binary "$QUIVER_BIN" "$@"
