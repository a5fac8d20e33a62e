//! The golden corpus of `qflow run`: for each sample and scenario, the
//! decision lines (`tests/golden/run/<case>.jsonl`) and the sequence of
//! persisted snapshot bytes (`tests/golden/snapshots/<case>.snap`, one
//! snapshot per line, in transition order). Any byte change fails.
//!
//! After an intended change, re-bless with
//! `QFLOW_BLESS=1 cargo test --test run_golden` and review the diff.

use std::path::{Path, PathBuf};
use std::process::Command;

use qflow_engine::store::{Location, Store};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// (case, model, scenario)
const CASES: &[(&str, &str, Option<&str>)] = &[
    (
        "dbg08-long-outage",
        "dbg08-long-outage",
        Some("dbg08-long-outage"),
    ),
    (
        "dbg08-malformed-input",
        "dbg08-malformed-input",
        Some("dbg08-malformed-input"),
    ),
    (
        "dbg08-transient-outage",
        "dbg08-transient-outage",
        Some("dbg08-transient-outage"),
    ),
    (
        "dbg08-unknown-outcome",
        "dbg08-unknown-outcome",
        Some("dbg08-unknown-outcome"),
    ),
    (
        "dbg08-terminal-delivery",
        "dbg08-terminal-delivery",
        Some("dbg08-terminal-delivery"),
    ),
    ("dbg08-no-scenario", "dbg08-long-outage", None),
    ("run-order-small", "run-order", Some("run-order-small")),
    ("run-order-large", "run-order", Some("run-order-large")),
    (
        "run-order-retry-small",
        "run-order-retry",
        Some("run-order-small"),
    ),
    (
        "run-order-retry-flaky",
        "run-order-retry",
        Some("run-order-retry-flaky"),
    ),
    (
        "run-boundaries-declined",
        "run-boundaries",
        Some("run-boundaries-declined"),
    ),
    (
        "run-boundaries-escalate",
        "run-boundaries",
        Some("run-boundaries-escalate"),
    ),
    (
        "run-boundaries-uncaught",
        "run-boundaries",
        Some("run-boundaries-uncaught"),
    ),
    ("call-answered", "bank-authorize", Some("call-answered")),
    (
        "call-silent-then-answer",
        "bank-authorize",
        Some("call-silent-then-answer"),
    ),
    (
        "call-silent-forever",
        "bank-authorize",
        Some("call-silent-forever"),
    ),
    (
        "call-delivery-poisoned",
        "bank-authorize",
        Some("call-delivery-poisoned"),
    ),
    (
        "call-late-answer",
        "bank-authorize",
        Some("call-late-answer"),
    ),
    (
        "call-late-answer-superseded",
        "bank-authorize",
        Some("call-late-answer-superseded"),
    ),
    (
        "call-bank-strict",
        "call-bank-strict",
        Some("call-bank-strict"),
    ),
    (
        "call-bank-no-policy",
        "call-bank-no-policy",
        Some("call-bank-no-policy"),
    ),
    (
        "call-no-policy-answered",
        "call-bank-no-policy",
        Some("call-answered"),
    ),
    (
        "call-loop-until-approved",
        "call-loop-until-approved",
        Some("call-loop-until-approved"),
    ),
    (
        "call-loop-no-policy",
        "call-loop-no-policy",
        Some("call-loop-no-policy"),
    ),
];

/// Run a case; returns (stdout, snapshot lines).
pub fn run_case(model: &str, scenario: Option<&str>) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    run_case_in(db.to_str().unwrap(), model, scenario)
}

