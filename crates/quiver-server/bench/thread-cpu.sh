#!/usr/bin/env bash
# Server CPU per single-document insert, split by thread (HTTP workers, collector, WAL syncer),
# for one or more QuiverDB builds side by side: each build gets a fresh server and the vs-floor
# insert load (wrk, c=16, DURATION seconds), rounds alternate between builds. Per-thread CPU is
# utime+stime from /proc/PID/task/*/stat, summed by thread name and divided by the requests wrk
# counted. Much steadier than req/s on a shared machine: it does not depend on how much CPU the
# other processes leave to the server.
#
#   crates/quiver-server/bench/thread-cpu.sh OLD_QUIVER NEW_QUIVER
#
# Env: DURATION (default 8), ROUNDS (default 3), SETTLE (seconds after the load for the collector
# to finish the sealed segments, default 3), WAL_LOGFILE_SIZE (bytes; default the server's
# 32 MiB). The collector only works on sealed segments: with 32 MiB segments a run of 8 s seals
# one or none, so its per-request figure depends on where the run stopped; 8 MiB segments make
# it steady (at the price of 4x the per-segment costs). Needs wrk and curl.
set -euo pipefail
# Every request carries root's empty password (HTTP Basic): servers with authentication on
# accept it, builds without authentication ignore the header.
AUTH=(-H "Authorization: Basic cm9vdDo=")
DURATION=${DURATION:-8}
ROUNDS=${ROUNDS:-3}
SETTLE=${SETTLE:-3}
WAL_ARGS=()
[ -n "${WAL_LOGFILE_SIZE:-}" ] && WAL_ARGS=(--wal.logfile-size "$WAL_LOGFILE_SIZE")
[ $# -ge 1 ] || { echo "usage: $0 QUIVER_BIN [QUIVER_BIN...]" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk not found (apt-get install -y wrk)" >&2; exit 1; }
WORK=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
cat > "$WORK/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Basic cm9vdDo="
wrk.body = '{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}'
LUA
TICK=$(getconf CLK_TCK)
snap() { # pid -> "thread-name ticks" summed by name
  for t in /proc/"$1"/task/*; do
    awk -v n="$(cat "$t/comm" 2>/dev/null | tr ' ' '_')" '{ sub(/.*\) /, ""); print n, $12 + $13 }' "$t/stat" 2>/dev/null || true
  done | awk '{ a[$1] += $2 } END { for (k in a) print k, a[k] }' | sort
}
echo "build,round,requests,thread,cpu_us_per_request"
for r in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    rm -rf "$WORK/data"
    "$bin" --server.endpoint tcp://127.0.0.1:0 --database.directory "$WORK/data" --log.level warning "${WAL_ARGS[@]}" >"$WORK/log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do grep -qs listening "$WORK/log" && break; sleep 0.1; done
    port=$(grep -o '127.0.0.1:[0-9]*' "$WORK/log" | head -1 | cut -d: -f2)
    url=http://127.0.0.1:$port
    curl -sf "${AUTH[@]}" -X POST "$url/_api/collection" -d '{"name":"profiles"}' >/dev/null
    snap "$PID" >"$WORK/before"
    n=$(timeout $((DURATION + 20)) wrk -t2 -c16 -d"${DURATION}s" -s "$WORK/post.lua" "$url/_api/document/profiles" \
      | awk '/ requests in / { print $1 }')
    sleep "$SETTLE"
    snap "$PID" >"$WORK/after"
    join -a 2 -e 0 -o 0,1.2,2.2 "$WORK/before" "$WORK/after" \
      | awk -v b="$(basename "$bin")" -v r="$r" -v n="$n" -v tick="$TICK" '
          { d = ($3 - $2) * 1e6 / tick / n; total += d; if (d > 0) printf "%s,%s,%s,%s,%.2f\n", b, r, n, $1, d }
          END { printf "%s,%s,%s,total,%.2f\n", b, r, n, total }'
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  done
done
