#!/usr/bin/env bash
# Seed 001, "Performance with different journal sizes" (ArangoDB 1.1-alpha, 2012), reproduced:
# for each journal size a fresh server started with --database.maximal-journal-size; then
# N individual HTTP inserts, N individual gets, N individual updates, and N individual deletes
# (after importing the documents again), at several client concurrency levels. Client-side
# total times are recorded.
#
#   bench/journal-sizes.sh [OUT_DIR]      (default docs/benchmarks/results)
#
# Env: JOURNAL_SIZES_MIB (default "1 2 4 8 16 32"), VOLUMES (default "10000 100000"),
# CONCURRENCIES (default "1 4 16 64"), COMPLEXITY (attributes per document, default 10),
# plus those of bench/common.sh.
#
# Phases map to test cases: insert = document (POST /_api/document), get = document-get,
# update = document-update (PATCH), delete = document-remove (DELETE). The get/update/delete
# cases first load the N documents through /_api/import (untimed), as the seed re-imported
# before deleting.
source "$(dirname "$0")/common.sh"
OUT=${1:-$REPO/docs/benchmarks/results}
JOURNAL_SIZES_MIB=${JOURNAL_SIZES_MIB:-"1 2 4 8 16 32"}
VOLUMES=${VOLUMES:-"10000 100000"}
CONCURRENCIES=${CONCURRENCIES:-"1 4 16 64"}
COMPLEXITY=${COMPLEXITY:-10}
mkdir -p "$OUT"
CSV=$OUT/journal-sizes.csv
ensure_binaries

echo "journal_mib,operations,concurrency,phase,total_seconds,ops_per_second,failures" > "$CSV"
for j in $JOURNAL_SIZES_MIB; do
  start_server --database.maximal-journal-size "${j}MiB"
  for n in $VOLUMES; do
    for c in $CONCURRENCIES; do
      for phase in insert get update delete; do
        case $phase in
          insert) tc=document ;;
          get) tc=document-get ;;
          update) tc=document-update ;;
          delete) tc=document-remove ;;
        esac
        figures=$(run_bench --test-case "$tc" --complexity "$COMPLEXITY" --concurrency "$c" \
                  --requests "$n")
        echo "$j,$n,$c,$phase,$figures" | tee -a "$CSV"
      done
    done
  done
  stop_server
done
charts journal-sizes "$CSV" "$OUT"
echo "wrote $CSV"
