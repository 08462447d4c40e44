#!/usr/bin/env bash
# Vector search against FAISS (bench/vector.py): builds the release binary, makes a venv with
# faiss-cpu and numpy on first use, and prints the comparison table.
#
#   bench/vector.sh [--n 100000] [--dim 128] [--n-lists 1000] [--queries 200] [--probes 1,8,32]
#
# Environment:
#   QUIVER_BIN  a quiver binary to measure instead of building target/release/quiver
#   VENV        the venv for faiss-cpu and numpy (default ~/.cache/quiver-vector-bench-venv)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${QUIVER_BIN:-}" ]; then
  cargo build --release -p quiver --manifest-path "$REPO/Cargo.toml" >&2
  QUIVER_BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/quiver"
fi
venv=${VENV:-$HOME/.cache/quiver-vector-bench-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import faiss, numpy' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet faiss-cpu numpy >&2
fi
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
echo "# binary: $QUIVER_BIN"
exec "$venv/bin/python" "$REPO/bench/vector.py" --binary "$QUIVER_BIN" "$@"
