#!/usr/bin/env bash
# The seed's competitive benchmark side by side (docs/benchmarks/peers.md):
#   bench/peers.sh [--scale S] [--rounds N] [--databases a,b,...] [--tests a,b,...]
#                  [--restrict N] [OUT_DIR]
# generates (or reuses) one Pokec data set, then for each round and each database (quiver,
# postgresql-tabular, postgresql-jsonb, neo4j; the order alternates between rounds) starts the
# database on loopback with its data in a fresh temporary directory, loads the data set
# (load time and on-disk size recorded), runs the warmup and the workloads through the same
# harness (`quiver bench pokec run --database …`, 25 connections) with each database's own
# driver, verifies the answers, records the server's peak memory and CPU time, and stops it.
# Writes OUT_DIR/peers-<scale>/<database>-r<round>.json and a summary; then charts and the
# report table with bench/peers_report.py. Default OUT_DIR: bench/results.
#
# Needs: PostgreSQL from Debian (postgresql), Java 17 and Maven (the Neo4j launcher is built
# from bench/peers/neo4j on first use). Env: POKEC_DATA (data set cache, default
# ~/.cache/quiver-pokec), CONNECTIONS (default 25), NEO4J_HEAP (default 4g),
# NEO4J_PAGECACHE_MIB and PG_SHARED_BUFFERS (default: a quarter of the machine's memory each,
# the vendors' own sizing advice), plus bench/common.sh's.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SCALE=0.01
SEED=3
ROUNDS=1
DATABASES=quiver,postgresql-tabular,postgresql-jsonb,neo4j
TESTS=""
RESTRICT=0
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --databases) DATABASES=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    --restrict) RESTRICT=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) OUT=$1; shift ;;
  esac
done
OUT=${OUT:-$REPO/bench/results}/peers-$SCALE
mkdir -p "$OUT"
ensure_binaries
CONNECTIONS=${CONNECTIONS:-25}
MEM_MIB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 ))
PG_SHARED_BUFFERS=${PG_SHARED_BUFFERS:-$((MEM_MIB / 4))MB}
NEO4J_PAGECACHE_MIB=${NEO4J_PAGECACHE_MIB:-$((MEM_MIB / 4))}
NEO4J_HEAP=${NEO4J_HEAP:-4g}

DATA=${POKEC_DATA:-$HOME/.cache/quiver-pokec}/scale-$SCALE-seed-$SEED
if [ ! -f "$DATA/meta.json" ] || [ ! -f "$DATA/neighbors1000.json" ]; then
  echo "generating scale $SCALE (seed $SEED) into $DATA" >&2
  "${BENCH[@]}" pokec generate --scale "$SCALE" --seed "$SEED" --out "$DATA" >/dev/null
fi

RUN_ARGS=(--dir "$DATA" --connections "$CONNECTIONS" --restrict "$RESTRICT" --max-rss-gib 20)
[ -n "$TESTS" ] && RUN_ARGS+=(--tests "$TESTS")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
seconds_since() { python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),3))" "$1"; }
disk_kib() { du -sk "$1" | cut -f1; }
# Merges the load facts into a run report.
annotate() { # report load_seconds disk_kib load_report
  python3 - "$@" <<'PY'
import json, sys
path, seconds, disk, load = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
r["load"] = {"seconds": seconds, "diskKiB": disk}
try:
    r["load"]["report"] = json.load(open(load))
except (OSError, ValueError):
    pass
json.dump(r, open(path, "w"), indent=1)
PY
}

