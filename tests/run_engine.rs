//! The runtime through its engine API: `LocalRun::step` one decision at a
//! time (what the console drives), and the decisions the samples do not show.
//! Each run keeps its instance in a store: a SQLite file and a fresh
//! PostgreSQL database (`support::stores`).

use qflow_engine::local::LocalRunExt;
use std::collections::BTreeMap;

use qflow_engine::runtime::decide::{self, Event, Facts, Status};
use qflow_engine::runtime::driver::LocalRun;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::scenario::Scenario;
use qflow_engine::runtime::VirtualClock;
use serde_json::Value;

mod support;
use support::stores::{open, Fresh};

fn model(process: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="defs">
  <bpmn:error id="err" errorCode="BROKEN"/>
  <bpmn:process id="p" isExecutable="true">
{process}
  </bpmn:process>
</bpmn:definitions>"#
    )
}

/// A start → task → end process with this retry element.
fn task_with(retry: &str) -> String {
    model(&format!(
        r#"<bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:serviceTask id="t" q:task="x.y"><bpmn:extensionElements>{retry}</bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <bpmn:endEvent id="e"/>"#
    ))
}

/// Run to the end in a new database of `fresh`; returns every line, the
/// final state and the database (what `--db` takes).
fn run(fresh: &Fresh, source: &str, scenario: &str) -> (Vec<Value>, Value, String) {
    let db = fresh.db();
    let defs = qflow_engine::load(source).unwrap_or_else(|d| panic!("model loads: {d:?}"));
    let store = open(&db);
    let scenario = Scenario::parse(scenario).unwrap();
    let mut run = LocalRun::open(store, source, &defs, scenario, VirtualClock::new(0)).unwrap();
    let mut lines = Vec::new();
    run.run(|d| lines.extend(d.lines.iter().cloned())).unwrap();
    let last = run.final_state().unwrap().to_json();
    (lines, last, db)
}

