//! Outside the backoff park, a request that will never be delivered is kept
//! in the outbox, marked `abandoned` with the reason: `qflow run` ends by
//! listing it (the final line's `abandoned`), `qflow show` prints it. Only the
//! backoff park withdraws (deletes) a dead attempt's undelivered request.

mod support;

use qflow_engine::local::LocalRunExt;
use serde_json::Value;
use std::path::Path;
use support::stores::{open, Fresh};
use support::{lines, qflow};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A sample model with its channel's delivery curve replaced by `curve`.
fn sample_with_curve(dir: &Path, sample: &str, curve: &str) -> String {
    let text = std::fs::read_to_string(repo().join("samples").join(sample)).unwrap();
    let old = r#"maxDeliveries="5" deliveryInterval="PT2S""#;
    assert!(text.contains(old), "{sample} has the bank curve");
    let path = dir.join(sample);
    std::fs::write(&path, text.replace(old, curve)).unwrap();
    path.display().to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Every delivery to the bank fails; the bank would answer if reached.
const UNREACHABLE: &str = r#"{"deliveries":{"bank":[{"fail":"connection refused"}]},
  "channels":{"bank":[{"respond":{"approved":true}}]}}"#;

fn run_json(dir: &Path, model: &str, scenario: &str, db: &str) -> Vec<Value> {
    let o = qflow(
        dir,
        &[
            "run",
            model,
            "--scenario",
            scenario,
            "--db",
            db,
            "--format",
            "json",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    lines(&o)
}

fn show_outbox(dir: &Path, db: &str, instance: &str) -> Vec<Value> {
    let o = qflow(dir, &["show", instance, "--db", db, "--format", "json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["outbox"].as_array().unwrap().clone()
}

crate::on_both_stores!(
    a_call_caught_by_an_error_boundary_keeps_its_undelivered_request_abandoned_with_the_reason,
    the_fatal_path_keeps_a_poisoned_request_abandoned_and_says_it_was_poisoned,
    the_backoff_park_withdraws_dead_attempts_and_exhaustion_keeps_the_last_request_abandoned,
    a_timer_boundary_that_interrupts_a_call_keeps_its_undelivered_request_abandoned,
    an_answer_before_its_request_was_delivered_leaves_the_request_abandoned_never_sent,
);

fn a_call_caught_by_an_error_boundary_keeps_its_undelivered_request_abandoned_with_the_reason(
    fresh: &Fresh,
) {
    let dir = fresh.dir();
    // Deliveries 20 s apart: the 30 s timeout fires while the request is
    // still pending, and the boundary takes the flow to the manual review.
    let model = sample_with_curve(
        dir,
        "call-bank-no-policy.bpmn",
        r#"maxDeliveries="5" deliveryInterval="PT20S""#,
    );
    let scenario = write(dir, "s.json", UNREACHABLE);
    let db = fresh.db();
    let out = run_json(dir, &model, &scenario, &db);
    let last = out.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    let abandoned = last["abandoned"].as_array().expect("the run lists it");
    assert_eq!(abandoned.len(), 1, "{last}");
    assert_eq!(
        abandoned[0]["reason"],
        "attempt 1 failed (q.timeout) and the error boundary bankSilent took the flow"
    );
    assert_eq!(
        abandoned[0]["idempotencyKey"],
        "bank-no-policy-1/authorize/1"
    );
    // Never delivered after the flow left the call.
    assert!(
        !out.iter()
            .any(|l| l["kind"] == "delivery" && l["at_s"].as_f64() > Some(30.0)),
        "{out:?}"
    );
    let rows = show_outbox(dir, &db, "bank-no-policy-1");
    assert_eq!(rows.len(), 1, "kept, not deleted: {rows:?}");
    assert_eq!(rows[0]["state"], "abandoned");
    assert_eq!(rows[0]["reason"], abandoned[0]["reason"]);

    // The human run says it too, after the final line.
    let db2 = fresh.db();
    let o = qflow(dir, &["run", &model, "--scenario", &scenario, "--db", &db2]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("ABANDONED  request bank-no-policy-1/authorize/1 to bank (attempt 1), never delivered: attempt 1 failed (q.timeout)"),
        "{text}"
    );
    let o = qflow(dir, &["show", "bank-no-policy-1", "--db", &db2]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("abandoned after 2 deliveries, key bank-no-policy-1/authorize/1 (attempt 1 failed (q.timeout) and the error boundary bankSilent took the flow)"),
        "{text}"
    );
}

fn the_fatal_path_keeps_a_poisoned_request_abandoned_and_says_it_was_poisoned(fresh: &Fresh) {
    let dir = fresh.dir();
    // The sample's curve: poisoned at the fifth delivery (8 s); the boundary
    // catches q.timeout only, so the poisoning fails the instance.
    let model = repo().join("samples/call-bank-no-policy.bpmn");
    let scenario = write(dir, "s.json", UNREACHABLE);
    let db = fresh.db();
    let out = run_json(dir, &model.display().to_string(), &scenario, &db);
    let last = out.last().unwrap();
    assert_eq!(
        (&last["status"], &last["code"], &last["reason"]),
        (
            &Value::from("failed"),
            &Value::from("q.delivery.poisoned"),
            &Value::from("uncaught-error")
        ),
        "{last}"
    );
    assert_eq!(
        last["abandoned"][0]["reason"],
        "poisoned, then the instance failed at authorize: q.delivery.poisoned (uncaught-error)",
        "{last}"
    );
    let rows = show_outbox(dir, &db, "bank-no-policy-1");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["state"], "abandoned");
}

fn the_backoff_park_withdraws_dead_attempts_and_exhaustion_keeps_the_last_request_abandoned(
    fresh: &Fresh,
) {
    let dir = fresh.dir();
    let model = sample_with_curve(
        dir,
        "bank-authorize.bpmn",
        r#"maxDeliveries="5" deliveryInterval="PT20S""#,
    );
    let scenario = write(dir, "s.json", UNREACHABLE);
    let db = fresh.db();
    let out = run_json(dir, &model, &scenario, &db);
    let last = out.last().unwrap();
    assert_eq!(
        (&last["status"], &last["reason"], &last["attempts"]),
        (
            &Value::from("failed"),
            &Value::from("exhausted"),
            &Value::from(4)
        ),
        "{last}"
    );
    let rows = show_outbox(dir, &db, "bank-authorize-1");
    // Attempts 1-3 were withdrawn at their backoff parks; attempt 4's
    // request is kept.
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (&rows[0]["attempt"], &rows[0]["state"], &rows[0]["reason"]),
        (
            &Value::from(4),
            &Value::from("abandoned"),
            &Value::from("the instance failed at authorize: q.timeout (exhausted)")
        )
    );
}

/// A call timed out only by a routed timer boundary; its request is
/// delivered every 45 s, so it is still pending when the boundary fires.
const BOUNDARY_CALL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="defs">
  <q:channelConfig channel="bank" maxDeliveries="5" deliveryInterval="PT45S"/>
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="ask"/>
    <bpmn:serviceTask id="ask" name="Ask the bank" q:channel="bank"/>
    <bpmn:boundaryEvent id="late" name="No answer in a minute" attachedToRef="ask">
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="ask" targetRef="answered"/>
    <bpmn:endEvent id="answered" name="Answered"/>
    <bpmn:sequenceFlow id="f3" sourceRef="late" targetRef="gave-up"/>
    <bpmn:endEvent id="gave-up" name="Gave up"/>
  </bpmn:process>
</bpmn:definitions>"#;

fn a_timer_boundary_that_interrupts_a_call_keeps_its_undelivered_request_abandoned(fresh: &Fresh) {
    let dir = fresh.dir();
    let model = write(dir, "late.bpmn", BOUNDARY_CALL);
    let scenario = write(dir, "s.json", UNREACHABLE);
    let db = fresh.db();
    let out = run_json(dir, &model, &scenario, &db);
    let last = out.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(
        last["abandoned"][0]["reason"], "the timer boundary late interrupted the call",
        "{last}"
    );
    assert!(
        !out.iter()
            .any(|l| l["kind"] == "delivery" && l["at_s"].as_f64() > Some(60.0)),
        "no delivery after the boundary: {out:?}"
    );
    let rows = show_outbox(dir, &db, "p-1");
    assert_eq!(rows[0]["state"], "abandoned", "{rows:?}");

    // The console's outbox panel shows the row and, below it, why.
    let o = qflow(
        dir,
        &[
            "console",
            &model,
            "--scenario",
            &scenario,
            "--headless",
            "          ",
            "--size",
            "220x40",
        ],
    );
    let frame = String::from_utf8_lossy(&o.stdout);
    assert!(
        frame.contains("ask #1 abandoned ×2 p-1/ask/1")
            && frame.contains("└ the timer boundary late interrupted the call"),
        "{frame}"
    );
}

fn an_answer_before_its_request_was_delivered_leaves_the_request_abandoned_never_sent(
    fresh: &Fresh,
) {
    use qflow_engine::runtime::{LocalRun, Scenario, VirtualClock};
    let source = std::fs::read_to_string(repo().join("samples/bank-authorize.bpmn")).unwrap();
    let defs = qflow_engine::load(&source).unwrap_or_else(|d| panic!("{d:?}"));
    let store = open(&fresh.db());
    // Every delivery fails, so the request stays pending.
    let scenario =
        Scenario::parse(r#"{"deliveries":{"bank":[{"fail":"connection refused"}]}}"#).unwrap();
    let mut run = LocalRun::open(store, &source, &defs, scenario, VirtualClock::new(0)).unwrap();
    run.take_start();
    let emitted = run.step().unwrap().expect("the request is emitted");
    assert!(emitted.lines.iter().any(|l| l["kind"] == "attempt"));
    // An operator answers it (as the console's r does) before any delivery.
    run.respond_now(None, serde_json::json!({"approved": true}))
        .unwrap()
        .expect("the live attempt is answered");
    let mut later = Vec::new();
    run.run(|d| later.extend(d.lines.iter().cloned())).unwrap();
    let inspection = run.inspect().unwrap();
    assert_eq!(inspection.final_line()["status"], "completed");
    assert!(
        !later.iter().any(|l| l["kind"] == "delivery"),
        "never sent after the answer: {later:?}"
    );
    let row = &inspection.outbox[0];
    assert_eq!(
        (row.state.as_str(), row.reason.as_deref()),
        (
            "abandoned",
            Some("the call was answered before this request was delivered")
        )
    );
}
