//! `qflow check --watch` through the binary: a report, then a fresh one
//! each time the model changes, until interrupted.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Wait (at most 60 s) until `out` holds `n` occurrences of `what`.
fn wait_for(out: &Mutex<String>, what: &str, n: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = out.lock().unwrap().clone();
        if text.matches(what).count() >= n {
            return text;
        }
        assert!(Instant::now() < deadline, "no {n}× `{what}` in:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn check_watch_reports_again_when_the_model_changes() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("order.bpmn");
    std::fs::copy(repo().join("samples/run-order.bpmn"), &model).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .args(["check", "--watch"])
        .arg(&model)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = Arc::new(Mutex::new(String::new()));
    let sink = out.clone();
    let mut stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let first = wait_for(&out, "1 file checked: 0 errors", 1);
    assert!(!first.contains("QF005"), "{first}");
    // The model loses its start event: the next report says so.
    std::fs::copy(
        repo().join("samples/broken/QF005-no-start-event.bpmn"),
        &model,
    )
    .unwrap();
    let second = wait_for(&out, "1 file checked: 1 error", 1);
    assert!(second.contains("QF005"), "{second}");
    // Still watching: it never exits on its own.
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("[watching 1 file for changes; Ctrl-C stops]"),
        "{err}"
    );
}
