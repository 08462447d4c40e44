#!/usr/bin/env bash
# Per-insert scheduler and CPU counts of two QuiverDB builds, side by side in one run:
# single-document inserts (vs-floor.sh's body) with wrk, while `perf stat -p` counts the
# server's context switches, sched_yield and futex calls and its task-clock. Rounds alternate
# between the builds so that both share the machine's load.
#
#   QUIVER_BASE_BIN=old/quiver QUIVER_BIN=new/quiver crates/quiver-server/bench/insert-perf-stat.sh
#
# Env: CONCURRENCY (default 16), DURATION (seconds per measurement, default 4), ROUNDS
# (default 3). Prints one CSV line per measurement (all figures per request) and the medians.
set -euo pipefail
# Every request carries root's empty password (HTTP Basic): servers with authentication on
# accept it, builds without authentication ignore the header.
AUTH=(-H "Authorization: Basic cm9vdDo=")
cd "$(dirname "$0")/../../.."
: "${QUIVER_BIN:?set QUIVER_BIN}" "${QUIVER_BASE_BIN:?set QUIVER_BASE_BIN}"
DURATION=${DURATION:-4}
ROUNDS=${ROUNDS:-3}
C=${CONCURRENCY:-16}
command -v wrk >/dev/null || { echo "wrk not found" >&2; exit 1; }
command -v perf >/dev/null || { echo "perf not found" >&2; exit 1; }

WORK=$(mktemp -d)
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
declare -A PID URL
PIDS=()
trap cleanup EXIT
for s in base new; do
  bin=$QUIVER_BIN; [ $s = base ] && bin=$QUIVER_BASE_BIN
  "$bin" --server.endpoint tcp://127.0.0.1:0 --database.directory "$WORK/$s" --log.level warning \
    >"$WORK/$s.log" 2>&1 &
  PID[$s]=$!; PIDS+=("$!")
done
for s in base new; do
  for _ in $(seq 100); do grep -q listening "$WORK/$s.log" && break; sleep 0.1; done
  port=$(grep -o '127.0.0.1:[0-9]*' "$WORK/$s.log" | head -1 | cut -d: -f2)
  [ -n "$port" ] || { echo "$s did not start" >&2; cat "$WORK/$s.log" >&2; exit 1; }
  URL[$s]=http://127.0.0.1:$port
  curl -sf "${AUTH[@]}" -X POST "${URL[$s]}/_api/collection" -d '{"name":"profiles"}' >/dev/null
done
BODY='{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}'
cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Basic cm9vdDo="
wrk.body = '$BODY'
LUA

{
echo "server,round,requests_per_second,task_clock_us,context_switches,sched_yield,futex"
t=2; [ "$C" = 1 ] && t=1
for r in $(seq "$ROUNDS"); do
  for s in base new; do
    perf stat -x, -o "$WORK/perf.out" -p "${PID[$s]}" \
      -e task-clock,context-switches,syscalls:sys_enter_sched_yield,syscalls:sys_enter_futex \
      -- sleep "$DURATION" &
    ppid=$!
    timeout $((DURATION + 20)) wrk -t$t -c"$C" -d"${DURATION}s" --timeout 5s -s "$WORK/post.lua" \
      "${URL[$s]}/_api/document/profiles" >"$WORK/wrk.out"
    wait $ppid
    awk -F, -v s=$s -v r="$r" '
      FNR == NR && / requests in / { n = $1; next }
      FNR == NR && /Requests\/sec/ { split($0, a, " "); rps = a[2]; next }
      FNR != NR && $3 == "task-clock" { tc = $1 }
      FNR != NR && $3 == "context-switches" { cs = $1 }
      FNR != NR && $3 ~ /sched_yield/ { sy = $1 }
      FNR != NR && $3 ~ /futex/ { fx = $1 }
      END { printf "%s,%s,%s,%.1f,%.3f,%.3f,%.3f\n", s, r, rps, tc * 1000 / n, cs / n, sy / n, fx / n }
    ' "$WORK/wrk.out" "$WORK/perf.out"
  done
done
} | tee "$WORK/results.csv"

python3 - "$WORK/results.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
fields = ["requests_per_second", "task_clock_us", "context_switches", "sched_yield", "futex"]
print()
print("| server | " + " | ".join(fields) + " |")
print("|---|" + "---|" * len(fields))
for s in ("base", "new"):
    med = [statistics.median(float(r[f]) for r in rows if r["server"] == s) for f in fields]
    print(f"| {s} | {med[0]:,.0f} | " + " | ".join(f"{m:.2f}" for m in med[1:]) + " |")
PY
