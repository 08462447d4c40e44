#!/usr/bin/env bash
# The cost of recording, side by side in one run, with one release build and no second build:
#   quiet     the build with --server.api-call-recording false and
#             --server.aql-query-recording false (the request statistics and metrics still
#             count);
#   recording the same build with its defaults: every request also kept for
#             /_admin/server/api-calls.
# With QUIVER_BASE_BIN set (an older release build without the request statistics, such as
# one from before the metrics existed), that build runs too, as the first server ("older"), so
# the other two are also compared with it; its difference mixes in every other change between
# the two builds, so it bounds the cost of all recording together rather than isolating it.
# All run with --server.authentication false. Single-document inserts and reads by key at
# concurrency 1, 4 and 16 (side-by-side.sh's measurement), alternating rounds; the goal is
# ≥ 98 % of the quiet server's (or older build's) requests/s.
#
#   crates/quiver-server/bench/recording-cost.sh
#
# Env: QUIVER_BIN (default: the release build in $CARGO_TARGET_DIR or target/, built if
# missing), QUIVER_BASE_BIN, DURATION (seconds per measurement, default 5), ROUNDS (default
# 3), CONCURRENCY ("1 4 16").
set -euo pipefail
cd "$(dirname "$0")/../../.."
source crates/quiver-server/bench/side-by-side.sh
TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${QUIVER_BIN:-}" ]; then
  cargo build --release --bin quiver >&2
fi
QUIVER=${QUIVER_BIN:-$TARGET/release/quiver}
if [ -n "${QUIVER_BASE_BIN:-}" ]; then
  SERVERS="older quiet recording"
else
  SERVERS="quiet recording"
fi

sbs_init
if [ -n "${QUIVER_BASE_BIN:-}" ]; then
  sbs_start older "$QUIVER_BASE_BIN" --server.authentication false
fi
sbs_start quiet "$QUIVER" --server.authentication false \
  --server.api-call-recording false --server.aql-query-recording false
sbs_start recording "$QUIVER" --server.authentication false
sbs_wait
# The recording server must really record, the quiet one must not.
curl -sf "${URL[recording]}/_admin/server/api-calls" | grep -q '"path"' \
  || { echo "the recording server records no API calls" >&2; exit 1; }
curl -sf "${URL[quiet]}/_admin/server/api-calls" | grep -q '"calls":\[\]' \
  || { echo "the quiet server records API calls" >&2; exit 1; }
sbs_prepare
sbs_measure 98
