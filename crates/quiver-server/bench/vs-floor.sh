#!/usr/bin/env bash
# QuiverDB vs the hyper+serde floor server (limits.md §2), side by side in one run:
# single-document inserts (POST /_api/document/profiles) and reads by key
# (GET /_api/document/profiles/{key}) at concurrency 1, 4 and 16, with wrk.
#
#   crates/quiver-server/bench/vs-floor.sh
#
# Env: QUIVER_BIN, QUIVER_FLOOR_BIN (default: release builds in $CARGO_TARGET_DIR or target/),
# DURATION (seconds per measurement, default 5), ROUNDS (default 3), CONCURRENCY ("1 4 16").
# Prints one CSV line per measurement and a table of medians with QuiverDB's share of the floor.
set -euo pipefail
cd "$(dirname "$0")/../../.."
TARGET=${CARGO_TARGET_DIR:-target}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-"1 4 16"}
if [ -z "${QUIVER_BIN:-}" ] || [ -z "${QUIVER_FLOOR_BIN:-}" ]; then
  cargo build --release -p quiver -p quiver-bench --bins >&2
fi
QUIVER=${QUIVER_BIN:-$TARGET/release/quiver}
FLOOR=${QUIVER_FLOOR_BIN:-$TARGET/release/quiver-floor}
command -v wrk >/dev/null || { echo "wrk not found (apt-get install -y wrk)" >&2; exit 1; }

WORK=$(mktemp -d)
cleanup() { kill "${QPID:-}" "${FPID:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

"$FLOOR" 0 >"$WORK/floor.log" 2>&1 & FPID=$!
"$QUIVER" --server.endpoint tcp://127.0.0.1:0 --database.directory "$WORK/data" --log.level warning >"$WORK/quiver.log" 2>&1 & QPID=$!
for _ in $(seq 100); do
  grep -q listening "$WORK/floor.log" && grep -q listening "$WORK/quiver.log" && break
  sleep 0.1
done
FPORT=$(grep -o '127.0.0.1:[0-9]*' "$WORK/floor.log" | head -1 | cut -d: -f2)
QPORT=$(grep -o '127.0.0.1:[0-9]*' "$WORK/quiver.log" | head -1 | cut -d: -f2)
[ -n "$FPORT" ] && [ -n "$QPORT" ] || { echo "servers did not start" >&2; cat "$WORK"/*.log >&2; exit 1; }
Q=http://127.0.0.1:$QPORT
F=http://127.0.0.1:$FPORT

curl -sf -X POST "$Q/_api/collection" -d '{"name":"profiles"}' >/dev/null
BODY='{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}'
curl -sf -X POST "$Q/_api/document/profiles" -d "{\"_key\":\"12345\",${BODY:1}" >/dev/null

cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$BODY'
LUA

run() { # name url threads conns [script]
  local extra=()
  [ -n "${5:-}" ] && extra=(-s "$5")
  timeout $((DURATION + 20)) wrk -t"$3" -c"$4" -d"${DURATION}s" --timeout 5s "${extra[@]}" "$2" \
    | awk '/Requests\/sec/ {print $2} /Non-2xx/ {print "NON2XX " $0 > "/dev/stderr"}'
}

{
echo "op,server,concurrency,round,requests_per_second"
for c in $CONCURRENCY; do
  t=2; [ "$c" = 1 ] && t=1
  for r in $(seq "$ROUNDS"); do
    echo "insert,floor,$c,$r,$(run floor "$F/_api/document/profiles" $t $c "$WORK/post.lua")"
    echo "insert,quiver,$c,$r,$(run quiver "$Q/_api/document/profiles" $t $c "$WORK/post.lua")"
    echo "read,floor,$c,$r,$(run floor "$F/_api/document/profiles/12345" $t $c)"
    echo "read,quiver,$c,$r,$(run quiver "$Q/_api/document/profiles/12345" $t $c)"
  done
done
} | tee "$WORK/results.csv"

python3 - "$WORK/results.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print()
print("| operation | concurrency | floor req/s | QuiverDB req/s | QuiverDB / floor |")
print("|---|---|---|---|---|")
for op in ("insert", "read"):
    for c in sorted({int(r["concurrency"]) for r in rows}):
        med = lambda s: statistics.median(float(r["requests_per_second"] or 0) for r in rows
                                          if r["op"] == op and r["server"] == s and int(r["concurrency"]) == c)
        f, q = med("floor"), med("quiver")
        print(f"| {op} | {c} | {f:,.0f} | {q:,.0f} | {100 * q / f if f else 0:.0f} % |")
PY
