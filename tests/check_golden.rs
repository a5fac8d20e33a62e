//! `qflow check` end to end: the built binary over every sample, in both
//! formats, compared byte for byte with golden files under
//! `tests/golden/check/`.
//!
//! The output is a contract (people read the reports, CI parses the JSON), so
//! any change to it shows up here as a diff. To accept an intended change,
//! regenerate the golden files and review them in `git diff`:
//!
//! ```sh
//! QFLOW_BLESS=1 cargo test --test check_golden
//! ```

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use qflow_engine::config::{default_severity, Profile};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.bpmn` under `samples/`, as repo-relative paths with `/`, sorted.
fn samples() -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![repo().join("samples")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir)
            .expect("samples/ is readable")
            .flatten()
        {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "bpmn") {
                let rel = p.strip_prefix(repo()).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// Run `qflow check` from the repo root, as a user would, without a terminal.
fn check(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .arg("check")
        .args(args)
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .output()
        .expect("qflow runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
    )
}

fn golden_path(sample: &str, ext: &str) -> PathBuf {
    let name = sample
        .trim_start_matches("samples/")
        .trim_end_matches(".bpmn")
        .replace('/', "__");
    repo()
        .join("tests/golden/check")
        .join(format!("{name}.{ext}"))
}

/// The samples whose reports this test was written for: the broken sample of
/// every code and the four reference models. A sample added elsewhere without
/// a golden file yet is reported on stderr, not failed, so adding a sample
/// never breaks the build before someone blesses it.
fn required(sample: &str) -> bool {
    sample.starts_with("samples/broken/")
        || [
            "samples/dbg08-charge.bpmn",
            "samples/bank-authorize.bpmn",
            "samples/approval-gateway.bpmn",
            "samples/error-boundary.bpmn",
        ]
        .contains(&sample)
}

/// Compare with the golden file, or write it under `QFLOW_BLESS=1`
/// (`support::golden`, as every golden test). Returns a description of the
/// mismatch, if any; a sample not required yet without a file is noted.
fn compare(sample: &str, path: &Path, actual: &str) -> Option<String> {
    if !path.exists() && !support::golden::blessing() && !required(sample) {
        eprintln!(
            "note: {sample} has no golden report yet ({}); run QFLOW_BLESS=1 cargo test --test check_golden",
            path.display()
        );
        return None;
    }
    support::golden::compare(path, actual, true)
}

#[test]
fn every_sample_matches_its_golden_report_and_json() {
    let mut failures = Vec::new();
    for sample in samples() {
        // The findings and the summary are on stdout (as ruff, eslint and
        // bpmnlint print them); stderr holds only errors about the command.
        let (code, stdout, stderr) = check(&[&sample]);
        assert!(
            stderr.is_empty(),
            "{sample}: findings go to stdout: {stderr}"
        );
        let human = format!("exit: {code}\n{stdout}");
        failures.extend(compare(&sample, &golden_path(&sample, "txt"), &human));

        let (jcode, json, _) = check(&["--format", "json", &sample]);
        assert_eq!(code, jcode, "{sample}: both formats agree on the exit code");
        let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert!(parsed.is_array());
        failures.extend(compare(
            &sample,
            &golden_path(&sample, "json"),
            &format!("exit: {jcode}\n{json}"),
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn json_of(sample: &str) -> (i32, Vec<serde_json::Value>) {
    let (code, json, _) = check(&["--format", "json", sample]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    (code, v.as_array().unwrap().clone())
}

#[test]
fn valid_samples_check_with_zero_errors() {
    for sample in samples()
        .iter()
        .filter(|s| !s.starts_with("samples/broken/"))
    {
        let (code, diags) = json_of(sample);
        let errors: Vec<_> = diags.iter().filter(|d| d["severity"] == "error").collect();
        assert!(errors.is_empty(), "{sample}: {errors:#?}");
        assert_eq!(code, 0, "{sample}");
    }
}

#[test]
fn every_code_has_a_broken_sample_that_reports_it() {
    let broken: Vec<String> = samples()
        .into_iter()
        .filter(|s| s.starts_with("samples/broken/"))
        .collect();
    for code in qflow_engine::Code::ALL {
        let prefix = format!("samples/broken/{}-", code.as_str());
        let sample = broken
            .iter()
            .find(|s| s.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no sample named {prefix}<short-name>.bpmn"));
        let (exit, diags) = json_of(sample);
        let hits: Vec<_> = diags
            .iter()
            .filter(|d| d["code"] == code.as_str())
            .collect();
        assert!(
            !hits.is_empty(),
            "{sample} does not report {code}: {diags:#?}"
        );
        // A modelling rule's severity depends on the document: bpmnlint's in a
        // plain one, qflow's defaults in a qflow document.
        let allowed: Vec<&str> = [
            Some(code.severity()),
            default_severity(code, Profile::Qflow { executable: true }),
            default_severity(code, Profile::Qflow { executable: false }),
        ]
        .into_iter()
        .flatten()
        .filter(|s| code.is_modelling() || *s == code.severity())
        .map(|s| s.as_str())
        .collect();
        for d in &hits {
            assert!(
                allowed.iter().any(|s| d["severity"] == *s),
                "{sample}: {code} at {} ({allowed:?})",
                d["severity"]
            );
        }
        let has_error = diags.iter().any(|d| d["severity"] == "error");
        assert_eq!(
            exit,
            i32::from(has_error),
            "{sample}: exit 1 exactly when errors"
        );
    }
}

#[test]
fn json_fields_are_the_documented_contract() {
    let (_, diags) = json_of("samples/broken/QF022-retry-beside-routed-timer.bpmn");
    let d = diags.iter().find(|d| d["code"] == "QF022").unwrap();
    for field in [
        "code", "severity", "message", "path", "line", "column", "offset", "length", "related",
    ] {
        assert!(!d[field].is_null(), "missing {field}: {d:#}");
    }
    let source =
        std::fs::read_to_string(repo().join("samples/broken/QF022-retry-beside-routed-timer.bpmn"))
            .unwrap();
    let at = |v: &serde_json::Value| {
        let off = v["offset"].as_u64().unwrap() as usize;
        let len = v["length"].as_u64().unwrap() as usize;
        source[off..off + len].to_string()
    };
    assert_eq!(at(d), "q:retry");
    let r = &d["related"][0];
    assert_eq!(at(r), "bpmn:boundaryEvent");
    for field in ["message", "path", "line", "column", "offset", "length"] {
        assert!(!r[field].is_null(), "related lacks {field}");
    }
    // Line and column are 1-based, the column in characters.
    let off = d["offset"].as_u64().unwrap() as usize;
    let line = source[..off].matches('\n').count() + 1;
    let col = source[..off].rsplit('\n').next().unwrap().chars().count() + 1;
    assert_eq!(
        (
            d["line"].as_u64().unwrap() as usize,
            d["column"].as_u64().unwrap() as usize
        ),
        (line, col)
    );
}

#[test]
fn exit_codes() {
    assert_eq!(check(&["samples/dbg08-charge.bpmn"]).0, 0);
    assert_eq!(check(&["samples/broken/QF012-unbounded-retry.bpmn"]).0, 1);
    // Warnings alone do not fail.
    assert_eq!(check(&["samples/broken/QF031-unused-backoff.bpmn"]).0, 0);
    // Unreadable wins over errors; usage errors are 2 too.
    assert_eq!(
        check(&[
            "samples/broken/QF012-unbounded-retry.bpmn",
            "no/such/file.bpmn"
        ])
        .0,
        2
    );
    assert_eq!(check(&[]).0, 2);
}
