//! The DBG-08 shapes (docs/retry-policy.md) as a user runs them:
//! `qflow run samples/dbg08-<shape>.bpmn`, checked line by line.

use std::path::PathBuf;
use std::process::{Command, Output};

mod support;

use serde_json::Value;
use support::stores::{open, Fresh};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn qflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("qflow runs")
}

fn lines(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

fn run_json(shape: &str, extra: &[&str]) -> Vec<Value> {
    let model = format!("samples/dbg08-{shape}.bpmn");
    let mut args = vec!["run", model.as_str(), "--format", "json"];
    args.extend_from_slice(extra);
    lines(&qflow(&args))
}

fn attempts(ls: &[Value]) -> Vec<(u64, u64)> {
    ls.iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| (l["attempt"].as_u64().unwrap(), l["at_s"].as_u64().unwrap()))
        .collect()
}

#[test]
fn long_outage_runs_six_attempts_to_exhaustion_without_setup() {
    // How fast it runs is measured by `cargo bench -p qflow-engine --bench run`
    // (docs/performance.md), never asserted here: tests do not time.
    let ls = run_json("long-outage", &[]);
    assert_eq!(
        attempts(&ls),
        vec![(1, 0), (2, 60), (3, 360), (4, 1860), (5, 9360), (6, 46860)]
    );
    let last = ls.last().unwrap();
    assert_eq!(last["status"], "failed");
    assert_eq!(last["code"], "PROVIDER_DOWN");
    assert_eq!(last["reason"], "exhausted");
    assert_eq!(last["attempts"], 6);
    // Every line names its time, kind and node; the final state is last.
    for l in &ls[..ls.len() - 1] {
        assert!(
            l.get("at_s").is_some() && l.get("kind").is_some() && l.get("node").is_some(),
            "{l}"
        );
    }
}

