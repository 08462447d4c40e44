#!/usr/bin/env bash
# A/B of `quiver dump` on one loaded data directory (docs/benchmarks/tools.md, "Dump: A/B"):
#   bench/dump_ab.sh DATA_DIR OUT_DIR ROUNDS BIN_A BIN_B...
# DATA_DIR holds database `pokec` (e.g. loaded with `quiver bench pokec load`). Per round and
# binary, alternately: that binary's server on DATA_DIR (after its start-up work, such as the
# edge index load, has gone quiet: at most 2 clock ticks of CPU in each of 3 seconds), then that binary's
# `quiver dump --compress-output false` and `--compress-output true`, each measured by
# bench/tools_measure.py (wall time, tool CPU and RSS from wait4, server CPU from
# /proc/<pid>/stat). Writes OUT_DIR/r<round>-<binary>-<plain|gzip>.json (+ .log, + .kib: the
# dump's size).
set -euo pipefail
PROFILES=${PROFILES:-163280}     # the documents of scale 0.1; set both for another scale
RELATIONS=${RELATIONS:-3062256}
DATA=$1; OUT=$2; ROUNDS=$3; shift 3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MEASURE=(python3 "$HERE/tools_measure.py")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/quiver-dump-ab.XXXXXX")
SPID=""
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for r in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    tag=$(basename "$bin")
    "$bin" --server.endpoint tcp://127.0.0.1:0 --database.directory "$DATA" >"$WORK/server-$r-$tag.log" 2>&1 &
    SPID=$!
    PORT=""
    for _ in $(seq 600); do
      PORT=$(sed -n 's/.*listening on tcp:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/server-$r-$tag.log" | head -1)
      [ -n "$PORT" ] && break
      sleep 0.1
    done
    [ -n "$PORT" ] || { echo "server $bin did not start" >&2; exit 1; }
    quiet=0; last=$(cpu "$SPID")
    while [ $quiet -lt 3 ]; do
      sleep 1; now=$(cpu "$SPID")
      if [ $((now - last)) -le 2 ]; then quiet=$((quiet + 1)); else quiet=0; fi
      last=$now
    done
    for kind in plain gzip; do
      compress=false; [ $kind = gzip ] && compress=true
      echo "$(date -u +%T) round $r $tag $kind (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      "${MEASURE[@]}" step "$OUT/r$r-$tag-$kind.json" "dump $kind $tag" "$SPID" "$PROFILES" "$RELATIONS" -- \
        "$bin" dump --server.endpoint "tcp://127.0.0.1:$PORT" --server.database pokec \
        --output-directory "$WORK/dump" --compress-output $compress --overwrite true --progress false
      du -sk "$WORK/dump" | cut -f1 >"$OUT/r$r-$tag-$kind.kib"
      rm -rf "$WORK/dump"
    done
    kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=""
  done
done
