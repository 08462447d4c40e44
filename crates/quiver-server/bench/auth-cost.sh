#!/usr/bin/env bash
# The cost of authentication, side by side in one run: the same QuiverDB binary started three
# times on fresh data directories and measured with wrk in alternating rounds:
#   off    --server.authentication false, requests without credentials;
#   basic  authentication on, every request carries root's Basic credentials;
#   jwt    authentication on, every request carries a bearer token from POST /_open/auth.
# Single-document inserts and reads by key at concurrency 1, 4 and 16 (the measurement of
# side-by-side.sh). The goal: basic and jwt at
# ≥ 95 % of off's requests/s.
#
#   crates/quiver-server/bench/auth-cost.sh
#
# Env: QUIVER_BIN (default: the release build in $CARGO_TARGET_DIR or target/), DURATION
# (seconds per measurement, default 5), ROUNDS (default 3), CONCURRENCY ("1 4 16").
# Prints one CSV line per measurement (requests/s and the server process's CPU time per request,
# utime+stime from /proc/PID/stat, in µs), a table of medians, and per operation and concurrency
# the median over the rounds of basic/off and jwt/off (requests/s and CPU per request), each
# round's ratio taken within that round. Stops with an error if any server answers a non-2xx
# status (a refused credential must never count as throughput).
set -euo pipefail
cd "$(dirname "$0")/../../.."
source crates/quiver-server/bench/side-by-side.sh
TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${QUIVER_BIN:-}" ]; then
  cargo build --release -p quiver --bins >&2
fi
QUIVER=${QUIVER_BIN:-$TARGET/release/quiver}
SERVERS="off basic jwt"
BASIC="Basic cm9vdDo=" # root, empty password (a fresh data directory)

sbs_init
# A day's token lifetime, so that long runs never see the jwt server's token expire.
sbs_start off "$QUIVER" --server.session-timeout 86400 --server.authentication false
sbs_start basic "$QUIVER" --server.session-timeout 86400
sbs_start jwt "$QUIVER" --server.session-timeout 86400
sbs_wait
HEADER[basic]="Authorization: $BASIC"
jwt=$(curl -sf -X POST "${URL[jwt]}/_open/auth" -d '{"username":"root","password":""}' \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["jwt"])') \
  || { echo "POST /_open/auth failed on the jwt server" >&2; exit 1; }
HEADER[jwt]="Authorization: bearer $jwt"
# The off server must really run without authentication: a request without credentials works.
curl -sf "${URL[off]}/_api/version" >/dev/null \
  || { echo "the off server refuses requests without credentials" >&2; exit 1; }
sbs_prepare
sbs_measure 95
