#!/usr/bin/env bash
# QuiverDB vs the hyper+serde floor server (limits.md §2), side by side in one run:
# single-document inserts (POST /_api/document/profiles) and reads by key
# (GET /_api/document/profiles/{key}) at concurrency 1, 4 and 16, with wrk.
#
#   crates/quiver-server/bench/vs-floor.sh
#
# Env: QUIVER_BIN, QUIVER_FLOOR_BIN (default: release builds in $CARGO_TARGET_DIR or target/),
# DURATION (seconds per measurement, default 5), ROUNDS (default 3), CONCURRENCY ("1 4 16"),
# QUIVER_BASE_BIN (optional: a second QuiverDB build, e.g. main before a change, measured in the
# same rounds as "base" so a before/after comparison shares the machine's load).
# Prints one CSV line per measurement (requests/s and the server process's CPU time per request,
# utime+stime from /proc/PID/stat, in µs), a table of medians with QuiverDB's share of the
# floor, and the median of the per-round ratios. On a shared machine the CPU figure is the
# steadier one: it does not depend on how much CPU the other processes left to the server and to
# wrk. Stops with an error if any server answers a non-2xx status.
set -euo pipefail
# Every request carries root's empty password (HTTP Basic): servers with authentication on
# accept it, builds without authentication ignore the header.
AUTH=(-H "Authorization: Basic cm9vdDo=")
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
cleanup() { kill "${QPID:-}" "${FPID:-}" "${BPID:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
start_quiver() { # binary datadir log
  "$1" --server.endpoint tcp://127.0.0.1:0 --database.directory "$2" --log.level warning >"$3" 2>&1 &
}

"$FLOOR" 0 >"$WORK/floor.log" 2>&1 & FPID=$!
start_quiver "$QUIVER" "$WORK/data" "$WORK/quiver.log"; QPID=$!
SERVERS="floor quiver"
if [ -n "${QUIVER_BASE_BIN:-}" ]; then
  start_quiver "$QUIVER_BASE_BIN" "$WORK/base-data" "$WORK/base.log"; BPID=$!
  SERVERS="floor base quiver"
else
  echo listening >"$WORK/base.log"
fi
for _ in $(seq 100); do
  grep -q listening "$WORK/floor.log" && grep -q listening "$WORK/quiver.log" \
    && grep -q listening "$WORK/base.log" && break
  sleep 0.1
done
port_of() { grep -o '127.0.0.1:[0-9]*' "$1" | head -1 | cut -d: -f2; }
FPORT=$(port_of "$WORK/floor.log")
QPORT=$(port_of "$WORK/quiver.log")
[ -n "$FPORT" ] && [ -n "$QPORT" ] || { echo "servers did not start" >&2; cat "$WORK"/*.log >&2; exit 1; }
BODY='{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}'
declare -A URL PID
URL[floor]=http://127.0.0.1:$FPORT; PID[floor]=$FPID
URL[quiver]=http://127.0.0.1:$QPORT; PID[quiver]=$QPID
if [ -n "${BPID:-}" ]; then
  BPORT=$(port_of "$WORK/base.log")
  [ -n "$BPORT" ] || { echo "base server did not start" >&2; cat "$WORK/base.log" >&2; exit 1; }
  URL[base]=http://127.0.0.1:$BPORT; PID[base]=$BPID
fi
for s in $SERVERS; do
  [ "$s" = floor ] && continue
  curl -sf "${AUTH[@]}" -X POST "${URL[$s]}/_api/collection" -d '{"name":"profiles"}' >/dev/null
  curl -sf "${AUTH[@]}" -X POST "${URL[$s]}/_api/document/profiles" -d "{\"_key\":\"12345\",${BODY:1}" >/dev/null
done

cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$BODY'
LUA

TICK=$(getconf CLK_TCK)
cpu_ticks() { # pid -> utime+stime in clock ticks (fields 14 and 15 of /proc/PID/stat)
  awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

run() { # pid url threads conns [script] -> "requests_per_second,server_cpu_us_per_request"
  local extra=() before after
  [ -n "${5:-}" ] && extra=(-s "$5")
  before=$(cpu_ticks "$1")
  timeout $((DURATION + 20)) wrk -t"$3" -c"$4" -d"${DURATION}s" --timeout 5s "${AUTH[@]}" "${extra[@]}" "$2" \
    >"$WORK/wrk.out"
  after=$(cpu_ticks "$1")
  # A server that answers errors is fast and wrong: never count that as throughput.
  if grep -q Non-2xx "$WORK/wrk.out"; then
    echo "error: $2 answered non-2xx responses:" >&2
    grep -E "Non-2xx|requests in" "$WORK/wrk.out" >&2
    exit 1
  fi
  awk -v cpu=$((after - before)) -v tick="$TICK" '
    / requests in / { n = $1 }
    /Requests\/sec/ { rps = $2 }
    END { printf "%s,%.1f\n", rps, (n > 0 ? cpu * 1e6 / tick / n : 0) }' "$WORK/wrk.out"
}

{
echo "op,server,concurrency,round,requests_per_second,server_cpu_us_per_request"
for c in $CONCURRENCY; do
  t=2; [ "$c" = 1 ] && t=1
  for r in $(seq "$ROUNDS"); do
    for s in $SERVERS; do
      # Assigned first: a failing run inside echo's arguments would not stop the script.
      m=$(run "${PID[$s]}" "${URL[$s]}/_api/document/profiles" $t $c "$WORK/post.lua")
      echo "insert,$s,$c,$r,$m"
    done
    for s in $SERVERS; do
      m=$(run "${PID[$s]}" "${URL[$s]}/_api/document/profiles/12345" $t $c)
      echo "read,$s,$c,$r,$m"
    done
  done
done
} | tee "$WORK/results.csv"

python3 - "$WORK/results.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print()
# Medians per cell. "CPU share" is floor CPU per request / QuiverDB CPU per request: the share
# of the floor's rate QuiverDB would reach if the server's CPU were the only limit.
servers = [s for s in ("base", "quiver") if any(r["server"] == s for r in rows)]
head = "| operation | concurrency | floor req/s |"
rule = "|---|---|---|"
for s in servers:
    head += f" {s} req/s | {s} / floor | {s} CPU µs/req | {s} CPU share |"
    rule += "---|---|---|---|"
print(head.replace("| floor req/s |", "| floor req/s | floor CPU µs/req |"))
print(rule + "---|")
for op in ("insert", "read"):
    for c in sorted({int(r["concurrency"]) for r in rows}):
        def med(server, field):
            values = [float(r[field] or 0) for r in rows
                      if r["op"] == op and r["server"] == server and int(r["concurrency"]) == c]
            return statistics.median(values) if values else 0.0
        f, fc = med("floor", "requests_per_second"), med("floor", "server_cpu_us_per_request")
        line = f"| {op} | {c} | {f:,.0f} | {fc:.1f} |"
        for s in servers:
            q, qc = med(s, "requests_per_second"), med(s, "server_cpu_us_per_request")
            line += (f" {q:,.0f} | {100 * q / f if f else 0:.0f} % | {qc:.1f} "
                     f"| {100 * fc / qc if qc else 0:.0f} % |")
        print(line)
print()
# The floor's own rate moves from round to round on a shared machine; the ratio within each
# round (same minute, same load) and its median over the rounds is the steadier comparison.
print("Per-round ratios to the floor (median over rounds first):")
for op in ("insert", "read"):
    for c in sorted({int(r["concurrency"]) for r in rows}):
        rounds = {}
        for r in rows:
            if r["op"] == op and int(r["concurrency"]) == c:
                rounds.setdefault(r["round"], {})[r["server"]] = float(r["requests_per_second"] or 0)
        for s in servers:
            ratios = [100 * v[s] / v["floor"] for v in rounds.values() if v.get("floor") and s in v]
            if ratios:
                listed = ", ".join(f"{x:.0f}" for x in ratios)
                print(f"  {op} c={c} {s}: {statistics.median(ratios):.0f} % ({listed})")
PY
