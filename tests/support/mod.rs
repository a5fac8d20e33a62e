//! Helpers the end-to-end tests that drive the `qflow` binary in a
//! temporary directory share.

// Each test crate compiles this module and uses only some of it.
#![allow(dead_code)]

pub mod cluster;
pub mod serve;
pub mod stores;

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

/// Runs the built `qflow` binary from the package root, as the samples'
/// relative paths expect: its exit code, stdout and stderr.
pub fn qflow_here(args: &[&str]) -> (i32, String, String) {
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
