#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this script).
# Installs what it needs: a Python virtual environment with the pinned driver versions from
# tests/e2e/requirements.txt, and Debian's chromium and chromium-driver for the browser tests
# of the web interface (apt-get, when missing). Rust comes from rustup (cargo on PATH); the Go
# driver tests (tests/go-driver, run by tests/e2e/test_go_driver.py) need `go` on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "format"
cargo fmt --all -- --check

step "lint"
cargo clippy --workspace --all-targets -- -D warnings

step "dependency direction (crates, and modules inside crates)"
python3 scripts/check_deps.py

step "unit, golden and integration tests"
cargo test --workspace

step "build the quiver binary"
cargo build --bin quiver
export QUIVER_BIN="$PWD/target/debug/quiver"

if compgen -G "tests/e2e/test_*.py" > /dev/null; then
  step "python environment (pinned drivers)"
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
  step "browser for the web interface tests (Debian's chromium and chromedriver)"
  if ! command -v chromium > /dev/null || ! command -v chromedriver > /dev/null; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    # The package lists are refreshed only when the install cannot proceed without it.
    if ! $SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver; then
      $SUDO apt-get update -q
      $SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver
    fi
  fi
  step "end-to-end tests against the real binary"
  .venv/bin/python -m pytest tests/e2e -q -p no:cacheprovider
fi