/// Run a case on the store `db` names (a SQLite file or a PostgreSQL URL).
fn run_case_in(db: &str, model: &str, scenario: Option<&str>) -> (String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qflow"));
    cmd.current_dir(repo())
        .arg("run")
        .arg(format!("samples/{model}.bpmn"))
        .arg("--db")
        .arg(db)
        .args(["--format", "json"]);
    match scenario {
        Some(s) => cmd
            .arg("--scenario")
            .arg(format!("samples/scenarios/{s}.json")),
        None => cmd.arg("--no-scenario"),
    };
    let out = cmd.output().expect("qflow runs");
    assert!(
        out.status.success(),
        "qflow run {model}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::connect(&Location::parse(db).unwrap()).unwrap();
    let instances = store.instances().unwrap();
    assert_eq!(instances.len(), 1, "one instance per run");
    let mut snaps = String::new();
    for t in store.transitions(&instances[0].id).unwrap() {
        snaps.push_str(std::str::from_utf8(&t.snapshot).expect("snapshots are UTF-8 JSON"));
        snaps.push('\n');
    }
    (String::from_utf8(out.stdout).unwrap(), snaps)
}

fn check(path: &Path, actual: &str, failures: &mut Vec<String>) {
    if std::env::var_os("QFLOW_BLESS").is_some() {
        std::fs::write(path, actual).unwrap();
        return;
    }
    match std::fs::read_to_string(path) {
        Ok(expected) if expected == actual => {}
        Ok(expected) => failures.push(format!(
            "{} changed (QFLOW_BLESS=1 to accept)\n--- expected\n{expected}--- actual\n{actual}",
            path.display()
        )),
        Err(_) => failures.push(format!(
            "{} is missing (QFLOW_BLESS=1 to write it)\n{actual}",
            path.display()
        )),
    }
}

#[test]
fn decisions_and_snapshot_bytes_match_the_golden_corpus() {
    let mut failures = Vec::new();
    for (case, model, scenario) in CASES {
        let (lines, snaps) = run_case(model, *scenario);
        check(
            &repo().join(format!("tests/golden/run/{case}.jsonl")),
            &lines,
            &mut failures,
        );
        check(
            &repo().join(format!("tests/golden/snapshots/{case}.snap")),
            &snaps,
            &mut failures,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The same corpus on PostgreSQL: every decision line and every persisted
/// snapshot byte equal SQLite's goldens (never blessed from here: the
/// stores must agree, and SQLite's run is the reference).
#[test]
fn decisions_and_snapshot_bytes_match_the_golden_corpus_on_postgres() {
    let Some(server) = qflow_engine::store::pg::test_server("the golden corpus") else {
        return;
    };
    let mut failures = Vec::new();
    for (n, (case, model, scenario)) in CASES.iter().enumerate() {
        let name = format!("qflow_golden_{n}_{}", std::process::id());
        let db = qflow_engine::store::pg::scratch_database(&server, &name).unwrap();
        let (lines, snaps) = run_case_in(&db, model, *scenario);
        for (kind, actual) in [("run", &lines), ("snapshots", &snaps)] {
            let ext = if kind == "run" { "jsonl" } else { "snap" };
            let path = repo().join(format!("tests/golden/{kind}/{case}.{ext}"));
            let expected = std::fs::read_to_string(&path).unwrap_or_default();
            if &expected != actual {
                failures.push(format!(
                    "{case} on PostgreSQL differs from {}\n--- SQLite (golden)\n{expected}--- PostgreSQL\n{actual}",
                    path.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_retry_policy_that_never_fires_writes_the_same_bytes_as_no_policy() {
    let (_, plain) = run_case("run-order", Some("run-order-small"));
    let (_, with_retry) = run_case("run-order-retry", Some("run-order-small"));
    assert_eq!(plain, with_retry);
    assert!(!plain.contains("attempts."), "{plain}");
    // And the corpus file for the process without <q:retry> is that same text.
    let golden =
        std::fs::read_to_string(repo().join("tests/golden/snapshots/run-order-small.snap"));
    if std::env::var_os("QFLOW_BLESS").is_none() {
        assert_eq!(golden.unwrap(), plain);
    }
}

#[test]
fn a_call_that_never_backs_off_writes_the_same_bytes_with_or_without_a_policy() {
    let (_, with_policy) = run_case("bank-authorize", Some("call-answered"));
    let (_, without) = run_case("call-bank-no-policy", Some("call-answered"));
    assert_eq!(with_policy, without);
    assert!(!with_policy.contains("backoff.") && !with_policy.contains("attempts."));
}

#[test]
fn a_call_in_a_loop_without_a_policy_writes_no_new_snapshot_key_family() {
    let (lines, without) = run_case("call-loop-no-policy", Some("call-loop-no-policy"));
    // Two rounds, two keys never sent before.
    assert!(
        lines.contains("/authorize/1\"") && lines.contains("/authorize/2\""),
        "{lines}"
    );
    for snap in without.lines() {
        let v: serde_json::Value = serde_json::from_str(snap).unwrap();
        for k in v.as_object().unwrap().keys() {
            assert!(
                k == "frontier" || k.starts_with("var."),
                "a process without <q:retry> wrote `{k}`: {snap}"
            );
        }
    }
    // The same loop with a policy that never fires writes the same bytes.
    let (_, with_policy) = run_case("call-loop-until-approved", Some("call-loop-no-policy"));
    assert_eq!(without, with_policy);
}

#[test]
fn every_json_line_follows_the_design_contract() {
    for (case, _, _) in CASES {
        let path = repo().join(format!("tests/golden/run/{case}.jsonl"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue; // reported missing by the corpus test
        };
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{case}: {l}: {e}")))
            .collect();
        let (last, decisions) = lines.split_last().expect("at least the final state");
        assert!(
            ["completed", "failed", "waiting"].contains(&last["status"].as_str().unwrap_or("")),
            "{case}: {last}"
        );
        if last["status"] == "failed" {
            for k in ["code", "reason", "attempts"] {
                assert!(last.get(k).is_some(), "{case}: final state without {k}");
            }
        }
        for l in decisions {
            for k in ["at_s", "kind", "node"] {
                assert!(l.get(k).is_some(), "{case}: line without {k}: {l}");
            }
            if l["kind"] == "attempt" {
                assert!(l["attempt"].as_u64().is_some_and(|n| n >= 1), "{case}: {l}");
                if l.get("channel").is_some() {
                    assert!(l["idempotencyKey"].is_string(), "{case}: {l}");
                }
            }
        }
    }
}
