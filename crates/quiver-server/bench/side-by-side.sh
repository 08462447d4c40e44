# The side-by-side measurement shared by auth-cost.sh and metrics-cost.sh (sourced, not run):
# several QuiverDB servers on fresh data directories, measured with wrk in alternating rounds
# on single-document inserts (POST /_api/document/profiles, vs-floor.sh's body) and reads by
# key (GET /_api/document/profiles/12345), then per operation and concurrency a table of
# medians and the median over the rounds of each mode's ratio to the base server, each
# round's ratio taken within that round (both servers share the machine's load then).
#
# A script sets SERVERS ("base mode …", the base first), then:
#   sbs_init                         work directory, arrays URL PID HEADER, cleanup on exit
#   sbs_start NAME BINARY [FLAGS…]   starts one server on a free port (log level warning)
#   sbs_wait                         waits until every server listens, fills URL
#   HEADER[NAME]="…"                 a header each request to NAME carries (or empty)
#   sbs_prepare                      creates collection profiles and document 12345
#   sbs_measure GOAL_PERCENT         the rounds, the CSV, the tables and the verdicts
# A script may define sbs_extra_cleanup, run at exit after the servers stopped. With
# SBS_CURSOR=1 each round also measures an AQL cursor (POST /_api/cursor, a query returning the
# stored document and a computed object), the path of a query's response body.
# Env: DURATION (seconds per measurement, default 5), ROUNDS (default 3), CONCURRENCY
# ("1 4 16"), SERVER_CPUS and CLIENT_CPUS (taskset CPU lists, e.g. 1 and 0: every server on
# one core and wrk on the other, so that client and server never take each other's core —
# on a 2-core machine this narrows the scatter of single rounds). Stops with an error if any
# server answers a non-2xx status.

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-"1 4 16"}
SERVER_PIN=(); [ -n "${SERVER_CPUS:-}" ] && SERVER_PIN=(taskset -c "$SERVER_CPUS")
CLIENT_PIN=(); [ -n "${CLIENT_CPUS:-}" ] && CLIENT_PIN=(taskset -c "$CLIENT_CPUS")
BODY='{"name":"Alice Example","age":34,"city":"Berlin-Mitte","tags":["a","b"],"active":true}'

sbs_init() {
  command -v wrk >/dev/null || { echo "wrk not found (apt-get install -y wrk)" >&2; exit 1; }
  WORK=$(mktemp -d)
  declare -gA URL PID HEADER
  trap sbs_cleanup EXIT
}

sbs_cleanup() {
  [ "${#PID[@]}" -gt 0 ] && kill "${PID[@]}" 2>/dev/null
  wait 2>/dev/null || true
  if declare -F sbs_extra_cleanup >/dev/null; then sbs_extra_cleanup; fi
  rm -rf "$WORK"
}

sbs_start() { # name binary [flags…]
  local name=$1 binary=$2
  shift 2
  "${SERVER_PIN[@]}" "$binary" --server.endpoint tcp://127.0.0.1:0 --database.directory "$WORK/$name-data" \
    --log.level warning "$@" >"$WORK/$name.log" 2>&1 &
  PID[$name]=$!
  HEADER[$name]=""
}

sbs_wait() {
  local s port
  for s in $SERVERS; do
    for _ in $(seq 100); do grep -qs listening "$WORK/$s.log" && break; sleep 0.1; done
    port=$(grep -o '127.0.0.1:[0-9]*' "$WORK/$s.log" | head -1 | cut -d: -f2)
    [ -n "$port" ] || { echo "$s server did not start" >&2; cat "$WORK/$s.log" >&2; exit 1; }
    URL[$s]=http://127.0.0.1:$port
  done
}

sbs_prepare() {
  local s h
  for s in $SERVERS; do
    h=(); [ -n "${HEADER[$s]}" ] && h=(-H "${HEADER[$s]}")
    curl -sf "${h[@]}" -X POST "${URL[$s]}/_api/collection" -d '{"name":"profiles"}' >/dev/null
    curl -sf "${h[@]}" -X POST "${URL[$s]}/_api/document/profiles" \
      -d "{\"_key\":\"12345\",${BODY:1}" >/dev/null
  done
  cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$BODY'
LUA
  cat > "$WORK/cursor.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"query":"FOR d IN profiles FILTER d._key == @k RETURN {doc: d, n: LENGTH(d.tags)}","bindVars":{"k":"12345"}}'
LUA
}

