#!/usr/bin/env bash
# The cost of recording metrics, side by side in one run: two QuiverDB release builds started on
# fresh data directories and measured with wrk in alternating rounds:
#   base     a build without the request statistics (BASE_REV, default: the merge base
#            with main, built in a temporary git worktree; or QUIVER_BASE_BIN);
#   metrics  this tree's build, which records every request, connection, query and commit.
# Both run with --server.authentication false, so only the recording differs.
# Single-document inserts and reads by key at concurrency 1, 4 and 16 (the measurement of
# side-by-side.sh). The goal: metrics at
# ≥ 98 % of base's requests/s (recording costs the hot path at most 2 %).
#
#   crates/quiver-server/bench/metrics-cost.sh
#
# Env: QUIVER_BIN (default: the release build in $CARGO_TARGET_DIR or target/), QUIVER_BASE_BIN
# or BASE_REV, DURATION (seconds per measurement, default 5), ROUNDS (default 3), CONCURRENCY
# ("1 4 16"). Prints one CSV line per measurement (requests/s and the server process's CPU
# time per request, utime+stime from /proc/PID/stat, in µs), a table of medians, and per
# operation and concurrency the median over the rounds of metrics/base (requests/s and CPU per
# request), each round's ratio taken within that round. Stops with an error if any server
# answers a non-2xx status.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source crates/quiver-server/bench/side-by-side.sh
TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${QUIVER_BIN:-}" ]; then
  cargo build --release -p quiver --bins >&2
fi
QUIVER=${QUIVER_BIN:-$TARGET/release/quiver}
SERVERS="base metrics"

sbs_init
sbs_extra_cleanup() {
  [ -d "$WORK/base-tree" ] && git worktree remove --force "$WORK/base-tree" >/dev/null 2>&1
  return 0
}
if [ -z "${QUIVER_BASE_BIN:-}" ]; then
  rev=${BASE_REV:-$(git merge-base HEAD main)}
  git worktree add --detach "$WORK/base-tree" "$rev" >&2
  # A target directory of its own, so that neither build invalidates the other's.
  (cd "$WORK/base-tree" && CARGO_TARGET_DIR="$TARGET/metrics-cost-base" \
    cargo build --release -p quiver --bins >&2)
  QUIVER_BASE_BIN=$TARGET/metrics-cost-base/release/quiver
fi
sbs_start base "$QUIVER_BASE_BIN" --server.authentication false
sbs_start metrics "$QUIVER" --server.authentication false
sbs_wait
# The metrics server must really record: its metrics page counts requests.
curl -sf "${URL[metrics]}/_admin/metrics" \
  | grep -q '^arangodb_http_request_statistics_total_requests_total' \
  || { echo "the metrics server serves no request statistics" >&2; exit 1; }
sbs_prepare
sbs_measure 98
