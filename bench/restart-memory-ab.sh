#!/usr/bin/env bash
# Side-by-side restart A/B of the server's memory: imports N one-attribute documents (keys
# from the traditional generator, so in order) with build A, shuts down cleanly, then restarts
# the same data directory with each build in turn and prints the seconds until it answers and
# its anonymous resident memory (RssAnon) 1 s later, once the startup work is done.
#
#   bench/restart-memory-ab.sh A_BIN B_BIN [DOCS] [ROUNDS]
set -euo pipefail
# Every request carries root's empty password (HTTP Basic): servers with authentication on
# accept it, builds without authentication ignore the header.
AUTH=(-H "Authorization: Basic cm9vdDo=")
A=$1 B=$2 DOCS=${3:-2000000} ROUNDS=${4:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port

start() { # bin; sets pid, returns once the server answers
  "$1" serve --server.endpoint "tcp://127.0.0.1:$port" --database.directory "$dir/data" \
    --log.level warning >"$dir/log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do curl -fs "${AUTH[@]}" "$url/_api/version" >/dev/null && return; sleep 0.02; done
  echo "server did not come up" >&2
  exit 1
}

start "$A"
curl -fs "${AUTH[@]}" -X POST "$url/_api/collection" -d '{"name":"c"}' >/dev/null
python3 - "$DOCS" "$dir" <<'PY'
import sys
n, d = int(sys.argv[1]), sys.argv[2]
chunk = 500_000
for part in range(0, n, chunk):
    with open(f"{d}/part{part // chunk:04d}.jsonl", "w") as f:
        for i in range(part, min(n, part + chunk)):
            f.write('{"a":%d}\n' % i)
PY
for part in "$dir"/part*.jsonl; do
  curl -fs "${AUTH[@]}" -X POST "$url/_api/import?collection=c&type=documents" --data-binary "@$part" >/dev/null
done
kill -TERM "$pid"; wait "$pid" || true

for r in $(seq "$ROUNDS"); do
  for name in A B; do
    bin=$A; [ "$name" = B ] && bin=$B
    t0=$(date +%s.%N)
    start "$bin"
    t1=$(date +%s.%N)
    sleep 1
    count=$(curl -fs "${AUTH[@]}" "$url/_api/collection/c/count" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
    anon=$(awk '/RssAnon/{print $2}' "/proc/$pid/status")
    python3 -c "import sys; r, n, t0, t1, c, a = sys.argv[1:]; print(f'round {r} build {n}: up {float(t1) - float(t0):.2f} s, {c} documents, RssAnon {int(a) / 1024:.0f} MiB ({int(a) * 1024 / int(c):.0f} bytes/doc)')" \
      "$r" "$name" "$t0" "$t1" "$count" "$anon"
    kill -TERM "$pid"; wait "$pid" || true
  done
done
