//! Verified repair through the binary, on both stores: `migrate` and
//! `resume` say what the next decision will be (the runtime's own decision
//! on the repaired facts, the failure that failed the instance assumed to
//! recur) and, once applied, what it was; a repair whose next decision is
//! the one it repairs is refused (exit 4) with the reason and the fix; a
//! batch is counted by outcome, not by submission.

use serde_json::Value;

mod support;
use support::qflow_here as qflow;
use support::stores::Fresh;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";
const REPAIRED: &str = "samples/dbg08-repaired.bpmn";

crate::on_both_stores!(
    a_repair_that_changes_nothing_is_refused_with_the_reason,
    a_migrates_preview_names_the_next_decision_and_its_applied_report_matches,
    a_batch_is_counted_by_outcome,
    a_retry_resolution_that_runs_no_attempt_is_refused,
);

fn json_lines(out: &str) -> Vec<Value> {
    out.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn status(db: &str, id: &str) -> String {
    let (code, out, err) = qflow(&["show", id, "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("show JSON");
    v["status"].as_str().unwrap_or_default().to_string()
}

/// dbg08-1 FAILED: PROVIDER_DOWN, exhausted after 6 of 6 attempts.
fn failed(db: &str) {
    let (code, _, err) = qflow(&["run", DBG08, "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(status(db, "dbg08-1"), "failed");
}

fn a_repair_that_changes_nothing_is_refused_with_the_reason(fresh: &Fresh) {
    let db = fresh.db();
    failed(&db);
    // Onto its own deployment, budget carried: attempt 7 would fail as
    // attempt 6 did, FAILED exhausted again.
    let (code, out, err) = qflow(&["migrate", "dbg08-1", "--to", "1", "--db", &db]);
    assert_eq!(code, 4, "{out}{err}");
    assert!(
        out.contains("next decision: attempt 7 of charge runs at once; if it fails again as it did (PROVIDER_DOWN, transient): FAILED, PROVIDER_DOWN (exhausted)"),
        "{out}"
    );
    assert!(err.contains("the repair changes nothing"), "{err}");
    assert!(err.contains("--reset-budget"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(status(&db, "dbg08-1"), "failed", "nothing was changed");
    let (code, out, _) = qflow(&[
        "migrate", "dbg08-1", "--to", "1", "--db", &db, "--format", "json",
    ]);
    assert_eq!(code, 4);
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON record");
    assert_eq!(v["error"], "refused", "{v}");

    // Applied anyway, the resume of that no-op is refused too, and runs
    // only when asked for: its first decision is the one previewed.
    let (code, _, err) = qflow(&[
        "migrate",
        "dbg08-1",
        "--to",
        "1",
        "--db",
        &db,
        "--allow-unchanged",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = qflow(&["resume", "dbg08-1", "--db", &db]);
    assert_eq!(code, 4, "{out}{err}");
    assert!(err.contains("the repair changes nothing"), "{err}");
    assert!(err.contains("--allow-unchanged resumes it anyway"), "{err}");
    assert_eq!(
        status(&db, "dbg08-1"),
        "running",
        "the refused resume ran nothing"
    );
    let (code, out, err) = qflow(&["resume", "dbg08-1", "--db", &db, "--allow-unchanged"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("next decision was: attempt 7 of charge failed with PROVIDER_DOWN: FAILED (exhausted) (as previewed)"),
        "{out}"
    );
    assert_eq!(status(&db, "dbg08-1"), "failed");
}

fn a_migrates_preview_names_the_next_decision_and_its_applied_report_matches(fresh: &Fresh) {
    let db = fresh.db();
    failed(&db);
    let args = [
        "migrate",
        "dbg08-1",
        "--to",
        REPAIRED,
        "--db",
        &db,
        "--map",
        "charge=chargeCard",
        "--format",
        "json",
    ];
    let (code, out, err) = qflow(&[&args[..], &["--dry-run"]].concat());
    assert_eq!(code, 0, "{err}");
    let preview = json_lines(&out).pop().expect("the plan");
    let next = &preview["next"];
    assert_eq!(
        next["step"],
        serde_json::json!({"kind": "attempt", "node": "chargeCard", "attempt": 7}),
        "{next}"
    );
    // Eight attempts under the repaired policy: a seventh failure parks
    // for the eighth.
    assert_eq!(next["then"]["kind"], "retry", "{next}");
    assert_eq!(next["then"]["attempt"], 8, "{next}");
    assert_eq!(next["assumed"]["code"], "PROVIDER_DOWN", "{next}");
    assert_eq!(next["unchanged"], false, "{next}");

    let (code, out, err) = qflow(&args);
    assert_eq!(code, 0, "{err}");
    let applied = json_lines(&out).pop().expect("the applied plan");
    assert_eq!(applied["applied"], true, "{applied}");
    assert_eq!(
        applied["next"], *next,
        "the plan applied is the one previewed"
    );
    assert_eq!(
        applied["next_applied"], *next,
        "read back from the store, the next decision is the preview's"
    );
    assert_eq!(applied["as_previewed"], true);

    // Its resume reports what the decision was (the scenario: the outage
    // goes on, so attempt 7 fails and parks for attempt 8, as previewed).
    let (code, out, err) = qflow(&[
        "resume",
        "dbg08-1",
        "--db",
        &db,
        "--scenario",
        "samples/scenarios/dbg08-long-outage.json",
        "--until",
        "14h",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("next decision: attempt 7 of chargeCard runs at once"),
        "{out}"
    );
    assert!(
        out.contains("next decision was: attempt 7 of chargeCard failed with PROVIDER_DOWN: retry, attempt 8 at +"),
        "{out}"
    );
    assert!(out.contains("(as previewed)"), "{out}");
}

/// A scenario whose charge is refused as invalid input at once.
const INVALID: &str = r#"{"tasks": {"payments.charge": [{"fail": {"code": "INVALID_INPUT", "class": "permanent"}}]}}"#;

fn a_batch_is_counted_by_outcome(fresh: &Fresh) {
    let db = fresh.db();
    failed(&db);
    let invalid = fresh.dir().join("invalid.json");
    std::fs::write(&invalid, INVALID).unwrap();
    for _ in 0..2 {
        let (code, _, err) = qflow(&[
            "run",
            DBG08,
            "--db",
            &db,
            "--scenario",
            invalid.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let batch = [
        "migrate",
        "--all-failed-of",
        "1",
        "--to",
        REPAIRED,
        "--db",
        &db,
        "--map",
        "charge=chargeCard",
    ];
    // Two of three would fail again at once (invalid input is
    // non-retryable whatever the budget): one refusal, none moves.
    let (code, out, err) = qflow(&batch);
    assert_eq!(code, 4, "{out}{err}");
    assert!(err.contains("2 of 3 instances (dbg08-2, …)"), "{err}");
    assert!(err.contains("the repair changes nothing"), "{err}");
    for id in ["dbg08-1", "dbg08-2", "dbg08-3"] {
        assert_eq!(status(&db, id), "failed", "{id} was not moved");
    }

    let (code, out, err) = qflow(&[&batch[..], &["--allow-unchanged"]].concat());
    assert_eq!(code, 0, "{err}");
    let summary = out.lines().last().expect("a summary");
    assert_eq!(
        summary,
        "3 of 3 migrated; next: 2 chargeCard runs, FAILED again with INVALID_INPUT if it fails again; 1 chargeCard runs, retried if it fails again",
        "{out}"
    );
}

#[test]
fn a_batch_summary_in_json_counts_outcomes() {
    let fresh = Fresh::sqlite("repair_verified_json");
    let db = fresh.db();
    failed(&db);
    let (code, out, err) = qflow(&[
        "migrate",
        "--all-failed-of",
        "1",
        "--to",
        REPAIRED,
        "--db",
        &db,
        "--map",
        "charge=chargeCard",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let summary = json_lines(&out).pop().expect("a summary line");
    assert_eq!(summary["migrated"], 1, "{summary}");
    assert_eq!(
        summary["outcomes"],
        serde_json::json!([{"next": "chargeCard runs, retried if it fails again", "instances": 1}]),
        "{summary}"
    );
    assert_eq!(summary["not_moved"], serde_json::json!([]));
}

/// One attempt in all, and it ends with an unknown outcome.
const ONE_ATTEMPT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="once" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:serviceTask id="t" q:task="payments.charge">
      <bpmn:extensionElements><q:retry maxAttempts="1" backoff="PT1M" jitter="none"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

const UNKNOWN: &str = r#"{"tasks": {"payments.charge": [{"fail": {"code": "RESET_AFTER_SEND", "class": "unknown-outcome"}}]}}"#;

fn a_retry_resolution_that_runs_no_attempt_is_refused(fresh: &Fresh) {
    let db = fresh.db();
    let model = fresh.dir().join("once.bpmn");
    let scenario = fresh.dir().join("once.json");
    std::fs::write(&model, ONE_ATTEMPT).unwrap();
    std::fs::write(&scenario, UNKNOWN).unwrap();
    let (model, scenario) = (model.to_str().unwrap(), scenario.to_str().unwrap());
    let (code, _, err) = qflow(&["run", model, "--scenario", scenario, "--db", &db]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(status(&db, "once-1"), "waiting");
    // Its budget is spent: a retry would be FAILED at once, no attempt.
    let resume = ["resume", "once-1", "--db", &db, "--scenario", scenario];
    let (code, out, err) = qflow(&[&resume[..], &["--resolve", "t=retry"]].concat());
    assert_eq!(code, 4, "{out}{err}");
    assert!(
        err.contains("resolving t as retry is decided at once: FAILED, RESET_AFTER_SEND (exhausted): no attempt runs"),
        "{err}"
    );
    assert!(err.contains("resolve it as failed"), "{err}");
    assert_eq!(status(&db, "once-1"), "waiting", "nothing was changed");
    // Resolved as succeeded, the preview and the report agree.
    let (code, out, err) = qflow(&[&resume[..], &["--resolve", "t=succeeded"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("next decision: resolving t as succeeded is decided at once: then RUNNING"),
        "{out}"
    );
    assert!(
        out.contains("next decision was: t resolved as succeeded (as previewed)"),
        "{out}"
    );
}