#[test]
fn human_output_shows_each_attempt_and_the_next_eligible_time() {
    let out = qflow(&["run", "samples/dbg08-long-outage.bpmn"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("attempt 2 of payments.charge: failed PROVIDER_DOWN (transient): 503 from the provider; parked, attempt 3 eligible at +6m (after 5 min)"),
        "{text}"
    );
    assert!(text.lines().last().unwrap().starts_with("FAILED"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("using scenario samples/scenarios/dbg08-long-outage.json"));
}

#[test]
fn malformed_input_is_one_attempt_then_terminal() {
    let ls = run_json("malformed-input", &[]);
    assert_eq!(attempts(&ls), vec![(1, 0)]);
    let last = ls.last().unwrap();
    assert_eq!(
        (
            last["status"].as_str(),
            last["reason"].as_str(),
            last["attempts"].as_u64()
        ),
        (Some("failed"), Some("non-retryable"), Some(1))
    );
}

#[test]
fn transient_outage_backs_off_with_increasing_delays_then_succeeds() {
    let ls = run_json("transient-outage", &[]);
    assert_eq!(attempts(&ls), vec![(1, 0), (2, 60), (3, 360), (4, 1860)]);
    let delays: Vec<u64> = ls.iter().filter_map(|l| l["delay_s"].as_u64()).collect();
    assert_eq!(delays, vec![60, 300, 1500]);
    assert_eq!(ls.last().unwrap()["status"], "completed");
}

crate::on_both_stores!(
    unknown_outcome_waits_for_reconciliation_and_never_retries_blindly,
    reconciliation_as_retry_runs_one_more_attempt_and_as_failed_takes_the_fatal_path,
    a_terminal_instance_ignores_a_later_delivery,
    a_run_stopped_with_until_resumes_from_its_database_without_a_second_instance,
    a_failed_instance_is_repaired_by_migration_and_its_burned_budget_travels,
);

fn unknown_outcome_waits_for_reconciliation_and_never_retries_blindly(fresh: &Fresh) {
    let db = fresh.db();
    let ls = run_json("unknown-outcome", &["--db", &db]);
    assert_eq!(attempts(&ls), vec![(1, 0)]);
    let last = ls.last().unwrap();
    assert_eq!(
        (
            last["status"].as_str(),
            last["for"].as_str(),
            last["node"].as_str()
        ),
        (Some("waiting"), Some("reconciliation"), Some("charge"))
    );
    // Running again resumes the same instance: still no second attempt.
    let out = qflow(&[
        "run",
        "samples/dbg08-unknown-outcome.bpmn",
        "--db",
        &db,
        "--format",
        "json",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("resuming unfinished instance dbg08-1"));
    let again = lines(&out);
    assert_eq!(attempts(&again), vec![]);
    // The operator says the charge went through: completed, no attempt.
    let done = run_json(
        "unknown-outcome",
        &["--db", &db, "--resolve", "charge=succeeded"],
    );
    assert_eq!(attempts(&done), vec![]);
    assert_eq!(done[0]["kind"], "reconciled");
    assert_eq!(done[0]["as"], "succeeded");
    assert_eq!(done.last().unwrap()["status"], "completed");
    let store = open(&db);
    assert_eq!(store.instances().unwrap().len(), 1);
    assert!(store
        .incidents("dbg08-1")
        .unwrap()
        .iter()
        .all(|i| i.closed_ms.is_some()));
}

fn reconciliation_as_retry_runs_one_more_attempt_and_as_failed_takes_the_fatal_path(fresh: &Fresh) {
    let db = fresh.db();
    run_json("unknown-outcome", &["--db", &db]);
    let retried = run_json(
        "unknown-outcome",
        &["--db", &db, "--resolve", "charge=retry"],
    );
    assert_eq!(attempts(&retried), vec![(2, 0)]);
    assert_eq!(retried.last().unwrap()["status"], "completed");

    let db = fresh.db();
    run_json("unknown-outcome", &["--db", &db]);
    let failed = run_json(
        "unknown-outcome",
        &["--db", &db, "--resolve", "charge=failed"],
    );
    let last = failed.last().unwrap();
    assert_eq!(
        (
            last["status"].as_str(),
            last["reason"].as_str(),
            last["code"].as_str()
        ),
        (
            Some("failed"),
            Some("non-retryable"),
            Some("CONNECTION_RESET_AFTER_SEND")
        )
    );
}

fn a_terminal_instance_ignores_a_later_delivery(fresh: &Fresh) {
    let db = fresh.db();
    let ls = run_json("terminal-delivery", &["--db", &db]);
    let n = ls.len();
    assert_eq!(ls[n - 3]["kind"], "failed");
    assert_eq!(ls[n - 2]["kind"], "ignored");
    assert_eq!(ls[n - 2]["at_s"], 86400);
    assert_eq!(ls[n - 2]["event"], "redeliver");
    assert_eq!(attempts(&ls).len(), 6);
    let store = open(&db);
    let t = store.transitions("dbg08-1").unwrap();
    // Recorded in history, no effect on the snapshot, no timer armed.
    assert_eq!(t[t.len() - 1].snapshot, t[t.len() - 2].snapshot);
    assert_eq!(t[t.len() - 1].status, "failed");
    assert!(store.timers("dbg08-1").unwrap().iter().all(|x| !x.armed));
}

fn a_run_stopped_with_until_resumes_from_its_database_without_a_second_instance(fresh: &Fresh) {
    let db = fresh.db();
    let first = run_json("long-outage", &["--db", &db, "--until", "PT30M"]);
    assert_eq!(attempts(&first), vec![(1, 0), (2, 60), (3, 360)]);
    let last = first.last().unwrap();
    assert_eq!(
        (last["status"].as_str(), last["for"].as_str()),
        (Some("waiting"), Some("retry"))
    );
    assert_eq!(last["due_s"], 1860);
    let rest = run_json("long-outage", &["--db", &db]);
    assert_eq!(attempts(&rest), vec![(4, 1860), (5, 9360), (6, 46860)]);
    assert_eq!(rest.last().unwrap()["reason"], "exhausted");
    let store = open(&db);
    assert_eq!(store.instances().unwrap().len(), 1);
    // Each retry attempt consumed exactly its own timer.
    let h = store.history("dbg08-1").unwrap();
    let timers: Vec<i64> = h
        .iter()
        .filter(|r| r.kind == "attempt")
        .filter_map(|r| r.timer_id)
        .collect();
    assert_eq!(timers.len(), 5);
    let mut uniq = timers.clone();
    uniq.dedup();
    assert_eq!(uniq, timers);
}

#[test]
fn a_bad_scenario_gets_an_error_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("bad.json");
    std::fs::write(
        &s,
        r#"{"tasks":{"payments.charge":[{"fail":{"code":"X","class":"flaky"}}]}}"#,
    )
    .unwrap();
    let out = qflow(&[
        "run",
        "samples/dbg08-long-outage.bpmn",
        "--scenario",
        s.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "field `tasks.\"payments.charge\"[0].fail.class`: `flaky` is not a failure class"
        ),
        "{err}"
    );
}

#[test]
fn a_model_with_load_errors_prints_its_diagnostics_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("dup.bpmn");
    std::fs::write(
        &m,
        r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="a"/><bpmn:endEvent id="a"/></bpmn:process>
</bpmn:definitions>"#,
    )
    .unwrap();
    let out = qflow(&["run", m.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("QF003"), "{err}");
    assert!(err.contains("nothing was run"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn help_documents_reconciliation() {
    let out = qflow(&["run", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--resolve <NODE=AS>"), "{text}");
    assert!(text.contains("succeeded|failed|retry"), "{text}");
}

fn a_failed_instance_is_repaired_by_migration_and_its_burned_budget_travels(fresh: &Fresh) {
    let db = fresh.db();
    run_json("long-outage", &["--db", &db]);
    let model = "samples/dbg08-repaired.bpmn";
    let s = "samples/scenarios/dbg08-long-outage.json";
    let args = [
        "run",
        model,
        "--db",
        &db,
        "--scenario",
        s,
        "--format",
        "json",
    ];
    let repaired = lines(&qflow(
        &[
            &args[..],
            &["--migrate", "dbg08-1", "--map", "charge=chargeCard"],
        ]
        .concat(),
    ));
    assert_eq!(repaired[0]["kind"], "migrated");
    assert_eq!(repaired[0]["node"], "chargeCard");
    // Six burned, eight allowed: two more attempts, then exhausted again.
    assert_eq!(attempts(&repaired), vec![(7, 46860), (8, 84360)]);
    let last = repaired.last().unwrap();
    assert_eq!(
        (last["reason"].as_str(), last["attempts"].as_u64()),
        (Some("exhausted"), Some(8))
    );
    // With the budget reset (and a provider that recovered), attempt 1 succeeds.
    let ok = "samples/scenarios/dbg08-transient-outage.json";
    let args = [
        "run",
        model,
        "--db",
        &db,
        "--scenario",
        ok,
        "--format",
        "json",
    ];
    let again = lines(&qflow(
        &[
            &args[..],
            &[
                "--migrate",
                "dbg08-1",
                "--map",
                "charge=chargeCard",
                "--reset-budget",
            ],
        ]
        .concat(),
    ));
    assert_eq!(attempts(&again), vec![(1, 84360)]);
    assert_eq!(again.last().unwrap()["status"], "completed");
    let store = open(&db);
    assert_eq!(store.instances().unwrap().len(), 1);
}

/// The handler's own words ("503 from the provider", from the scenario)
/// reach every line that shows a failed attempt, and the final state: an
/// operator reading `qflow run` sees why, not only a code.
#[test]
fn every_failed_attempt_carries_the_handlers_message_in_human_and_json_output() {
    let out = qflow(&["run", "samples/dbg08-long-outage.bpmn"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(": failed PROVIDER_DOWN"))
        .collect();
    assert_eq!(failed.len(), 6, "{text}");
    for l in &failed {
        assert!(l.contains("(transient): 503 from the provider"), "{l}");
    }
    assert!(
        text.lines().last().is_some_and(
            |l| l.starts_with("FAILED") && l.ends_with("; last failure: 503 from the provider")
        ),
        "{text}"
    );
    let out = qflow(&["run", "samples/dbg08-long-outage.bpmn", "--format", "json"]);
    let ls = lines(&out);
    let attempts: Vec<&Value> = ls.iter().filter(|l| l["kind"] == "attempt").collect();
    assert_eq!(attempts.len(), 6);
    for a in attempts {
        assert_eq!(a["message"], "503 from the provider", "{a}");
    }
    assert_eq!(ls.last().unwrap()["message"], "503 from the provider");
}
