#!/usr/bin/env bash
# Kernel-event and CPU counts per single-document insert for one or more QuiverDB builds side by
# side (rounds alternate between builds): each build gets a fresh server and the vs-floor insert
# load (wrk -t2 -cC for 6 s); `perf stat -p` counts the server process for 4 s of it and every
# count is divided by the documents inserted meanwhile (collection count before and after).
# Per-request counts (pwrite64, sched_yield, context switches, task-clock) are far steadier than
# req/s on a shared machine.
#
#   bench/storage/perf-insert-ab.sh ROUNDS CONCURRENCY OLD_QUIVER NEW_QUIVER
#
# Needs wrk, curl and perf (with access to the syscalls tracepoints).
set -uo pipefail
# Every request carries root's empty password (HTTP Basic): servers with authentication on
# accept it, builds without authentication ignore the header.
AUTH=(-H "Authorization: Basic cm9vdDo=")
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS CONCURRENCY QUIVER_BIN [QUIVER_BIN...]" >&2; exit 2; }
ROUNDS=$1; C=$2; shift 2
WORK=$(mktemp -d ${TMPDIR:-/tmp}/perfab.XXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
cat > "$WORK/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Basic cm9vdDo="
wrk.body = '{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}'
LUA
for r in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    rm -rf "$WORK/data"
    "$bin" --server.endpoint tcp://127.0.0.1:0 --database.directory "$WORK/data" --log.level warning >"$WORK/log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do grep -qs listening "$WORK/log" && break; sleep 0.1; done
    port=$(grep -o '127.0.0.1:[0-9]*' "$WORK/log" | head -1 | cut -d: -f2)
    url=http://127.0.0.1:$port
    curl -sf "${AUTH[@]}" -X POST "$url/_api/collection" -d '{"name":"profiles"}' >/dev/null
    wrk -t2 -c$C -d6s -s "$WORK/post.lua" "$url/_api/document/profiles" > "$WORK/wrk" &
    WPID=$!
    sleep 1
    c0=$(curl -sf "${AUTH[@]}" "$url/_api/collection/profiles/count" | grep -o '"count":[0-9]*' | cut -d: -f2)
    perf stat -x, -e task-clock,context-switches,syscalls:sys_enter_sched_yield,syscalls:sys_enter_pwrite64,syscalls:sys_enter_futex,page-faults -p $PID -- sleep 4 2> "$WORK/perf"
    c1=$(curl -sf "${AUTH[@]}" "$url/_api/collection/profiles/count" | grep -o '"count":[0-9]*' | cut -d: -f2)
    wait $WPID
    n=$((c1 - c0))
    awk -F, -v b="$(basename "$bin")" -v r="$r" -v n="$n" '
      /task-clock/ { tc = $1 } /context-switches/ { cs = $1 } /sched_yield/ { y = $1 } /pwrite64/ { pw = $1 } /futex/ { fu = $1 } /page-faults/ { pf = $1 }
      END { printf "%s r%s n=%d rps=%.0f cpu_us=%.2f cs=%.3f yield=%.3f pwrite=%.3f futex=%.3f faults=%.3f\n", b, r, n, n/4, tc*1000/n, cs/n, y/n, pw/n, fu/n, pf/n }' "$WORK/perf"
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  done
done
