#!/usr/bin/env bash
# Runs every test of the studio: the Rust workspace (unit, golden, end-to-end)
# and, when Node.js is present, the VS Code extension's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked --all-targets
if [ -f vscode-extension/package.json ]; then
  if command -v npm >/dev/null 2>&1; then
    (cd vscode-extension && npm ci --no-audit --no-fund && npm test)
  else
    echo "npm not found: skipping the VS Code extension's tests" >&2
  fi
fi
