#!/usr/bin/env bash
# Side-by-side restart A/B of a data directory holding an imported Pokec graph (database
# "pokec", `bench/pokec.sh` or `quiver bench pokec load`): for each build, alternating, the
# seconds from process start until the server answers, until the first graph query is answered
# (it waits for the edge index's startup build), and the process's CPU seconds by then.
#
#   bench/edge-index-restart-ab.sh A_BIN B_BIN DATA_DIR [ROUNDS]
set -euo pipefail
# Every request carries root's empty password (HTTP Basic): servers with authentication on
# accept it, builds without authentication ignore the header.
AUTH=(-H "Authorization: Basic cm9vdDo=")
A=$1 B=$2 DIR=$3 ROUNDS=${4:-3}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
query='{"query":"FOR v IN 1..1 OUTBOUND \"profiles/P1\" relations RETURN v._key"}'
for r in $(seq "$ROUNDS"); do
  for name in A B; do
    bin=$A; [ "$name" = B ] && bin=$B
    t0=$(date +%s.%N)
    "$bin" serve --server.endpoint "tcp://127.0.0.1:$port" --database.directory "$DIR" \
      --log.level info >"$DIR.restart.log" 2>&1 &
    pid=$!
    for _ in $(seq 1200); do curl -fs "${AUTH[@]}" "$url/_api/version" >/dev/null && break; sleep 0.05; done
    t1=$(date +%s.%N)
    curl -fs "${AUTH[@]}" -X POST "$url/_db/pokec/_api/cursor" -d "$query" >/dev/null || echo "graph query failed" >&2
    t2=$(date +%s.%N)
    cpu=$(awk '{ sub(/.*\) /, ""); print ($12 + $13) / 100 }' "/proc/$pid/stat")
    python3 -c "import sys; t0, t1, t2 = map(float, sys.argv[3:6]); print(f'round {sys.argv[1]} build {sys.argv[2]}: up {t1 - t0:.2f} s, first graph query {t2 - t0:.2f} s, CPU {sys.argv[6]} s')" \
      "$r" "$name" "$t0" "$t1" "$t2" "$cpu"
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
rm -f "$DIR.restart.log"
