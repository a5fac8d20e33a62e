#!/usr/bin/env bash
# Runs every test of the studio: the Rust workspace (unit, golden, end-to-end)
# and, when Node.js is present, the VS Code extension: its tests (against the
# built `qflow lsp`), then its packages, each opened and checked.
#
# The linux-x64 platform package needs a release build of qflow (about 7 min
# of CPU on 2 cores). It is built when QFLOW_PLATFORM_PACKAGE=1 (CI sets it:
# see .ci/run), and skipped with a message otherwise, so that a local run
# costs only the debug build.
set -euo pipefail
cd "$(dirname "$0")/.."

timed() {
  local start=$SECONDS
  "$@"
  echo "scripts/test.sh: \`$*\` took $((SECONDS - start)) s" >&2
}

timed cargo test --workspace --locked --all-targets
# --all-targets leaves out documentation tests: the engine's API examples run here.
timed cargo test -p qflow-engine --locked --doc

[ -f vscode-extension/package.json ] || exit 0
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: skipping the VS Code extension's tests and packages (they need Node.js 20 with npm)" >&2
  exit 0
fi
# The server the extension's tests start is target/debug/qflow, which the
# `cargo test` above has just built (the end-to-end tests run it too); a
# separate `cargo build` would rebuild crates with other features for nothing.
if [ ! -x target/debug/qflow ]; then
  timed cargo build --locked --bin qflow
fi
cd vscode-extension
timed npm ci --no-audit --no-fund
timed npm test
timed npm run package
if [ "${QFLOW_PLATFORM_PACKAGE:-0}" = 1 ]; then
  (cd .. && timed cargo build --release --locked --bin qflow)
  timed npm run package:linux-x64
else
  echo "scripts/test.sh: skipping the linux-x64 platform package (set QFLOW_PLATFORM_PACKAGE=1 to build it with a release qflow)" >&2
fi
