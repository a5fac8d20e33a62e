//! `qflow check` on the BPMN MIWG reference models: real modellers' files load
//! with no error and exit 0.
//!
//! Read from `<repo>/../shared/corpus/miwg`, never copied; without that folder
//! the tests say so and pass.

use std::path::PathBuf;
use std::process::Command;

fn corpus_files() -> Option<Vec<PathBuf>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/miwg");
    if !dir.is_dir() {
        println!("skipping: ../shared/corpus/miwg not found");
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus folder is readable")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bpmn"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 20,
        "expected the 21 MIWG models in {}, found {}",
        dir.display(),
        files.len()
    );
    Some(files)
}

fn qflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
}

#[test]
fn check_accepts_every_corpus_model() {
    let Some(files) = corpus_files() else { return };
    let out = qflow()
        .arg("check")
        .args(&files)
        .output()
        .expect("qflow runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = format!("{} file(s) checked: 0 error(s)", files.len());
    assert!(stderr.contains(&summary), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn json_lists_no_error_for_any_corpus_model() {
    let Some(files) = corpus_files() else { return };
    let out = qflow()
        .args(["check", "--format", "json"])
        .args(&files)
        .output()
        .expect("qflow runs");
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON array");
    let errors: Vec<&serde_json::Value> = json
        .as_array()
        .expect("an array")
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// C.8.0 repeats `id="VacationRequestProcess"` inside ADONIS vendor content:
/// not a BPMN element, so not a duplicate id.
#[test]
fn vendor_content_reusing_an_id_is_not_qf003() {
    let Some(files) = corpus_files() else { return };
    let c80 = files
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n == "C.8.0.bpmn"))
        .expect("C.8.0.bpmn is in the corpus");
    let text = std::fs::read_to_string(c80).expect("readable");
    assert_eq!(text.matches("id=\"VacationRequestProcess\"").count(), 2);
    let out = qflow()
        .args(["check", "--format", "json"])
        .arg(c80)
        .output()
        .expect("qflow runs");
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("QF003"), "{stdout}");
}
