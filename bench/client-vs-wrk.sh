#!/usr/bin/env bash
# quiver bench vs wrk against the hyper floor server (limits.md §2), in the same run.
#
#   bench/client-vs-wrk.sh [OUT_DIR]
#
# Env: QUIVER_BENCH_BIN, QUIVER_FLOOR_BIN (default: release builds in $CARGO_TARGET_DIR or
# target/), DURATION (seconds per measurement, default 10), ROUNDS (default 3),
# CONCURRENCY (default "1 4 16 64").
# Writes OUT_DIR/client-vs-wrk.csv (one row per measurement) and prints a median table with
# quiver bench's share of wrk's requests/s. wrk and quiver bench alternate so that both see
# the same machine state; wrk runs 1 thread at c=1 and 2 threads otherwise (one per core).
# Both send root's Basic credentials, as against a QuiverDB server (the floor ignores them).
source "$(dirname "$0")/common.sh"
cd "$REPO"
OUT=${1:-docs/benchmarks/results}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-"1 4 16 64"}
if [ -z "${QUIVER_BENCH_BIN:-}" ] || [ -z "${QUIVER_FLOOR_BIN:-}" ]; then
  cargo build --release -p quiver-bench --bins >&2
fi
CLIENT=${QUIVER_BENCH_BIN:-$TARGET/release/quiver-bench}
FLOOR=${QUIVER_FLOOR_BIN:-$TARGET/release/quiver-floor}
command -v wrk >/dev/null || { echo "wrk not found (apt-get install -y wrk)" >&2; exit 1; }
mkdir -p "$OUT"
CSV="$OUT/client-vs-wrk.csv"

LOG=$(mktemp)
"$FLOOR" 0 >"$LOG" 2>&1 &
FLOOR_PID=$!
trap 'kill $FLOOR_PID 2>/dev/null || true; rm -f "$LOG"; stop_server' EXIT
for _ in $(seq 50); do grep -q listening "$LOG" && break; sleep 0.1; done
PORT=$(sed -n 's/^listening on 127.0.0.1://p' "$LOG")
[ -n "$PORT" ] || { echo "floor server did not start" >&2; cat "$LOG" >&2; exit 1; }
URL="http://127.0.0.1:$PORT/_db/_system/_api/version"

echo "tool,concurrency,round,requests_per_second" > "$CSV"
for c in $CONCURRENCY; do
  t=2; [ "$c" = 1 ] && t=1
  for r in $(seq "$ROUNDS"); do
    w=$(timeout $((DURATION + 20)) wrk -t$t -c"$c" -d"${DURATION}s" --timeout 5s "${AUTH[@]}" "$URL" \
        | awk '/Requests\/sec/ {print $2}')
    echo "wrk,$c,$r,$w" >> "$CSV"
    sleep 1
    q=$(timeout $((DURATION + 20)) "$CLIENT" --server.endpoint "tcp://127.0.0.1:$PORT" \
        --test-case version --duration "$DURATION" --concurrency "$c" --quiet true \
        | awk -F': ' '/Operations per second rate/ {print $2}')
    echo "quiver-bench,$c,$r,$q" >> "$CSV"
    sleep 1
  done
done

python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault((r["tool"], int(r["concurrency"])), []).append(float(r["requests_per_second"]))
print("| concurrency | wrk req/s (median) | quiver bench req/s (median) | quiver bench / wrk |")
print("|---|---|---|---|")
for c in sorted({k[1] for k in by}):
    w = statistics.median(by[("wrk", c)]); q = statistics.median(by[("quiver-bench", c)])
    print(f"| {c} | {w:,.0f} | {q:,.0f} | {q / w * 100:.0f} % |")
EOF
charts client-vs-wrk "$CSV" "$OUT"
