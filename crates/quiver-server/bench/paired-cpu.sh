#!/usr/bin/env bash
# Server CPU per request of several QuiverDB servers loaded AT THE SAME TIME: every server pinned
# to SERVER_CPUS, each loaded by its own wrk (pinned to CLIENT_CPUS) over the same window, the
# server's CPU time counted by `perf stat -e task-clock -p PID` and divided by the requests wrk
# counted. On a shared, loaded machine the other processes' load changes from one second to the
# next; servers measured in the same window share it, so each round's difference between them
# is much steadier than between runs taken one after the other (side-by-side.sh). The servers
# also compete with each other for the core, equally. Read the per-round differences.
#
#   crates/quiver-server/bench/paired-cpu.sh "NAME|ENV|FLAGS|BINARY" "NAME|ENV|FLAGS|BINARY" ...
#
# ENV is VAR=value words for the server's environment, FLAGS extra server options (both may be
# empty: "main|||/path/to/quiver"). Every server runs with --server.authentication false.
# Env: OP (read | insert; default read), C (connections per wrk, default 16), DURATION (seconds
# per round, default 5), ROUNDS (default 5), SERVER_CPUS (default 1), CLIENT_CPUS (default 0).
# Prints CSV: op,server,round,requests,cpu_us_per_req.
set -euo pipefail
DURATION=${DURATION:-5}; ROUNDS=${ROUNDS:-5}; C=${C:-16}; OP=${OP:-read}
SERVER_CPUS=${SERVER_CPUS:-1}; CLIENT_CPUS=${CLIENT_CPUS:-0}
BODY='{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}'
WORK=$(mktemp -d)
declare -A BIN PID URL ENVS FLAGS
NAMES=()
for a in "$@"; do IFS='|' read -r n e f b <<<"$a"; BIN[$n]=$b; ENVS[$n]=$e; FLAGS[$n]=$f; NAMES+=("$n"); done
cleanup() { for n in "${NAMES[@]}"; do kill "${PID[$n]}" 2>/dev/null || true; done; sleep 0.5; rm -rf "$WORK"; }
trap cleanup EXIT
for n in "${NAMES[@]}"; do
  env ${ENVS[$n]} taskset -c "$SERVER_CPUS" "${BIN[$n]}" --server.endpoint tcp://127.0.0.1:0 --database.directory "$WORK/$n-data" \
    --log.level warning --server.authentication false ${FLAGS[$n]} >"$WORK/$n.log" 2>&1 &
  PID[$n]=$!
done
for n in "${NAMES[@]}"; do
  for _ in $(seq 200); do grep -qs listening "$WORK/$n.log" && break; sleep 0.1; done
  port=$(grep -o '127.0.0.1:[0-9]*' "$WORK/$n.log" | head -1 | cut -d: -f2)
  URL[$n]=http://127.0.0.1:$port
  curl -sf -X POST "${URL[$n]}/_api/collection" -d '{"name":"profiles"}' >/dev/null
  curl -sf -X POST "${URL[$n]}/_api/document/profiles" -d "{\"_key\":\"12345\",${BODY:1}" >/dev/null
done
cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$BODY'
LUA
case $OP in read) path=/_api/document/profiles/12345; s=();; insert) path=/_api/document/profiles; s=(-s "$WORK/post.lua");; esac
echo "op,server,round,requests,cpu_us_per_req"
for r in $(seq "$ROUNDS"); do
  waits=()
  for n in "${NAMES[@]}"; do
    perf stat -x, -e task-clock -p "${PID[$n]}" -o "$WORK/perf-$n.out" -- taskset -c "$CLIENT_CPUS" wrk -t1 -c"$C" -d"${DURATION}s" --timeout 5s "${s[@]}" "${URL[$n]}$path" >"$WORK/wrk-$n.out" &
    waits+=($!)
  done
  wait "${waits[@]}"
  for n in "${NAMES[@]}"; do
    grep -q Non-2xx "$WORK/wrk-$n.out" && { echo "non-2xx from $n" >&2; exit 1; }
    req=$(awk '/ requests in / {print $1}' "$WORK/wrk-$n.out")
    cpu=$(awk -F, '/task-clock/ {print $1}' "$WORK/perf-$n.out")
    awk -v req="$req" -v cpu="$cpu" -v n=$n -v r=$r -v op=$OP 'BEGIN { printf "%s,%s,%d,%d,%.3f\n", op, n, r, req, cpu*1000/req }'
  done
done
