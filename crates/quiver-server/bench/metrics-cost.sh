#!/usr/bin/env bash
# The cost of recording metrics, side by side in one run: two QuiverDB release builds started on
# fresh data directories and measured with wrk in alternating rounds:
#   base     a build without the request statistics (BASE_REV, default: the merge base
#            with main, built in a temporary git worktree; or QUIVER_BASE_BIN);
#   metrics  this tree's build, which records every request, connection, query and commit.
# Both run with --server.authentication false, so only the recording differs.
# Single-document inserts (POST /_api/document/profiles, vs-floor.sh's body) and reads by key
# (GET /_api/document/profiles/12345) at concurrency 1, 4 and 16. The goal: metrics at
# ≥ 98 % of base's requests/s (recording costs the hot path at most 2 %).
#
#   crates/quiver-server/bench/metrics-cost.sh
#
# Env: QUIVER_BIN (default: the release build in $CARGO_TARGET_DIR or target/), QUIVER_BASE_BIN
# or BASE_REV, DURATION (seconds per measurement, default 5), ROUNDS (default 3), CONCURRENCY
# ("1 4 16"). Prints one CSV line per measurement (requests/s and the server process's CPU
# time per request, utime+stime from /proc/PID/stat, in µs), a table of medians, and per
# operation and concurrency the median over the rounds of metrics/base (requests/s and CPU per
# request), each round's ratio taken within that round. Stops with an error if any server
# answers a non-2xx status.
set -euo pipefail
cd "$(dirname "$0")/../../.."
TARGET=${CARGO_TARGET_DIR:-target}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-"1 4 16"}
if [ -z "${QUIVER_BIN:-}" ]; then
  cargo build --release -p quiver --bins >&2
fi
QUIVER=${QUIVER_BIN:-$TARGET/release/quiver}
command -v wrk >/dev/null || { echo "wrk not found (apt-get install -y wrk)" >&2; exit 1; }
SERVERS="base metrics"

