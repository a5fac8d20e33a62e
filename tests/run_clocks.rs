//! Both clocks make the same decisions in the same order: the same scenario
//! run on the virtual clock (time skips) and on the system clock (the run
//! sleeps until the engine's next due event: a delivery on the channel's
//! curve, a response, a timer) gives the same decision list. Durations are
//! a few seconds, so the system-clock runs take seconds of wall time.

mod support;

use serde_json::Value;
use std::path::Path;
use support::{lines, qflow};

/// A call on a channel whose outbox delivers 1 s apart and poisons a request
/// at its third failed delivery (2 s), with a 3 s timeout caught by an error
/// boundary. On the virtual clock an unreachable bank poisons the request
/// before the timeout; a poller that slept until the next timer only would
/// have let the timeout win.
const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="defs">
  <q:channelConfig channel="bank" maxDeliveries="3" deliveryInterval="PT1S"/>
  <bpmn:error id="timedOut" errorCode="q.timeout"/>
  <bpmn:process id="clk" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="ask"/>
    <bpmn:serviceTask id="ask" name="Ask the bank" q:channel="bank">
      <bpmn:extensionElements><q:timeout duration="PT3S"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:boundaryEvent id="silent" attachedToRef="ask">
      <bpmn:errorEventDefinition errorRef="timedOut"/>
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="ask" targetRef="answered"/>
    <bpmn:endEvent id="answered"/>
    <bpmn:sequenceFlow id="f3" sourceRef="silent" targetRef="gave-up"/>
    <bpmn:endEvent id="gave-up"/>
  </bpmn:process>
</bpmn:definitions>"#;

/// What a decision line decided, without its time (the system clock's
/// times are wall time, a little later than the virtual ones).
fn decision(l: &Value) -> Value {
    let mut v = l.clone();
    if let Value::Object(m) = &mut v {
        for k in [
            "at_s",
            "timeout_at_s",
            "next_delivery_at_s",
            "respond_at_s",
            "next_at_s",
            "until_s",
            "first_attempt_s",
            "last_attempt_s",
            "due_s",
        ] {
            m.remove(k);
        }
    }
    v
}

fn run(dir: &Path, scenario: &str, clock: &str) -> Vec<Value> {
    let model = dir.join("clk.bpmn");
    std::fs::write(&model, MODEL).unwrap();
    let file = dir.join(format!("{clock}.json"));
    std::fs::write(&file, scenario).unwrap();
    let o = qflow(
        dir,
        &[
            "run",
            "clk.bpmn",
            "--scenario",
            file.to_str().unwrap(),
            "--clock",
            clock,
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
    lines(&o).iter().map(decision).collect()
}

/// Runs `scenario` on both clocks; returns the (equal) decision lists.
fn same_on_both_clocks(scenario: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let virt = run(dir.path(), scenario, "virtual");
    let sys = run(dir.path(), scenario, "system");
    assert_eq!(
        sys,
        virt,
        "the system clock decided otherwise than the virtual one:\nsystem:  {}\nvirtual: {}",
        sys.iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n         "),
        virt.iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n         ")
    );
    virt
}

#[test]
fn deliveries_on_the_channels_curve_poison_before_the_timeout_on_both_clocks() {
    let out = same_on_both_clocks(r#"{"deliveries":{"bank":[{"fail":"connection refused"}]}}"#);
    let last = out.last().unwrap();
    assert_eq!(
        (&last["status"], &last["code"]),
        (&Value::from("failed"), &Value::from("q.delivery.poisoned")),
        "{last}"
    );
}

#[test]
fn a_response_after_a_delay_is_taken_before_the_timeout_on_both_clocks() {
    let out = same_on_both_clocks(
        r#"{"deliveries":{"bank":[{"fail":"connection refused"},{"ok":true}]},
            "channels":{"bank":[{"respond":{"approved":true},"after":"PT1S"}]}}"#,
    );
    assert!(
        out.iter()
            .any(|l| l["kind"] == "end" && l["node"] == "answered"),
        "{out:?}"
    );
    assert_eq!(out.last().unwrap()["status"], "completed");
}

#[test]
fn a_silent_counterpart_times_out_into_the_boundary_on_both_clocks() {
    let out = same_on_both_clocks(r#"{"channels":{"bank":[{"silent":true}]}}"#);
    assert!(
        out.iter()
            .any(|l| l["kind"] == "end" && l["node"] == "gave-up"),
        "{out:?}"
    );
}