run_quiver() { # round
  start_server
  local t0; t0=$(date +%s.%N)
  "${BENCH[@]}" pokec load --endpoint "tcp://127.0.0.1:$PORT" --dir "$DATA" \
    --server-pid "$SERVER_PID" --report "$SCRATCH/load.json" >/dev/null
  local secs; secs=$(seconds_since "$t0")
  local rc=0
  "${BENCH[@]}" pokec run --database quiver --endpoint "tcp://127.0.0.1:$PORT" \
    --server-pid "$SERVER_PID" "${RUN_ARGS[@]}" --report "$OUT/quiver-r$1.json" || rc=$?
  annotate "$OUT/quiver-r$1.json" "$secs" "$(disk_kib "$SCRATCH/data")" "$SCRATCH/load.json"
  stop_server
  rm -rf "$SCRATCH"
  return $rc
}

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
run_postgres() { # layout round
  [ -x "$PG_BIN/initdb" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; return 1; }
  local dir; dir=$(mktemp -d "${TMPDIR:-/tmp}/peer-pg.XXXXXX")
  chown postgres "$dir"
  local port; port=$(free_port)
  local as=(runuser -u postgres --)
  "${as[@]}" "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust >/dev/null
  # The benchmark's server kept initdb's defaults; these are the usual production sizing on
  # this machine (shared buffers a quarter of memory, WAL room for the bulk load).
  cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
shared_buffers = $PG_SHARED_BUFFERS
effective_cache_size = $((MEM_MIB / 2))MB
work_mem = 64MB
maintenance_work_mem = 1GB
max_wal_size = 8GB
checkpoint_timeout = 30min
max_connections = 100
CONF
  "${as[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
  local pid; pid=$(head -1 "$dir/data/postmaster.pid")
  local db=pokec_${1#postgresql-}
  "${as[@]}" "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db"
  local conn="host=127.0.0.1 port=$port user=postgres dbname=$db"
  local t0; t0=$(date +%s.%N)
  local rc=0
  "${BENCH[@]}" pokec load-peer --database "$1" --postgres "$conn" --dir "$DATA" \
    --report "$dir/load.json" >/dev/null || rc=$?
  local secs; secs=$(seconds_since "$t0")
  if [ $rc = 0 ]; then
    "${BENCH[@]}" pokec run --database "$1" --postgres "$conn" --server-pid "$pid" \
      "${RUN_ARGS[@]}" --report "$OUT/$1-r$2.json" || rc=$?
    annotate "$OUT/$1-r$2.json" "$secs" "$(disk_kib "$dir/data/base")" "$dir/load.json"
  fi
  "${as[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  rm -rf "$dir"
  return $rc
}

NEO4J_DIR=$REPO/bench/peers/neo4j
run_neo4j() { # round
  if [ ! -f "$NEO4J_DIR/target/neo4j-launcher-1.jar" ]; then
    (cd "$NEO4J_DIR" && mvn -q package) >&2
  fi
  local cp="$NEO4J_DIR/target/neo4j-launcher-1.jar:$NEO4J_DIR/target/lib/*"
  local dir; dir=$(mktemp -d "${TMPDIR:-/tmp}/peer-neo4j.XXXXXX")
  local t0; t0=$(date +%s.%N)
  "${BENCH[@]}" pokec neo4j-files --dir "$DATA" --out "$dir/import" >/dev/null
  java -Xmx"$NEO4J_HEAP" -cp "$cp" quiver.bench.Launcher import --home "$dir/home" \
    --nodes "$dir/import/profiles.tsv" --relationships "$dir/import/relations.tsv" \
    >"$dir/import.log" 2>&1 || { tail -20 "$dir/import.log" >&2; return 1; }
  rm -rf "$dir/import"
  local port; port=$(free_port)
  mkfifo "$dir/stdin"
  java -Xms"$NEO4J_HEAP" -Xmx"$NEO4J_HEAP" -cp "$cp" quiver.bench.Launcher serve --home "$dir/home" \
    --bolt-port "$port" --pagecache-mib "$NEO4J_PAGECACHE_MIB" <"$dir/stdin" >"$dir/server.log" 2>&1 &
  local pid=$!
  exec 9>"$dir/stdin"   # closing it stops the server
  for _ in $(seq 600); do
    grep -q '^ready' "$dir/server.log" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || { cat "$dir/server.log" >&2; return 1; }
    sleep 0.5
  done
  local rc=0
  "${BENCH[@]}" pokec load-peer --database neo4j --bolt "127.0.0.1:$port" --dir "$DATA" \
    --report "$dir/load.json" >/dev/null || rc=$?
  local secs; secs=$(seconds_since "$t0")
  if [ $rc = 0 ]; then
    "${BENCH[@]}" pokec run --database neo4j --bolt "127.0.0.1:$port" --server-pid "$pid" \
      "${RUN_ARGS[@]}" --report "$OUT/neo4j-r$1.json" || rc=$?
    annotate "$OUT/neo4j-r$1.json" "$secs" "$(disk_kib "$dir/home/data")" "$dir/load.json"
  fi
  exec 9>&-
  wait $pid 2>/dev/null || true
  rm -rf "$dir"
  return $rc
}

IFS=, read -r -a DBS <<<"$DATABASES"
failed=0
for round in $(seq "$ROUNDS"); do
  order=("${DBS[@]}")
  if [ $((round % 2)) = 0 ]; then  # alternate the order between rounds
    order=(); for ((i=${#DBS[@]}-1; i>=0; i--)); do order+=("${DBS[$i]}"); done
  fi
  for db in "${order[@]}"; do
    echo "== round $round: $db (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    case "$db" in
      quiver) run_quiver "$round" || failed=$((failed + 1)) ;;
      postgresql-tabular|postgresql-jsonb) run_postgres "$db" "$round" || failed=$((failed + 1)) ;;
      neo4j) run_neo4j "$round" || failed=$((failed + 1)) ;;
      *) echo "unknown database $db" >&2; exit 2 ;;
    esac
  done
done
py=python3
if [ "${NO_CHARTS:-0}" != 1 ]; then
  venv=${VENV:-$HOME/.cache/quiver-bench-venv}
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv "$venv" && "$venv/bin/pip" install --quiet matplotlib || true
  fi
  [ -x "$venv/bin/python" ] && py=$venv/bin/python
fi
"$py" "$REPO/bench/peers_report.py" "$OUT" || echo "report skipped" >&2
echo "$failed database run(s) had failed or wrong workloads; reports in $OUT" >&2
[ $failed = 0 ]