WORK=$(mktemp -d)
declare -A URL PID HEADER BIN
cleanup() {
  kill "${PID[@]}" 2>/dev/null || true; wait 2>/dev/null || true
  [ -d "$WORK/base-tree" ] && git worktree remove --force "$WORK/base-tree" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
if [ -z "${QUIVER_BASE_BIN:-}" ]; then
  rev=${BASE_REV:-$(git merge-base HEAD main)}
  git worktree add --detach "$WORK/base-tree" "$rev" >&2
  # A target directory of its own, so that neither build invalidates the other's.
  (cd "$WORK/base-tree" && CARGO_TARGET_DIR="$TARGET/metrics-cost-base" \
    cargo build --release -p quiver --bins >&2)
  QUIVER_BASE_BIN=$TARGET/metrics-cost-base/release/quiver
fi
BIN[base]=$QUIVER_BASE_BIN
BIN[metrics]=$QUIVER
for s in $SERVERS; do
  "${BIN[$s]}" --server.endpoint tcp://127.0.0.1:0 --database.directory "$WORK/$s-data" \
    --log.level warning --server.authentication false >"$WORK/$s.log" 2>&1 &
  PID[$s]=$!
done
for s in $SERVERS; do
  for _ in $(seq 100); do grep -qs listening "$WORK/$s.log" && break; sleep 0.1; done
  port=$(grep -o '127.0.0.1:[0-9]*' "$WORK/$s.log" | head -1 | cut -d: -f2)
  [ -n "$port" ] || { echo "$s server did not start" >&2; cat "$WORK/$s.log" >&2; exit 1; }
  URL[$s]=http://127.0.0.1:$port
done
HEADER[base]=""
HEADER[metrics]=""
# The metrics server must really record: its metrics page counts requests.
curl -sf "${URL[metrics]}/_admin/metrics" | grep -q '^arangodb_http_request_statistics_total_requests_total' \
  || { echo "the metrics server serves no request statistics" >&2; exit 1; }
BODY='{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}'
for s in $SERVERS; do
  h=(); [ -n "${HEADER[$s]}" ] && h=(-H "${HEADER[$s]}")
  curl -sf "${h[@]}" -X POST "${URL[$s]}/_api/collection" -d '{"name":"profiles"}' >/dev/null
  curl -sf "${h[@]}" -X POST "${URL[$s]}/_api/document/profiles" -d "{\"_key\":\"12345\",${BODY:1}" \
    >/dev/null
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

run() { # server path threads conns [script] -> "requests_per_second,server_cpu_us_per_request"
  local s=$1 extra=() before after
  [ -n "${HEADER[$s]}" ] && extra+=(-H "${HEADER[$s]}")
  [ -n "${5:-}" ] && extra+=(-s "$5")
  before=$(cpu_ticks "${PID[$s]}")
  timeout $((DURATION + 20)) wrk -t"$3" -c"$4" -d"${DURATION}s" --timeout 5s "${extra[@]}" \
    "${URL[$s]}$2" >"$WORK/wrk.out"
  after=$(cpu_ticks "${PID[$s]}")
  if grep -q Non-2xx "$WORK/wrk.out"; then
    echo "error: $s server answered non-2xx responses to $2:" >&2
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
    # Each round starts with a different server, so no mode always runs first or last.
    order=$(echo $SERVERS $SERVERS | cut -d' ' -f$(((r - 1) % 2 + 1))-$(((r - 1) % 2 + 2)))
    for s in $order; do
      # Assigned first: a failing run inside echo's arguments would not stop the script.
      m=$(run "$s" /_api/document/profiles $t "$c" "$WORK/post.lua")
      echo "insert,$s,$c,$r,$m"
    done
    for s in $order; do
      m=$(run "$s" /_api/document/profiles/12345 $t "$c")
      echo "read,$s,$c,$r,$m"
    done
  done
done
} | tee "$WORK/results.csv"

python3 - "$WORK/results.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ops = ("insert", "read")
concurrencies = sorted({int(r["concurrency"]) for r in rows})

def cell(op, c):
    return [r for r in rows if r["op"] == op and int(r["concurrency"]) == c]

print()
print("| operation | concurrency | base req/s | metrics req/s "
      "| base CPU µs/req | metrics CPU µs/req |")
print("|---|---|---|---|---|---|")
for op in ops:
    for c in concurrencies:
        def med(server, field):
            values = [float(r[field] or 0) for r in cell(op, c) if r["server"] == server]
            return statistics.median(values) if values else 0.0
        rps = [med(s, "requests_per_second") for s in ("base", "metrics")]
        cpu = [med(s, "server_cpu_us_per_request") for s in ("base", "metrics")]
        print(f"| {op} | {c} | " + " | ".join(f"{x:,.0f}" for x in rps) + " | "
              + " | ".join(f"{x:.1f}" for x in cpu) + " |")
print()
# Within one round both servers share the machine's load; the median over the rounds of
# these ratios is the comparison the goal is about. "CPU share" is base's CPU per request over
# metrics': the share of base's rate metrics would reach if the server's CPU were the limit.
print("Per-round ratios to base (median over rounds first; goal: ≥ 98 % requests/s):")
for op in ops:
    for c in concurrencies:
        rounds = {}
        for r in cell(op, c):
            rounds.setdefault(r["round"], {})[r["server"]] = r
        for s in ("metrics",):
            rate, share = [], []
            for v in rounds.values():
                if "base" not in v or s not in v:
                    continue
                base_rps = float(v["base"]["requests_per_second"] or 0)
                base_cpu = float(v["base"]["server_cpu_us_per_request"] or 0)
                mode_cpu = float(v[s]["server_cpu_us_per_request"] or 0)
                if base_rps:
                    rate.append(100 * float(v[s]["requests_per_second"] or 0) / base_rps)
                if mode_cpu:
                    share.append(100 * base_cpu / mode_cpu)
            if not rate:
                continue
            verdict = "meets" if statistics.median(rate) >= 98 else "below"
            listed = ", ".join(f"{x:.0f}" for x in rate)
            cpu_text = f"{statistics.median(share):.0f} %" if share else "n/a"
            print(f"  {op} c={c} {s}/base: {statistics.median(rate):.0f} % ({listed}) {verdict}; "
                  f"CPU share {cpu_text}")
PY
