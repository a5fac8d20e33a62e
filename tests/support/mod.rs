//! Helpers the end-to-end tests that drive the `qflow` binary in a
//! temporary directory share.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs the built `qflow` binary in `dir`, as a user would from there.
pub fn qflow(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("qflow runs")
}

/// The JSON lines a run printed on stdout.
pub fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
