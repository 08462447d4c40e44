#!/usr/bin/env bash
# Engine-level storage benchmark (release build). Arguments go to engine_bench:
#   --quick            small sizes (a minute or less)
#   --docs N           documents for the reopen test (default 1000000)
#   --only journal|sync|reopen
#   --dir PATH         where to put the data (default: $TMPDIR; use the disk you want to measure)
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release -q -p quiver-storage --example engine_bench
exec "$CARGO_TARGET_DIR/release/examples/engine_bench" "$@"
