//! Helpers the end-to-end tests that drive the `qflow` binary in a
//! temporary directory share.

// Each test crate compiles this module and uses only some of it.
#![allow(dead_code)]

pub(crate) mod cluster;
pub(crate) mod golden;
pub(crate) mod serve;
pub(crate) mod stores;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Whether this slow test is left out of this run: the tests that start,
/// race and kill `qflow` processes by the hundred (random-instant crashes,
/// four-replica races, the soak) take most of the suite's minutes and read
/// nothing a fresh clone lacks, so `scripts/test.sh --quick` sets
/// `QFLOW_SKIP_SLOW=1` and they say so and pass; the full
/// `scripts/test.sh` (CI's main run) and `scripts/test.sh --slow` run them.
pub(crate) fn slow_test_left_out(what: &str) -> bool {
    let left_out = std::env::var_os("QFLOW_SKIP_SLOW").is_some_and(|v| v == "1");
    if left_out {
        eprintln!("skipping {what}: a slow test, left out of the quick suite (QFLOW_SKIP_SLOW=1); `scripts/test.sh --slow` runs it");
    }
    left_out
}

/// Runs the built `qflow` binary in `dir`, as a user would from there.
pub(crate) fn qflow(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("qflow runs")
}

/// The JSON lines a run printed on stdout.
pub(crate) fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Runs the built `qflow` binary from the package root, as the samples'
/// relative paths expect: its exit code, stdout and stderr.
pub(crate) fn qflow_here(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .args(args)
        .output()
        .expect("qflow runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
