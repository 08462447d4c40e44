# Shared helpers of the experiment scripts in bench/ (sourced, not run).
#
# Env:
#   QUIVER_BIN        server binary (default: release build in $CARGO_TARGET_DIR or target/)
#   QUIVER_BENCH_BIN  load client; default "$QUIVER_BIN bench" when the server binary has
#                     the bench command, otherwise the quiver-bench development binary
#   VENV              python venv for the charts (default ~/.cache/quiver-bench-venv)
#   NO_CHARTS=1       write CSV only

set -euo pipefail
# Root's empty password (HTTP Basic) for curl and wrk: servers with authentication on accept
# it, builds without authentication ignore the header. `quiver bench` sends it by default.
AUTH=(-H "Authorization: Basic cm9vdDo=")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}

ensure_binaries() {
  if [ -z "${QUIVER_BIN:-}" ]; then
    (cd "$REPO" && cargo build --release -p quiver -p quiver-bench --bins >&2)
    QUIVER_BIN=$TARGET/release/quiver
  fi
  [ -x "$QUIVER_BIN" ] || { echo "server binary $QUIVER_BIN not found" >&2; exit 1; }
  if [ -n "${QUIVER_BENCH_BIN:-}" ]; then
    BENCH=("$QUIVER_BENCH_BIN")
  elif "$QUIVER_BIN" bench --help >/dev/null 2>&1; then
    BENCH=("$QUIVER_BIN" bench)
  else
    [ -x "$TARGET/release/quiver-bench" ] || (cd "$REPO" && cargo build --release -p quiver-bench --bins >&2)
    BENCH=("$TARGET/release/quiver-bench")
  fi
}

SERVER_PID=""
PORT=""
SCRATCH=""

# start_server [extra server options...]: a fresh data directory and a free port each time.
start_server() {
  SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/quiver-bench.XXXXXX")
  "$QUIVER_BIN" --server.endpoint tcp://127.0.0.1:0 --database.directory "$SCRATCH/data" "$@" \
    >"$SCRATCH/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 300); do
    # The log may not exist yet on a loaded machine (the shell has not run the redirect).
    PORT=$(sed -n 's/.*listening on tcp:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$SCRATCH/server.log" 2>/dev/null | head -1 || true)
    [ -n "$PORT" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start:" >&2
  cat "$SCRATCH/server.log" >&2
  exit 1
}

stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
  if [ -n "$SCRATCH" ]; then
    rm -rf "$SCRATCH"
    SCRATCH=""
  fi
}
trap stop_server EXIT

# run_bench ARGS...: runs the client against the current server and prints
# "seconds,ops_per_second,failures" taken from its JSON report. A failed run still prints
# its figures (the CSV marks it through the failures column) and is reported on stderr.
run_bench() {
  local report
  report=$(mktemp -u "${TMPDIR:-/tmp}/quiver-bench-report.XXXXXX.json")
  local rc=0
  timeout 7200 "${BENCH[@]}" --server.endpoint "tcp://127.0.0.1:$PORT" --quiet true \
    --json-report-file "$report" "$@" >"$report.out" 2>&1 || rc=$?
  if [ ! -s "$report" ]; then
    echo "quiver bench wrote no report (exit $rc): $*" >&2
    cat "$report.out" >&2
    rm -f "$report.out"
    echo "nan,nan,nan"
    return 0
  fi
  [ "$rc" = 0 ] || { echo "quiver bench exit $rc: $*" >&2; tail -5 "$report.out" >&2; }
  python3 - "$report" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
failures = r["failures"] + r["incompleteResults"] + len(r.get("verificationProblems", []))
print(f'{r["timeSinceStart"]:.6f},{r["operationsPerSecondRate"]:.1f},{failures}')
EOF
  rm -f "$report" "$report.out"
}

# charts KIND CSV OUTDIR: renders PNGs with matplotlib from a venv created on first use.
charts() {
  [ "${NO_CHARTS:-0}" = 1 ] && return 0
  local venv=${VENV:-$HOME/.cache/quiver-bench-venv}
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv "$venv" && "$venv/bin/pip" install --quiet matplotlib \
      || { echo "cannot set up matplotlib; CSV written, charts skipped" >&2; return 0; }
  fi
  "$venv/bin/python" "$REPO/bench/plot.py" "$1" "$2" "$3"
}
