#!/usr/bin/env bash
# The data tools on the Pokec data set (docs/benchmarks/tools.md):
#   bench/tools.sh [--scale S] [--seed N] [--rounds R] [--threads T] [OUT_DIR]
# generates (or reuses) the Pokec data set (`quiver bench pokec generate`, cached as
# bench/pokec.sh and bench/peers.sh cache it) and per round, each server fresh on a free port
# with a temporary data directory:
#   1. `quiver import` of profiles.jsonl, then relations.jsonl (--type jsonl, --threads T) into
#      the schema `quiver bench pokec load` creates (relations: edges, autoincrement keys);
#   2. `quiver dump` of that database, plain (--compress-output false) and gzip (the default);
#   3. `quiver restore` of the plain dump into a fresh server, profiles then relations;
#   4. `quiver bench pokec load` (the direct `/_api/import` client, --connections T) into a
#      fresh server.
# Per step: wall time, documents/s, the tool's CPU time and peak RSS, the server's CPU time and
# peak RSS over the step, the load average (bench/tools_measure.py). Writes
# OUT_DIR/tools-<scale>/r<round>-<n>-<step>.json (+ .log, the tool's output) and summary.md.
# Data directories and dumps are deleted after each step that no longer needs them.
# Default OUT_DIR: bench/results.
#
# Env: POKEC_DATA (data set cache, default ~/.cache/quiver-pokec), BATCH_BYTES (request size of
# both import clients, default 8 MiB, quiver import's default), plus bench/common.sh's.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SCALE=0.1
SEED=3
ROUNDS=1
THREADS=4
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) OUT=$1; shift ;;
  esac
done
OUT=${OUT:-$REPO/bench/results}/tools-$SCALE
mkdir -p "$OUT"
ensure_binaries
BATCH_BYTES=${BATCH_BYTES:-$((8 << 20))}
MEASURE=(python3 "$REPO/bench/tools_measure.py")

DATA=${POKEC_DATA:-$HOME/.cache/quiver-pokec}/scale-$SCALE-seed-$SEED
if [ ! -f "$DATA/meta.json" ] || [ ! -f "$DATA/neighbors1000.json" ]; then
  echo "generating scale $SCALE (seed $SEED) into $DATA" >&2
  "${BENCH[@]}" pokec generate --scale "$SCALE" --seed "$SEED" --out "$DATA" >/dev/null
fi
PROFILES=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["profiles"])' "$DATA/meta.json")
RELATIONS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["relations"])' "$DATA/meta.json")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/quiver-tools-bench.XXXXXX")
trap 'stop_server; rm -rf "$WORK"' EXIT

ENDPOINT=()
endpoint() { ENDPOINT=(--server.endpoint "tcp://127.0.0.1:$PORT" --server.database pokec); }
# step NAME DOCS... -- COMMAND...: one measured step of the current round.
N=0
step() {
  N=$((N + 1))
  local name=$1; shift
  local file; file=$OUT/r$ROUND-$N-${name// /-}.json
  echo "$(date -u +%H:%M:%S) round $ROUND: $name (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "${MEASURE[@]}" step "$file" "$name" "$SERVER_PID" "$@"
  LAST=$file
}
expect_counts() { # label
  local got; got=$("${MEASURE[@]}" count "$PORT")
  local want="{\"profiles\": $PROFILES, \"relations\": $RELATIONS}"
  [ "$got" = "$want" ] || { echo "$1: the server holds $got, expected $want" >&2; exit 1; }
}
note() { "${MEASURE[@]}" note "$@"; }

{
  echo "{\"scale\": \"$SCALE\", \"seed\": $SEED, \"rounds\": $ROUNDS, \"threads\": $THREADS,"
  echo " \"batchBytes\": $BATCH_BYTES, \"profiles\": $PROFILES, \"relations\": $RELATIONS,"
  echo " \"quiver\": \"$("$QUIVER_BIN" --version 2>/dev/null | head -1)\","
  echo " \"commit\": \"$(git -C "$REPO" rev-parse --short HEAD)\", \"started\": \"$(date -u +%FT%TZ)\","
  echo " \"loadAverage\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} >"$OUT/run.json"

for ROUND in $(seq "$ROUNDS"); do
  N=0
  # 1. quiver import into the schema of the direct client.
  start_server
  endpoint
  "${MEASURE[@]}" schema "$PORT"
  for c in profiles relations; do
    docs=$PROFILES; [ $c = relations ] && docs=$RELATIONS
    step "import $c" "$docs" -- "$QUIVER_BIN" import "${ENDPOINT[@]}" --collection $c \
      --file "$DATA/$c.jsonl" --type jsonl --threads "$THREADS" --batch-size "$BATCH_BYTES"
  done
  expect_counts "after quiver import"
  note "$LAST" dataDirectoryKiB "$(du -sk "$SCRATCH/data" | cut -f1)"

  # 2. quiver dump, plain and gzip.
  for kind in plain gzip; do
    compress=false; [ $kind = gzip ] && compress=true
    step "dump $kind" "$PROFILES" "$RELATIONS" -- "$QUIVER_BIN" dump "${ENDPOINT[@]}" \
      --output-directory "$WORK/dump-$kind" --compress-output $compress --overwrite true
    note "$LAST" dumpKiB "$(du -sk "$WORK/dump-$kind" | cut -f1)"
  done
  rm -rf "$WORK/dump-gzip"
  stop_server

  # 3. quiver restore of the plain dump, a collection per run (restore takes document
  # collections before edge collections anyway), so each gets its own rate.
  start_server
  endpoint
  for c in profiles relations; do
    docs=$PROFILES; [ $c = relations ] && docs=$RELATIONS
    step "restore $c" "$docs" -- "$QUIVER_BIN" restore "${ENDPOINT[@]}" --create-database true \
      --input-directory "$WORK/dump-plain" --collection $c
  done
  expect_counts "after quiver restore"
  rm -rf "$WORK/dump-plain"
  stop_server

  # 4. The direct /_api/import client.
  start_server
  step "direct load" "$PROFILES" "$RELATIONS" -- "${BENCH[@]}" pokec load \
    --endpoint "tcp://127.0.0.1:$PORT" --dir "$DATA" --connections "$THREADS" \
    --batch-bytes "$BATCH_BYTES" --report "$WORK/load.json"
  note "$LAST" directLoad "$(cat "$WORK/load.json")"
  expect_counts "after the direct load"
  stop_server
done

"${MEASURE[@]}" table "$OUT" | tee "$OUT/summary.md"
