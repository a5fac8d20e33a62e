#!/usr/bin/env bash
# Runs every test of the studio: the Rust workspace (unit, golden, end-to-end)
# and, when Node.js is present, the VS Code extension: its tests (against the
# built `qflow lsp`), then its packages, each opened and checked.
#
# `--quick` runs the Rust workspace's tests only (unit, golden, end-to-end,
# documentation examples), not the extension's, and leaves out the slow
# tests that start, race and kill qflow processes by the hundred (they say
# so as they pass). `--slow` runs those slow tests alone. With neither, all
# of it runs: what CI's main run does.
#
# The linux-x64 platform package carries a `dist` build of qflow (fat LTO,
# one codegen unit: Cargo.toml's [profile.dist]). It is built when
# QFLOW_PLATFORM_PACKAGE=1 (CI sets it: see .ci/run), and skipped with a
# message otherwise, so that a local run costs only the debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
slow=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --slow) slow=1 ;;
    *) echo "scripts/test.sh: unknown argument $arg (the options are --quick: the Rust workspace's tests without the slow ones; --slow: the slow ones alone)" >&2; exit 2 ;;
  esac
done
if [ "$quick" = 1 ] && [ "$slow" = 1 ]; then
  echo "scripts/test.sh: --quick leaves the slow tests out and --slow runs only them: give one of the two" >&2
  exit 2
fi

timed() {
  local start=$SECONDS
  "$@"
  echo "scripts/test.sh: \`$*\` took $((SECONDS - start)) s" >&2
}

# The slow tests: each starts, races or kills qflow processes by the hundred
# (tests/support's `slow_test_left_out` names them where they start).
slow_targets=(crash crash_migrate crash_contain run_replicas serve_crash soak)
if [ "$slow" = 1 ]; then
  args=()
  for t in "${slow_targets[@]}"; do args+=(--test "$t"); done
  timed cargo test --locked "${args[@]}"
  exit 0
fi
if [ "$quick" = 1 ]; then
  export QFLOW_SKIP_SLOW=1
fi
timed cargo test --workspace --locked --all-targets
# --all-targets leaves out documentation tests: the API examples run here.
# The same packages and profile as the line above, so the features resolve
# alike and no dependency is built a second time: 4 s after the line above,
# nothing compiled (`-p qflow-engine --doc` resolved the engine's features
# alone and rebuilt 42 crates, 190 s).
timed cargo test --workspace --locked --doc

[ "$quick" = 1 ] && exit 0
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
# The web inspector in a real headless Chromium (docs/inspector.md,
# "Browser tests"): Debian's chromium, driven by puppeteer-core from
# tests/browser's lockfile, against target/debug/qflow. Without a browser
# the tests skip with a message; QFLOW_REQUIRE_BROWSER=1 (CI) makes that a
# failure. Screenshots: target/browser-screenshots/*.png.
(cd tests/browser && timed npm ci --no-audit --no-fund && timed npm test)
cd vscode-extension
timed npm ci --no-audit --no-fund
timed npm test
timed npm run package
if [ "${QFLOW_PLATFORM_PACKAGE:-0}" = 1 ]; then
  (cd .. && timed cargo build --profile dist --locked --bin qflow)
  timed npm run package:linux-x64
else
  echo "scripts/test.sh: skipping the linux-x64 platform package (set QFLOW_PLATFORM_PACKAGE=1 to build it with a dist qflow)" >&2
fi
