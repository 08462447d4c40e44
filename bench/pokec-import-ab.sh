#!/usr/bin/env bash
# Side-by-side A/B of the Pokec import: two server builds, a fresh server and data directory per
# run, alternating A and B for ROUNDS rounds; prints import seconds, server CPU and peak RSS.
#
#   bench/pokec-import-ab.sh A_BIN B_BIN DATA_DIR      (DATA_DIR written by `quiver bench pokec generate`)
#
# Env: ROUNDS (default 2); WORKLOADS=1 also runs the nine workloads after each load (B_BIN's
# `bench pokec run`, 25 connections) and prints each workload's total time, with a table of
# the medians per build and B/A at the end. The load client is B_BIN's `bench pokec load`; it sends root's empty
# password (--server.username/--server.password), so B_BIN must be a build whose pokec client
# has those options when A_BIN keeps authentication on.
set -euo pipefail
# Every request carries root's empty password (HTTP Basic): servers with authentication on
# accept it, builds without authentication ignore the header.
AUTH=(-H "Authorization: Basic cm9vdDo=")
A=$1 B=$2 DATA=$3 ROUNDS=${ROUNDS:-2}
for r in $(seq "$ROUNDS"); do
  for name in A B; do
    bin=$A; [ "$name" = B ] && bin=$B
    dir=$(mktemp -d "${TMPDIR:-/tmp}/pokec-import-ab.XXXXXX")
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$bin" serve --server.endpoint "tcp://127.0.0.1:$port" --database.directory "$dir" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -fs "${AUTH[@]}" "http://127.0.0.1:$port/_api/version" >/dev/null && break; sleep 0.1; done
    report=$dir.json
    "$B" bench pokec load --endpoint "tcp://127.0.0.1:$port" --dir "$DATA" --server-pid "$pid" \
      --report "$report" >/dev/null
    python3 - "$r" "$name" "$report" <<'PY'
import json, sys
r, name, path = sys.argv[1:]
j = json.load(open(path))
print(f'round {r} build {name}: profiles {j["profiles"]["seconds"]:.1f} s, relations '
      f'{j["relations"]["seconds"]:.1f} s, server CPU {j["serverCpuSeconds"]} s, '
      f'peak RSS {j["peakRssKiB"] // 1024} MiB')
PY
    if [ -n "${WORKLOADS:-}" ]; then
      "$B" bench pokec run --endpoint "tcp://127.0.0.1:$port" --dir "$DATA" --server-pid "$pid" \
        --report "$dir-run.json" >/dev/null || echo "round $r build $name: a workload failed" >&2
      python3 - "$r" "$name" "$dir-run.json" <<'PY' | tee -a "${TMPDIR:-/tmp}/pokec-ab-$$.txt"
import json, sys
r, name, path = sys.argv[1:]
for w in json.load(open(path))["workloads"]:
    print(f'workload,{r},{name},{w["name"]},{w["status"]},{w["totalMs"]:.1f}')
PY
      rm -f "$dir-run.json"
    fi
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$dir" "$report"
  done
done
if [ -n "${WORKLOADS:-}" ]; then
  python3 - "${TMPDIR:-/tmp}/pokec-ab-$$.txt" <<'PY'
import collections, statistics, sys
rows = [line.strip().split(",") for line in open(sys.argv[1]) if line.startswith("workload,")]
t = collections.defaultdict(list)
for _, r, build, w, status, ms in rows:
    t[(w, build)].append(float(ms))
print("| workload | A total ms (median) | B total ms (median) | B/A |")
print("|---|---|---|---|")
for w in dict.fromkeys(w for _, _, _, w, _, _ in rows):
    a, b = statistics.median(t[(w, "A")]), statistics.median(t[(w, "B")])
    print(f"| {w} | {a:,.1f} | {b:,.1f} | {100 * b / a:.0f} % |")
PY
  rm -f "${TMPDIR:-/tmp}/pokec-ab-$$.txt"
fi
