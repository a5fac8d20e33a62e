//! Where one cold `qflow check FILE` spends its time, phase by phase.
//!
//! Each measured run is a fresh process (this binary started again by
//! itself), so every phase pays what the command pays: a cold heap, pages
//! faulted in for the first time, the file read from the page cache. The
//! phases are the command's own steps, in its order: reading the file
//! (`file::read`, two threads on a large file),
//! finding the configuration, the UTF-8 check, the model (`read_source`),
//! the rules (with the sort `analyze` does), the line index (up to the
//! furthest offset the reports need, as `qflow check` builds it), the JSON
//! of each diagnostic, and freeing what is left (which `qflow check` skips for
//! the last file: the figure says what that saves).
//!
//! Run: `cargo bench -p qflow-engine --bench phases -- FILE [RUNS]` (10 runs
//! by default; FILE with its configuration beside it, as `qflow check`
//! finds it). It prints each phase's best and median over the runs. Under
//! `cargo test --all-targets` (no `--bench`) it is a smoke run: one child
//! on a generated 100-task model.

// The generator is API of the model crate; here a private copy.
#[allow(unreachable_pub)]
#[path = "../../model/src/testgen.rs"]
#[allow(dead_code)]
mod testgen;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use qflow_engine::config::Config;

/// The phases, in the order one run takes them.
const PHASES: [&str; 8] = [
    "read",
    "config",
    "utf8",
    "model",
    "rules",
    "lineindex",
    "json",
    "drop",
];

/// The child's environment variable: the file to check once.
const CHILD: &str = "QFLOW_PHASES_FILE";

fn main() {
    if let Some(file) = std::env::var_os(CHILD) {
        one_run(Path::new(&file));
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let benching = args.iter().any(|a| a == "--bench");
    let rest: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let smoke;
    let (file, runs) = match rest.as_slice() {
        [file, runs, ..] => (Path::new(file.as_str()), runs.parse().unwrap_or(10)),
        [file] => (Path::new(file.as_str()), 10),
        [] if benching => {
            eprintln!(
                "usage: cargo bench -p qflow-engine --bench phases -- FILE [RUNS] (nothing run)"
            );
            return;
        }
        // `cargo test --all-targets` runs benches without `--bench`: smoke.
        [] => {
            smoke = tempfile::tempdir().expect("a temporary directory");
            let file = smoke.path().join("smoke.bpmn");
            std::fs::write(&file, testgen::generate(100)).expect("the smoke model is written");
            return report(&file, 1);
        }
    };
    report(file, runs);
}

/// Run `runs` children on `file` and print each phase's best and median.
fn report(file: &Path, runs: usize) {
    let me = std::env::current_exe().expect("this bench's own path");
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); PHASES.len() + 1];
    let mut diagnostics = String::new();
    for _ in 0..runs.max(1) {
        let out = Command::new(&me)
            .env(CHILD, file)
            .output()
            .expect("the bench starts itself");
        assert!(
            out.status.success(),
            "a child run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = String::from_utf8_lossy(&out.stdout);
        let mut fields = line.split_whitespace();
        for s in samples.iter_mut() {
            let ms: f64 = fields
                .next()
                .and_then(|f| f.parse().ok())
                .expect("a child prints one figure per phase");
            s.push(ms);
        }
        diagnostics = fields.collect::<Vec<_>>().join(" ");
    }
    println!(
        "{} ({} bytes, {diagnostics} diagnostics), {} cold runs: best / median ms",
        file.display(),
        std::fs::metadata(file).map_or(0, |m| m.len()),
        runs.max(1)
    );
    for (name, s) in PHASES.iter().chain(&["total"]).zip(&mut samples) {
        s.sort_by(f64::total_cmp);
        println!("  {name:<10} {:>7.2} {:>7.2}", s[0], s[s.len() / 2]);
    }
}

/// One cold run, as `qflow check FILE --format json` takes it; prints one
/// figure per phase (ms), the total, and the number of diagnostics.
fn one_run(file: &Path) {
    let start = Instant::now();
    let mut marks = Vec::with_capacity(PHASES.len());
    let mut mark = |at: &mut Instant| {
        let now = Instant::now();
        marks.push((now - *at).as_secs_f64() * 1e3);
        *at = now;
    };
    let mut at = start;
    let bytes = qflow_engine::file::read(file).expect("the model is readable");
    mark(&mut at);
    let config = Config::for_model(file);
    mark(&mut at);
    let text = qflow_engine::xml::decode(&bytes).expect("the model is UTF-8");
    mark(&mut at);
    let read = qflow_engine::reader::read_source(text, qflow_engine::loader::DRAWING_LEAVES)
        .expect("the model is well-formed")
        .expect("the model is BPMN");
    mark(&mut at);
    let mut diagnostics = qflow_engine::rules::check_with(&read, text, &config.settings);
    diagnostics.sort_by_key(|d| (d.severity, d.primary.span.start(), d.code));
    mark(&mut at);
    let index = qflow_engine::span::LineIndex::up_to(
        text,
        qflow_engine::diagnostic::furthest(&diagnostics),
    );
    mark(&mut at);
    let shown = file.display().to_string();
    let json: Vec<_> = diagnostics
        .iter()
        .map(|d| d.to_json(&shown, text, &index))
        .collect();
    let json = serde_json::to_string_pretty(&json).expect("diagnostics serialize");
    mark(&mut at);
    let count = diagnostics.len();
    drop((read, diagnostics, index, json, config, bytes));
    mark(&mut at);
    let total = (Instant::now() - start).as_secs_f64() * 1e3;
    let figures: Vec<String> = marks.iter().map(|m| format!("{m:.3}")).collect();
    println!("{} {total:.3} {count}", figures.join(" "));
}
