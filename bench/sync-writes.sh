#!/usr/bin/env bash
# Durable inserts: test case document with --wait-for-sync true (the collection is created
# with waitForSync, every insert is acknowledged only after it reached stable storage) next
# to the same run without, at concurrency 1 .. 64.
#
#   bench/sync-writes.sh [OUT_DIR]        (default docs/benchmarks/results)
#
# Env: REQUESTS (default 5000), CONCURRENCIES (default "1 2 4 8 16 32 64"), COMPLEXITY
# (default 10), plus those of bench/common.sh. One fresh server for the whole experiment.
source "$(dirname "$0")/common.sh"
OUT=${1:-$REPO/docs/benchmarks/results}
REQUESTS=${REQUESTS:-5000}
CONCURRENCIES=${CONCURRENCIES:-"1 2 4 8 16 32 64"}
COMPLEXITY=${COMPLEXITY:-10}
mkdir -p "$OUT"
CSV=$OUT/sync-writes.csv
ensure_binaries

echo "wait_for_sync,concurrency,requests,total_seconds,ops_per_second,failures" > "$CSV"
start_server
for c in $CONCURRENCIES; do
  for sync in false true; do
    figures=$(run_bench --test-case document --complexity "$COMPLEXITY" --concurrency "$c" \
              --requests "$REQUESTS" --wait-for-sync "$sync")
    echo "$sync,$c,$REQUESTS,$figures" | tee -a "$CSV"
  done
done
stop_server
charts sync-writes "$CSV" "$OUT"
echo "wrote $CSV"
