//! Reconciliation of a task without a `<q:retry>`: an operator's `retry`
//! runs the task again, numbered truthfully, and the operator sees how many
//! times it has run, with no counter written to the snapshot.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod support;
use support::stores::{open, Fresh};

const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="ship" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="book"/>
    <bpmn:serviceTask id="book" q:task="carrier.book"/>
    <bpmn:sequenceFlow id="f2" sourceRef="book" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

const SCENARIO: &str = r#"{"tasks": {"carrier.book": [
  {"fail": {"code": "LOST_REPLY", "class": "unknown-outcome"}},
  {"fail": {"code": "LOST_REPLY", "class": "unknown-outcome"}},
  {"ok": {"booking": "B-1"}}
]}}"#;

fn run(dir: &Path, db: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "run",
        "ship.bpmn",
        "--db",
        db,
        "--scenario",
        "ship.json",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out: Output = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir)
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

crate::on_both_stores!(
    reconciling_a_task_without_a_policy_as_retry_numbers_its_attempts_truthfully
);

fn reconciling_a_task_without_a_policy_as_retry_numbers_its_attempts_truthfully(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    std::fs::write(dir.join("ship.bpmn"), MODEL).unwrap();
    std::fs::write(dir.join("ship.json"), SCENARIO).unwrap();
    let first = run(dir, &db, &[]);
    let end = first.last().unwrap();
    assert_eq!(
        (end["for"].as_str(), end["attempts"].as_u64()),
        (Some("reconciliation"), Some(1)),
        "{end}"
    );
    let second = run(dir, &db, &["--resolve", "book=retry"]);
    let end = second.last().unwrap();
    assert_eq!(end["attempts"], 2, "the operator sees it ran twice: {end}");
    let third = run(dir, &db, &["--resolve", "book=retry"]);
    assert_eq!(third.last().unwrap()["status"], "completed");
    let all: Vec<&Value> = first.iter().chain(&second).chain(&third).collect();
    let attempts: Vec<u64> = all
        .iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| l["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2, 3], "never every attempt numbered 1");
    let reconciled: Vec<u64> = all
        .iter()
        .filter(|l| l["kind"] == "reconciled")
        .map(|l| l["attempts"].as_u64().unwrap())
        .collect();
    assert_eq!(reconciled, [1, 2]);
    // No counter family in a process without <q:retry>.
    let store = open(&db);
    for t in store.transitions("ship-1").unwrap() {
        let text = String::from_utf8(t.snapshot).unwrap();
        assert!(!text.contains("attempts."), "{text}");
    }
}