sbs_cpu_ticks() { # pid -> utime+stime in clock ticks (fields 14 and 15 of /proc/PID/stat)
  awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

sbs_run() { # server path threads conns [script] -> "requests_per_second,server_cpu_us_per_request"
  local s=$1 extra=() before after
  [ -n "${HEADER[$s]}" ] && extra+=(-H "${HEADER[$s]}")
  [ -n "${5:-}" ] && extra+=(-s "$5")
  before=$(sbs_cpu_ticks "${PID[$s]}")
  timeout $((DURATION + 20)) "${CLIENT_PIN[@]}" wrk -t"$3" -c"$4" -d"${DURATION}s" --timeout 5s "${extra[@]}" \
    "${URL[$s]}$2" >"$WORK/wrk.out"
  after=$(sbs_cpu_ticks "${PID[$s]}")
  if grep -q Non-2xx "$WORK/wrk.out"; then
    echo "error: $s server answered non-2xx responses to $2:" >&2
    grep -E "Non-2xx|requests in" "$WORK/wrk.out" >&2
    exit 1
  fi
  awk -v cpu=$((after - before)) -v tick="$(getconf CLK_TCK)" '
    / requests in / { n = $1 }
    /Requests\/sec/ { rps = $2 }
    END { printf "%s,%.1f\n", rps, (n > 0 ? cpu * 1e6 / tick / n : 0) }' "$WORK/wrk.out"
}

sbs_measure() { # goal_percent
  local goal=$1 n c t r s m order
  n=$(echo $SERVERS | wc -w)
  {
  echo "op,server,concurrency,round,requests_per_second,server_cpu_us_per_request"
  for c in $CONCURRENCY; do
    t=2; [ "$c" = 1 ] && t=1
    for r in $(seq "$ROUNDS"); do
      # Each round starts with a different server, so no mode always runs first or last.
      order=$(echo $SERVERS $SERVERS | cut -d' ' -f$(((r - 1) % n + 1))-$(((r - 1) % n + n)))
      for s in $order; do
        # Assigned first: a failing run inside echo's arguments would not stop the script.
        m=$(sbs_run "$s" /_api/document/profiles $t "$c" "$WORK/post.lua")
        echo "insert,$s,$c,$r,$m"
      done
      for s in $order; do
        m=$(sbs_run "$s" /_api/document/profiles/12345 $t "$c")
        echo "read,$s,$c,$r,$m"
      done
      if [ -n "${SBS_CURSOR:-}" ]; then
        for s in $order; do
          m=$(sbs_run "$s" /_api/cursor $t "$c" "$WORK/cursor.lua")
          echo "cursor,$s,$c,$r,$m"
        done
      fi
    done
  done
  } | tee "$WORK/results.csv"
  python3 - "$WORK/results.csv" "$goal" $SERVERS <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
goal = float(sys.argv[2])
servers = sys.argv[3:]
base, modes = servers[0], servers[1:]
ops = [op for op in ("insert", "read", "cursor") if any(r["op"] == op for r in rows)]
concurrencies = sorted({int(r["concurrency"]) for r in rows})

def cell(op, c):
    return [r for r in rows if r["op"] == op and int(r["concurrency"]) == c]

print()
print("| operation | concurrency | " + " | ".join(f"{s} req/s" for s in servers) + " | "
      + " | ".join(f"{s} CPU µs/req" for s in servers) + " |")
print("|---|---|" + "---|" * (2 * len(servers)))
for op in ops:
    for c in concurrencies:
        def med(server, field):
            values = [float(r[field] or 0) for r in cell(op, c) if r["server"] == server]
            return statistics.median(values) if values else 0.0
        rps = [med(s, "requests_per_second") for s in servers]
        cpu = [med(s, "server_cpu_us_per_request") for s in servers]
        print(f"| {op} | {c} | " + " | ".join(f"{x:,.0f}" for x in rps) + " | "
              + " | ".join(f"{x:.1f}" for x in cpu) + " |")
print()
# "CPU share" is base's CPU per request over the mode's: the share of base's rate the mode
# would reach if the server's CPU were the limit.
print(f"Per-round ratios to {base} (median over rounds first; goal: ≥ {goal:g} % requests/s):")
for op in ops:
    for c in concurrencies:
        rounds = {}
        for r in cell(op, c):
            rounds.setdefault(r["round"], {})[r["server"]] = r
        for s in modes:
            rate, share = [], []
            for v in rounds.values():
                if base not in v or s not in v:
                    continue
                base_rps = float(v[base]["requests_per_second"] or 0)
                base_cpu = float(v[base]["server_cpu_us_per_request"] or 0)
                mode_cpu = float(v[s]["server_cpu_us_per_request"] or 0)
                if base_rps:
                    rate.append(100 * float(v[s]["requests_per_second"] or 0) / base_rps)
                if mode_cpu:
                    share.append(100 * base_cpu / mode_cpu)
            if not rate:
                continue
            verdict = "meets" if statistics.median(rate) >= goal else "below"
            listed = ", ".join(f"{x:.0f}" for x in rate)
            cpu_text = f"{statistics.median(share):.0f} %" if share else "n/a"
            print(f"  {op} c={c} {s}/{base}: {statistics.median(rate):.0f} % ({listed}) "
                  f"{verdict}; CPU share {cpu_text}")
PY
}
