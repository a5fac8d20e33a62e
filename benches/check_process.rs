//! `qflow check` as a user runs it — a whole process, from spawn to exit —
//! on the generated 20,000-task model with every modelling rule on (a
//! `.bpmnlintrc` extending `bpmnlint:recommended` beside the model, so the
//! diagram rules run too), beside bpmnlint on the same file and the same
//! configuration when it is installed.
//!
//! Each side runs alternately (both see the same machine load); the report
//! gives the median and best wall time, and, from `/usr/bin/time` when it
//! exists, CPU time (user + system) and peak resident memory. The targets:
//! at least 50× bpmnlint as whole processes, under 100 MB peak.
//!
//! Run: `cargo bench --bench check_process` (20,000 tasks, 15 rounds;
//! `-- TASKS ROUNDS` to change). bpmnlint is taken from `QFLOW_BPMNLINT`
//! (a path to its CLI) or from `PATH`; without it only qflow is measured.
//! Under `cargo test --all-targets` it runs one round on a small model,
//! proving the measurement still works.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const QFLOW: &str = env!("CARGO_BIN_EXE_qflow");

/// Wall time of one run, in ms.
fn wall(cmd: &mut Command) -> f64 {
    let start = Instant::now();
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the command runs");
    start.elapsed().as_secs_f64() * 1e3
}

/// CPU seconds (user + system) and peak RSS in MB, by `/usr/bin/time`.
fn cpu_and_peak(program: &Path, args: &[&Path], dir: &Path) -> Option<(f64, f64)> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return None;
    }
    let out = dir.join("time.txt");
    Command::new(time)
        .arg("-f")
        .arg("%U %S %M")
        .arg("-o")
        .arg(&out)
        .arg(program)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let text = std::fs::read_to_string(&out).ok()?;
    let last = text.lines().last()?;
    let v: Vec<f64> = last
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    (v.len() == 3).then(|| (v[0] + v[1], v[2] / 1024.0))
}

fn stats(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0])
}

fn bpmnlint() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("QFLOW_BPMNLINT") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("bpmnlint"))
        .find(|p| p.is_file())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let benching = args.iter().any(|a| a == "--bench");
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let (tasks, rounds) = if benching {
        (
            numbers.first().copied().unwrap_or(20_000),
            numbers.get(1).copied().unwrap_or(15),
        )
    } else {
        (50, 1)
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join(format!("model-{tasks}.bpmn"));
    let text = qflow_engine::testgen::generate(tasks);
    std::fs::write(&file, &text).expect("the model is written");
    std::fs::write(
        dir.path().join(".bpmnlintrc"),
        r#"{ "extends": "bpmnlint:recommended" }"#,
    )
    .expect("the configuration is written");
    let qflow = Path::new(QFLOW);
    let check_args = [Path::new("check"), file.as_path()];
    let status = Command::new(qflow)
        .args(check_args)
        .current_dir(dir.path())
        .stderr(Stdio::null())
        .status()
        .expect("qflow check runs");
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "qflow check reads the generated model and its configuration"
    );
    let lint = if benching { bpmnlint() } else { None };

    let (mut q, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        q.push(wall(
            Command::new(qflow).args(check_args).current_dir(dir.path()),
        ));
        if let Some(l) = &lint {
            b.push(wall(Command::new(l).arg(&file).current_dir(dir.path())));
        }
    }
    let (q_med, q_best) = stats(&mut q);
    let q_res = cpu_and_peak(qflow, &check_args, dir.path());
    println!(
        "{tasks} tasks ({} bytes), {rounds} rounds, bpmnlint:recommended on both sides",
        text.len()
    );
    println!(
        "  qflow check (whole process): median {q_med:.1} ms, best {q_best:.1} ms{}",
        q_res.map_or(String::new(), |(cpu, mb)| format!(
            "; one run: {:.0} ms CPU, peak RSS {mb:.1} MB",
            cpu * 1e3
        ))
    );
    if let Some(l) = &lint {
        let (b_med, b_best) = stats(&mut b);
        let b_res = cpu_and_peak(l, &[file.as_path()], dir.path());
        println!(
            "  bpmnlint ({}): median {b_med:.1} ms, best {b_best:.1} ms{}",
            l.display(),
            b_res.map_or(String::new(), |(cpu, mb)| format!(
                "; one run: {:.0} ms CPU, peak RSS {mb:.1} MB",
                cpu * 1e3
            ))
        );
        println!(
            "  qflow is {:.1}x faster (medians), {:.1}x (bests){}",
            b_med / q_med,
            b_best / q_best,
            match (q_res, b_res) {
                (Some((qc, _)), Some((bc, _))) if qc > 0.0 => format!(", {:.1}x in CPU", bc / qc),
                _ => String::new(),
            }
        );
    } else if benching {
        println!("  bpmnlint: not found (set QFLOW_BPMNLINT or put it on PATH)");
    }
}
