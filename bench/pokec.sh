#!/usr/bin/env bash
# The Pokec social-network benchmark (seed 003, docs/benchmarks/pokec.md):
#   bench/pokec.sh [--scale S] [--seed N] [--tests a,b,...] [--restrict N] [OUT_DIR]
# generates (or reuses) a data set, starts its own release `quiver` on a free port with a fresh
# data directory, imports through /_api/import, runs the workloads and writes
# OUT_DIR/pokec-<scale>.json, .csv, -import.json and a chart (default OUT_DIR: bench/results).
#
# Env: POKEC_DATA (where data sets are cached, default ~/.cache/quiver-pokec),
#      MAX_RSS_GIB (stop when the server passes it, default 16), plus bench/common.sh's.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SCALE=0.01
SEED=3
TESTS=""
RESTRICT=0
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    --restrict) RESTRICT=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) OUT=$1; shift ;;
  esac
done
OUT=${OUT:-$REPO/bench/results}
mkdir -p "$OUT"
ensure_binaries

DATA=${POKEC_DATA:-$HOME/.cache/quiver-pokec}/scale-$SCALE-seed-$SEED
if [ ! -f "$DATA/meta.json" ] || [ ! -f "$DATA/neighbors1000.json" ]; then
  echo "generating scale $SCALE (seed $SEED) into $DATA" >&2
  t0=$(date +%s.%N)
  "${BENCH[@]}" pokec generate --scale "$SCALE" --seed "$SEED" --out "$DATA" >/dev/null
  echo "generated in $(echo "$(date +%s.%N) - $t0" | bc) s" >&2
fi

start_server
STEM=$OUT/pokec-$SCALE
LIMIT=(--server-pid "$SERVER_PID" --max-rss-gib "${MAX_RSS_GIB:-16}")
echo "server pid $SERVER_PID port $PORT; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"${BENCH[@]}" pokec load --endpoint "tcp://127.0.0.1:$PORT" --dir "$DATA" "${LIMIT[@]}" \
  --report "$STEM-import.json" >/dev/null
RUN=(--endpoint "tcp://127.0.0.1:$PORT" --dir "$DATA" "${LIMIT[@]}" --restrict "$RESTRICT"
     --import-report "$STEM-import.json" --report "$STEM.json" --csv "$STEM.csv")
[ -n "$TESTS" ] && RUN+=(--tests "$TESTS")
rc=0
"${BENCH[@]}" pokec run "${RUN[@]}" || rc=$?
python3 - "$STEM-import.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"import: {r['profiles']['documents']:,} profiles in {r['profiles']['seconds']:.1f} s, "
      f"{r['relations']['documents']:,} relations in {r['relations']['seconds']:.1f} s, "
      f"peak RSS {r['peakRssKiB'] / 1024:.0f} MiB")
PY
if [ "${NO_CHARTS:-0}" != 1 ]; then
  venv=${VENV:-$HOME/.cache/quiver-bench-venv}
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv "$venv" && "$venv/bin/pip" install --quiet matplotlib || true
  fi
  "$venv/bin/python" "$REPO/bench/pokec_plot.py" "$STEM.csv" "$OUT" \
    || echo "chart skipped (no matplotlib); CSV written" >&2
fi
exit $rc
