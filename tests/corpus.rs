//! `qflow check` on the BPMN MIWG reference models: real modellers' files load
//! with no loader error (QF001–QF004, or any other qflow code), and their
//! modelling findings (bpmnlint's rules, at bpmnlint's severities since the
//! files are plain BPMN) match the reviewed golden
//! `tests/golden/corpus/miwg.txt` (`QFLOW_BLESS=1` rewrites it).
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
fn check_reports_no_loader_error_for_any_corpus_model() {
    let Some(files) = corpus_files() else { return };
    let out = qflow()
        .arg("check")
        .args(&files)
        .env("NO_COLOR", "1")
        .output()
        .expect("qflow runs");
    // The report is on stdout; stderr has nothing to say.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(&format!("{} files checked", files.len())),
        "{report}"
    );
    for code in ["QF001", "QF002", "QF003", "QF004"] {
        assert!(!report.contains(&format!("{code} (")), "{code}: {report}");
    }
    // The folder itself, as a user would give it: the same models, in the
    // same order, so the same report.
    let folder = files[0].parent().unwrap();
    let by_folder = qflow()
        .arg("check")
        .arg(folder)
        .env("NO_COLOR", "1")
        .output()
        .expect("qflow runs");
    assert_eq!(
        String::from_utf8_lossy(&by_folder.stdout),
        report,
        "checking the folder is checking its .bpmn files"
    );
    assert_eq!(by_folder.status.code(), out.status.code());
}

/// Every finding on the corpus, one line each, against the reviewed golden.
#[test]
fn corpus_findings_match_the_reviewed_golden() {
    let Some(files) = corpus_files() else { return };
    let out = qflow()
        .args(["check", "--format", "json"])
        .args(&files)
        .output()
        .expect("qflow runs");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON array");
    let mut lines = String::new();
    for d in json.as_array().expect("an array") {
        let code = d["code"].as_str().unwrap();
        assert!(
            code >= "QF100" || d["severity"] != "error",
            "a loader error on a corpus model: {d:#}"
        );
        let file = std::path::Path::new(d["path"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        lines.push_str(&format!(
            "{file}:{}:{} {code} {} {} {}: {}\n",
            d["line"],
            d["column"],
            d["rule"].as_str().unwrap_or("-"),
            d["severity"].as_str().unwrap(),
            d["element"].as_str().unwrap_or("-"),
            d["message"].as_str().unwrap(),
        ));
    }
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/corpus/miwg.txt");
    if std::env::var_os("QFLOW_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &lines).unwrap();
        return;
    }
    let expected =
        std::fs::read_to_string(&golden).expect("the golden exists (QFLOW_BLESS=1 writes it)");
    if expected != lines {
        let first = expected.lines().zip(lines.lines()).find(|(a, b)| a != b);
        panic!(
            "corpus findings differ from {} (intended? QFLOW_BLESS=1 cargo test --test corpus, then review git diff): {first:?}",
            golden.display()
        );
    }
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("QF003"), "{stdout}");
}
