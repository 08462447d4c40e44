#!/usr/bin/env bash
# The cursor goal: `RETURN 1` through POST /_api/cursor at most 1.3× a plain GET /_api/version
# round trip. One connection, sequential requests, in the same run. Runs alternate between
# the two test cases so both see the same machine load; for every run the script records the
# client's average and median latency and the server process's CPU time per request
# (utime+stime from /proc/PID/stat), then prints the medians over all runs and the ratios.
#
#   bench/cursor-vs-version.sh [ROUNDS] [REQUESTS] [QUERY...]
#
# ROUNDS (default 7) alternating rounds of REQUESTS (default 20000) requests each; further
# arguments are extra queries measured in the same rotation (default: only `RETURN 1`).
# Env: QUIVER_BIN (server binary, default: release build), OUT (CSV file, default: stdout
# only).
source "$(dirname "$0")/common.sh"
ROUNDS=${1:-7}
REQUESTS=${2:-20000}
shift 2 2>/dev/null || shift $#
QUERIES=("RETURN 1" "$@")
ensure_binaries
start_server
TICKS=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }

# one_run LABEL ARGS...: prints "label,avg_us,median_us,server_cpu_us_per_request".
one_run() {
  local label=$1
  shift
  local before after out
  before=$(cpu_ticks)
  out=$("${BENCH[@]}" --server.endpoint "tcp://127.0.0.1:$PORT" --concurrency 1 \
    --requests "$REQUESTS" --histogram.percentiles 50 "$@" 2>&1)
  after=$(cpu_ticks)
  local avg med
  avg=$(sed -n 's/.*[Aa]vg [Rr]equest time: \([0-9.]*\)ms.*/\1/p' <<<"$out" | head -1)
  med=$(awk '/thread 0:/ {gsub("ms","",$3); print $3}' <<<"$out")
  awk -v l="$label" -v a="$avg" -v m="$med" -v b="$before" -v e="$after" -v t="$TICKS" \
    -v n="$REQUESTS" 'BEGIN { gsub(/"/, "\"\"", l); printf "\"%s\",%.1f,%.1f,%.2f\n", l, a*1000, m*1000, (e-b)/t*1e6/n }'
}

# Warm-up (connection setup, plan cache, allocator).
one_run warmup --test-case version >/dev/null
for q in "${QUERIES[@]}"; do
  one_run warmup --test-case custom-query --custom-query "$q" >/dev/null
done

CSV=$(mktemp)
echo "case,avg_us,median_us,server_cpu_us" >"$CSV"
for round in $(seq "$ROUNDS"); do
  one_run version --test-case version >>"$CSV"
  for q in "${QUERIES[@]}"; do
    one_run "$q" --test-case custom-query --custom-query "$q" >>"$CSV"
  done
done
[ -n "${OUT:-}" ] && cp "$CSV" "$OUT"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), rounds: $ROUNDS x $REQUESTS requests"
python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cases = list(dict.fromkeys(r["case"] for r in rows))
med = {c: {k: statistics.median(float(r[k]) for r in rows if r["case"] == c)
           for k in ("avg_us", "median_us", "server_cpu_us")} for c in cases}
v = med["version"]
print(f'{"case":<40} {"avg µs":>8} {"p50 µs":>8} {"cpu µs":>8}   ratios to version (avg / p50 / cpu)')
for c in cases:
    m = med[c]
    print(f'{c[:40]:<40} {m["avg_us"]:8.1f} {m["median_us"]:8.1f} {m["server_cpu_us"]:8.2f}   '
          f'{m["avg_us"]/v["avg_us"]:.2f} / {m["median_us"]/v["median_us"]:.2f} / '
          f'{m["server_cpu_us"]/v["server_cpu_us"]:.2f}')
EOF
rm -f "$CSV"
