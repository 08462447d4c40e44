#!/usr/bin/env bash
# User-space instructions the server executes per request, counted by valgrind (callgrind), for
# one or more builds and the floor server. Unlike CPU time this count does not depend on what
# else runs on the machine, so small differences between builds show up on a loaded machine.
# Kernel work (the loopback send/receive, the scheduler) is not counted: it is measured by
# vs-floor.sh's CPU time and by perf stat.
#
#   crates/quiver-server/bench/instructions-per-request.sh BIN [BIN...]
#
# Env: OP (read | insert | cursor; default read), QUIVER_FLOOR_BIN (optional: also count the
# floor, reads only), N1/N2 (requests per run, default 500 and 2500). Each build runs twice,
# with N1 and N2 sequential requests over one keep-alive connection; the difference divided by
# N2 - N1 is the per-request count (start-up and shutdown cancel out).
set -euo pipefail
# Every request carries root's empty password (HTTP Basic): servers with authentication on
# accept it, builds without authentication ignore the header.
AUTH=(-H "Authorization: Basic cm9vdDo=")
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install -y valgrind)" >&2; exit 1; }
OP=${OP:-read}
N1=${N1:-500}
N2=${N2:-2500}
case "$OP" in
  read) METHOD=GET; URLPATH=/_api/document/profiles/12345 ;;
  insert) METHOD=POST; URLPATH=/_api/document/profiles ;;
  cursor) METHOD=POST; URLPATH=/_api/cursor ;;
  *) echo "OP must be read, insert or cursor" >&2; exit 2 ;;
esac
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/client.py" <<'PY'
import http.client, sys
port, n, method, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
body = ('{"query":"RETURN 1"}' if path.endswith("cursor") else
        '{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}')
# Root's empty password, as curl sends it (builds without authentication ignore it).
auth = {"Authorization": "Basic cm9vdDo="}
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
for _ in range(n):
    if method == "POST":
        c.request(method, path, body=body, headers={**auth, "Content-Type": "application/json"})
    else:
        c.request(method, path, headers=auth)
    r = c.getresponse()
    r.read()
    assert r.status < 300, (r.status, path)
PY

count() { # kind binary requests -> total instructions
  local kind=$1 bin=$2 n=$3 dir port pid
  dir=$(mktemp -d -p "$WORK")
  if [ "$kind" = floor ]; then
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$bin" 0 >"$dir/log" 2>"$dir/vg.log" &
  else
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$bin" \
      --server.endpoint tcp://127.0.0.1:0 --database.directory "$dir/data" --log.level warning \
      >"$dir/log" 2>"$dir/vg.log" &
  fi
  pid=$!
  for _ in $(seq 600); do grep -q listening "$dir/log" && break; sleep 0.1; done
  port=$(grep -o '127.0.0.1:[0-9]*' "$dir/log" | head -1 | cut -d: -f2)
  [ -n "$port" ] || { echo "server did not start" >&2; cat "$dir"/*.log >&2; exit 1; }
  if [ "$kind" != floor ]; then
    curl -sf "${AUTH[@]}" -X POST "http://127.0.0.1:$port/_api/collection" -d '{"name":"profiles"}' >/dev/null
    curl -sf "${AUTH[@]}" -X POST "http://127.0.0.1:$port/_api/document/profiles" \
      -d '{"_key":"12345","name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}' >/dev/null
  fi
  python3 "$WORK/client.py" "$port" "$n" "$METHOD" "$URLPATH"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  awk '/^(summary|totals):/ { print $2; exit }' "$dir/cg.out"
}

per_request() { # kind binary
  local a b
  a=$(count "$1" "$2" "$N1")
  b=$(count "$1" "$2" "$N2")
  echo $(((b - a) / (N2 - N1)))
}

echo "op,server,instructions_per_request"
if [ -n "${QUIVER_FLOOR_BIN:-}" ] && [ "$OP" = read ]; then
  echo "$OP,floor,$(per_request floor "$QUIVER_FLOOR_BIN")"
fi
for bin in "$@"; do
  echo "$OP,$bin,$(per_request quiver "$bin")"
done