fn step_takes_exactly_one_decision_and_the_store_shows_it(fresh: &Fresh) {
    let source = task_with(r#"<q:retry maxAttempts="3" backoff="PT1M" jitter="none"/>"#);
    let defs = qflow_engine::load(&source).unwrap();
    let store = open(&fresh.db());
    let scenario = Scenario::parse(
        r#"{"tasks":{"x.y":[{"fail":{"code":"DOWN","class":"transient"}},{"ok":{}}]}}"#,
    )
    .unwrap();
    let mut run = LocalRun::open(store, &source, &defs, scenario, VirtualClock::new(0)).unwrap();
    let start = run.step().unwrap().unwrap();
    assert_eq!(start.lines[0]["kind"], "start");
    let first = run.step().unwrap().unwrap();
    assert_eq!(first.lines[0]["attempt"], 1);
    assert_eq!(first.status, Status::Waiting);
    // Between steps, every panel reads from the store.
    let id = run.instance_id().to_string();
    let timers = run.store().timers(&id).unwrap();
    assert_eq!(
        (timers.len(), timers[0].due_ms, timers[0].armed),
        (1, 60_000, true)
    );
    assert_eq!(run.store().history(&id).unwrap().len(), 2);
    assert_eq!(run.store().transitions(&id).unwrap().len(), 2);
    let second = run.step().unwrap().unwrap();
    assert_eq!(
        (second.at_ms, second.lines[0]["attempt"].as_u64()),
        (60_000, Some(2))
    );
    let end = run.step().unwrap().unwrap();
    assert_eq!(end.lines[0]["kind"], "end");
    assert_eq!(end.status, Status::Completed);
    assert!(run.step().unwrap().is_none());
    // The counters left with the task.
    let snap = run.store().instance(&id).unwrap().unwrap().snapshot;
    assert!(!String::from_utf8(snap).unwrap().contains("attempts."));
}

fn max_elapsed_expires_the_retry_series(fresh: &Fresh) {
    let source = task_with(r#"<q:retry maxElapsed="PT10M" backoff="PT4M" jitter="none"/>"#);
    let (lines, last, _) = run(
        fresh,
        &source,
        r#"{"tasks":{"x.y":[{"fail":{"code":"DOWN","class":"transient"}}]}}"#,
    );
    let at: Vec<u64> = lines
        .iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| l["at_s"].as_u64().unwrap())
        .collect();
    assert_eq!(at, vec![0, 240, 480]);
    assert_eq!(
        (last["reason"].as_str(), last["attempts"].as_u64()),
        (Some("expired"), Some(3))
    );
}

fn a_rate_limited_retry_after_is_capped_by_max_delay(fresh: &Fresh) {
    let source =
        task_with(r#"<q:retry maxAttempts="3" backoff="PT1M" maxDelay="PT5M" jitter="none"/>"#);
    let (lines, last, _) = run(
        fresh,
        &source,
        r#"{"tasks":{"x.y":[{"fail":{"code":"SLOW_DOWN","class":"rate-limited","retryAfter":"PT1H"}},{"ok":{}}]}}"#,
    );
    assert_eq!(lines[1]["delay_s"], 300);
    assert_eq!(lines[2]["at_s"], 300);
    assert_eq!(last["status"], "completed");
}

fn a_thirty_day_retry_after_parks_for_the_default_maximum_without_max_delay(fresh: &Fresh) {
    let source = task_with(r#"<q:retry maxAttempts="3" backoff="PT1M" jitter="none"/>"#);
    let (lines, last, _) = run(
        fresh,
        &source,
        r#"{"tasks":{"x.y":[{"fail":{"code":"SLOW_DOWN","class":"rate-limited","retryAfter":"P30D"}},{"ok":{}}]}}"#,
    );
    let day = 24 * 3600;
    assert_eq!(lines[1]["delay_s"], day, "{:?}", lines[1]);
    assert_eq!(lines[1]["next_at_s"], day, "{:?}", lines[1]);
    assert_eq!(
        (lines[2]["kind"].as_str(), lines[2]["at_s"].as_u64()),
        (Some("attempt"), Some(day))
    );
    assert_eq!(last["status"], "completed");
    // A maxDelay longer than the default is the user's choice, and wins.
    let week =
        task_with(r#"<q:retry maxAttempts="3" backoff="PT1M" maxDelay="P7D" jitter="none"/>"#);
    let (lines, _, _) = run(
        fresh,
        &week,
        r#"{"tasks":{"x.y":[{"fail":{"code":"SLOW_DOWN","class":"rate-limited","retryAfter":"P30D"}},{"ok":{}}]}}"#,
    );
    assert_eq!(lines[1]["delay_s"], 7 * day);
}

fn a_non_retryable_code_fails_at_once_even_when_transient(fresh: &Fresh) {
    let source = task_with(
        r#"<q:retry maxAttempts="5" backoff="PT1M" nonRetryableCodes="AUTH_EXPIRED" jitter="none"/>"#,
    );
    let (_, last, _) = run(
        fresh,
        &source,
        r#"{"tasks":{"x.y":[{"fail":{"code":"AUTH_EXPIRED","class":"transient"}}]}}"#,
    );
    assert_eq!(
        (last["reason"].as_str(), last["attempts"].as_u64()),
        (Some("non-retryable"), Some(1))
    );
}

fn a_failure_without_a_policy_is_terminal_and_writes_no_counter(fresh: &Fresh) {
    let source = task_with("");
    let (_, last, db) = run(
        fresh,
        &source,
        r#"{"tasks":{"x.y":[{"fail":{"code":"DOWN","class":"transient"}}]}}"#,
    );
    assert_eq!(
        (last["reason"].as_str(), last["attempts"].as_u64()),
        (Some("exhausted"), Some(1))
    );
    let store = open(&db);
    let snap = String::from_utf8(store.instances().unwrap()[0].snapshot.clone()).unwrap();
    assert!(!snap.contains("attempts.t"), "{snap}");
    assert!(snap.contains(r#""failure":{"attempts":1"#), "{snap}");
}

const GATEWAY: &str = r#"<bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
    <bpmn:exclusiveGateway id="g"/>
    <bpmn:sequenceFlow id="hi" sourceRef="g" targetRef="e1"><bpmn:conditionExpression>amount &gt;= 100</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="lo" sourceRef="g" targetRef="e2"><bpmn:conditionExpression>amount &lt; 10</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:endEvent id="e1"/>
    <bpmn:endEvent id="e2"><bpmn:errorEventDefinition errorRef="err"/></bpmn:endEvent>"#;

fn a_gateway_with_no_matching_flow_and_no_default_fails_with_a_clear_reason(fresh: &Fresh) {
    let (lines, last, _) = run(fresh, &model(GATEWAY), r#"{"variables":{"amount":50}}"#);
    let g = lines.iter().find(|l| l["kind"] == "gateway").unwrap();
    assert!(
        g["reason"]
            .as_str()
            .unwrap()
            .contains("no condition of hi, lo holds"),
        "{g}"
    );
    assert_eq!(
        (last["code"].as_str(), last["reason"].as_str()),
        (Some("q.gateway.no-match"), Some("uncaught-error"))
    );
}

fn conditions_route_and_an_error_end_event_fails_the_instance_with_its_code(fresh: &Fresh) {
    let (_, last, _) = run(fresh, &model(GATEWAY), r#"{"variables":{"amount":500}}"#);
    assert_eq!(last["status"], "completed");
    let (_, last, _) = run(fresh, &model(GATEWAY), r#"{"variables":{"amount":5}}"#);
    assert_eq!(
        (last["code"].as_str(), last["reason"].as_str()),
        (Some("BROKEN"), Some("uncaught-error"))
    );
}

crate::on_both_stores!(
    step_takes_exactly_one_decision_and_the_store_shows_it,
    max_elapsed_expires_the_retry_series,
    a_rate_limited_retry_after_is_capped_by_max_delay,
    a_thirty_day_retry_after_parks_for_the_default_maximum_without_max_delay,
    a_non_retryable_code_fails_at_once_even_when_transient,
    a_failure_without_a_policy_is_terminal_and_writes_no_counter,
    a_gateway_with_no_matching_flow_and_no_default_fails_with_a_clear_reason,
    conditions_route_and_an_error_end_event_fails_the_instance_with_its_code,
);

/// Pure: no store, so one case.
#[test]
fn decisions_are_pure_and_stale_events_are_recorded_without_effect() {
    let source = task_with(r#"<q:retry maxAttempts="3" backoff="PT1M" jitter="none"/>"#);
    let defs = qflow_engine::load(&source).unwrap();
    let graph = Graph::compile(&defs).unwrap();
    let start = decide::start(&graph, &BTreeMap::new(), 0);
    let facts = Facts {
        instance_id: "p-1",
        status: start.status,
        started_ms: 0,
        snapshot: &start.snapshot,
        damage: None,
        timers: &[],
        keys_sent: &Default::default(),
    };
    let ev = Event::Attempt {
        node: "t".into(),
        outcome: qflow_engine::runtime::scenario::TaskOutcome::Fail {
            code: "DOWN".into(),
            class: qflow_engine::runtime::scenario::FailureClass::Transient,
            retry_after: None,
            message: None,
        },
        timer: None,
    };
    let a = decide::decide(&graph, &facts, &ev, 5_000);
    let b = decide::decide(&graph, &facts, &ev, 5_000);
    assert_eq!(a, b, "same facts, same event, same now: same transition");
    assert_eq!(a.arm.len(), 1);
    assert_eq!(a.arm[0].due_ms, 65_000);
    assert_eq!(
        a.set.keys().cloned().collect::<Vec<_>>(),
        vec!["attempts.t", "first_attempt.t", "frontier"]
    );
    // A retry timer that is no longer armed drives nothing.
    let parked = Facts {
        snapshot: &a.snapshot,
        status: a.status,
        ..facts.clone()
    };
    let Event::Attempt { node, outcome, .. } = ev else {
        unreachable!()
    };
    let stale = Event::Attempt {
        node,
        outcome,
        timer: Some(42),
    };
    let t = decide::decide(&graph, &parked, &stale, 65_000);
    assert_eq!(t.history[0].kind(), "ignored");
    assert!(t.set.is_empty() && t.removed.is_empty() && t.arm.is_empty());
}
