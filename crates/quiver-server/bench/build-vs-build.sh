#!/usr/bin/env bash
# Two builds of QuiverDB side by side (side-by-side.sh): single-document inserts, reads by key
# and an AQL cursor, alternating rounds, each round's ratio new/base taken within the round.
# Used to show that a restructuring change costs nothing: base = the build before it.
#
#   QUIVER_BASE_BIN=<build before> QUIVER_BIN=<build after> crates/quiver-server/bench/build-vs-build.sh
#
# Env: as side-by-side.sh (DURATION, ROUNDS, CONCURRENCY, SERVER_CPUS, CLIENT_CPUS). The new
# build runs with --server.authentication false when it knows the option (builds before
# authentication existed have none); BASE_FLAGS adds flags to the base build.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source crates/quiver-server/bench/side-by-side.sh
: "${QUIVER_BASE_BIN:?set QUIVER_BASE_BIN to the build before the change}"
: "${QUIVER_BIN:?set QUIVER_BIN to the build after the change}"
SERVERS="base new"
export SBS_CURSOR=1
new_flags=()
"$QUIVER_BIN" serve --help 2>/dev/null | grep -q -- "--server.authentication " \
  && new_flags=(--server.authentication false)
base_flags=(${BASE_FLAGS:-})
"$QUIVER_BASE_BIN" serve --help 2>/dev/null | grep -q -- "--server.authentication " \
  && base_flags+=(--server.authentication false)
sbs_init
sbs_start base "$QUIVER_BASE_BIN" "${base_flags[@]}"
sbs_start new "$QUIVER_BIN" "${new_flags[@]}"
sbs_wait
sbs_prepare
sbs_measure 95
