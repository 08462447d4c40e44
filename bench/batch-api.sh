#!/usr/bin/env bash
# Seed 000, "Gain factor of 5 using batch requests" (ArangoDB 1.1, 2012), reproduced:
# insert documents with complexity 1, 10 and 100 at concurrency 1, 2, 4, 8 and 16, with
# batch size 0 (no batching) and 1 .. 128 (operations per /_api/batch request); report the
# total time and the reduction against batch size 0.
#
#   bench/batch-api.sh [OUT_DIR]          (default docs/benchmarks/results)
#
# Env: REQUESTS (documents per run, default 500000 as in the seed), COMPLEXITIES,
# CONCURRENCIES, BATCH_SIZES (space-separated lists), plus those of bench/common.sh.
# A fresh server (fresh data directory, free port) per complexity; the test case drops and
# recreates its collection before every run, as arangob did.
source "$(dirname "$0")/common.sh"
OUT=${1:-$REPO/docs/benchmarks/results}
REQUESTS=${REQUESTS:-500000}
COMPLEXITIES=${COMPLEXITIES:-"1 10 100"}
CONCURRENCIES=${CONCURRENCIES:-"1 2 4 8 16"}
BATCH_SIZES=${BATCH_SIZES:-"0 1 2 4 8 16 32 64 128"}
mkdir -p "$OUT"
CSV=$OUT/batch-api.csv
ensure_binaries

echo "complexity,concurrency,batch_size,requests,total_seconds,ops_per_second,failures,reduction_vs_batch0_percent" > "$CSV"
for x in $COMPLEXITIES; do
  start_server
  for c in $CONCURRENCIES; do
    base=""
    for b in $BATCH_SIZES; do
      figures=$(run_bench --test-case document --complexity "$x" --concurrency "$c" \
                --batch-size "$b" --requests "$REQUESTS")
      seconds=${figures%%,*}
      if [ "$b" = 0 ]; then base=$seconds; fi
      reduction=$(python3 -c "import sys; b, s = sys.argv[1], sys.argv[2]
try: print(f'{(1 - float(s) / float(b)) * 100:.1f}')
except Exception: print('')" "${base:-nan}" "$seconds")
      echo "$x,$c,$b,$REQUESTS,$figures,$reduction" | tee -a "$CSV"
    done
  done
  stop_server
done
charts batch-api "$CSV" "$OUT"
echo "wrote $CSV"
