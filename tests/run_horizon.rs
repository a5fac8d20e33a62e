//! A run on the virtual clock ends even when the process does not: it stops
//! at its horizon (30 days of virtual time past where it began, or
//! `--until`), or when the instance keeps coming back to one state (the
//! rounds of a loop that make no progress). It says so on stderr and in the
//! final line, and leaves the instance parked for `qflow resume`.

mod support;

use serde_json::Value;
use std::path::Path;
use support::stores::Fresh;
use support::{lines, qflow};

/// A poll that never ends: wait, check (the task succeeds without setting
/// `ready`), loop. `WAIT` is the wait's duration.
const POLL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:q="urn:qflow:bpmn:1" id="defs">
  <bpmn:process id="poll" isExecutable="true">
    <bpmn:startEvent id="start" name="Start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="merge"/>
    <bpmn:exclusiveGateway id="merge" name="Again"/>
    <bpmn:sequenceFlow id="f2" sourceRef="merge" targetRef="wait"/>
    <bpmn:intermediateCatchEvent id="wait" name="Wait">
      <bpmn:timerEventDefinition><bpmn:timeDuration>WAIT</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="wait" targetRef="check"/>
    <bpmn:serviceTask id="check" name="Check" q:task="status.check"/>
    <bpmn:sequenceFlow id="f4" sourceRef="check" targetRef="done"/>
    <bpmn:exclusiveGateway id="done" name="Done?" default="again"/>
    <bpmn:sequenceFlow id="yes" name="yes" sourceRef="done" targetRef="end">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">ready == true</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="again" name="no" sourceRef="done" targetRef="merge"/>
    <bpmn:endEvent id="end" name="End"/>
  </bpmn:process>
</bpmn:definitions>"#;

fn model(dir: &Path, wait: &str) -> String {
    std::fs::write(dir.join("poll.bpmn"), POLL.replace("WAIT", wait)).unwrap();
    "poll.bpmn".into()
}

fn ok(o: &std::process::Output) -> (Vec<Value>, String) {
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    (lines(o), stderr)
}

crate::on_both_stores!(
    a_virtual_run_stops_at_its_default_horizon_and_resume_goes_as_far_again,
    a_loop_that_makes_no_progress_stops_after_a_hundred_returns_to_one_state,
    a_loop_against_a_counterpart_that_always_declines_stops_instead_of_running_on,
);

fn a_virtual_run_stops_at_its_default_horizon_and_resume_goes_as_far_again(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    let m = model(dir, "P1D");
    let (out, stderr) = ok(&qflow(dir, &["run", &m, "--db", &db, "--format", "json"]));
    let last = out.last().unwrap();
    assert_eq!(
        (&last["status"], &last["stopped"], &last["horizon_s"]),
        (
            &Value::from("waiting"),
            &Value::from("horizon"),
            &Value::from(30 * 86_400)
        ),
        "{last}"
    );
    let latest = out[..out.len() - 1]
        .iter()
        .filter_map(|l| l["at_s"].as_f64())
        .fold(0.0, f64::max);
    assert_eq!(latest, (30 * 86_400) as f64, "decided up to the horizon");
    assert!(
        stderr.contains("note: stopped at +30d, the run's horizon (30 days of virtual time past where this run began, the default; --until DURATION sets another)")
            && stderr.contains(&format!("`qflow resume poll-1 --db {db}`")),
        "{stderr}"
    );

    // Parked: resume continues it, for another horizon.
    let (out, _) = ok(&qflow(
        dir,
        &["resume", "poll-1", "--db", &db, "--format", "json"],
    ));
    let first = out.first().unwrap();
    assert_eq!(first["at_s"], 31 * 86_400, "{first}");
    let last = out.last().unwrap();
    assert_eq!(last["horizon_s"], 60 * 86_400, "{last}");

    // And so does a run of the same model with the same database.
    let (out, stderr) = ok(&qflow(dir, &["run", &m, "--db", &db, "--format", "json"]));
    assert!(
        stderr.contains("resuming unfinished instance poll-1"),
        "{stderr}"
    );
    assert_eq!(out.last().unwrap()["horizon_s"], 90 * 86_400);
}

#[test]
fn until_sets_the_horizon_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(dir.path(), "P1D");
    let (out, stderr) = ok(&qflow(
        dir.path(),
        &["run", &m, "--until", "P3D", "--format", "json"],
    ));
    let last = out.last().unwrap();
    assert_eq!(
        (&last["stopped"], &last["horizon_s"]),
        (&Value::from("horizon"), &Value::from(3 * 86_400)),
        "{last}"
    );
    assert!(
        stderr.contains("note: stopped at +3d, the run's horizon (--until)")
            && stderr.contains("temporary database"),
        "{stderr}"
    );
}

fn a_loop_that_makes_no_progress_stops_after_a_hundred_returns_to_one_state(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    let m = model(dir, "PT1M");
    let (out, stderr) = ok(&qflow(dir, &["run", &m, "--db", &db, "--format", "json"]));
    let last = out.last().unwrap();
    assert_eq!(
        (&last["status"], &last["stopped"], &last["returns"]),
        (
            &Value::from("waiting"),
            &Value::from("no-progress"),
            &Value::from(100)
        ),
        "{last}"
    );
    let checks = out.iter().filter(|l| l["kind"] == "attempt").count();
    assert!(
        (99..=101).contains(&checks),
        "about a hundred rounds, not 30 days of them: {checks}"
    );
    assert!(
        stderr.contains("came back to the same state 100 times"),
        "{stderr}"
    );
}

fn a_loop_against_a_counterpart_that_always_declines_stops_instead_of_running_on(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/call-loop-until-approved.bpmn");
    std::fs::write(
        dir.join("declines.json"),
        r#"{"channels":{"bank":[{"respond":{"approved":false},"after":"PT5S"}]}}"#,
    )
    .unwrap();
    let model = model.to_str().unwrap();
    let args = ["run", model, "--scenario", "declines.json", "--db"];
    let (out, _) = ok(&qflow(
        dir,
        &[&args[..], &[&db, "--format", "json"]].concat(),
    ));
    let last = out.last().unwrap();
    assert_eq!(
        (&last["stopped"], &last["returns"]),
        (&Value::from("no-progress"), &Value::from(100)),
        "{last}"
    );
    // The human final line says where the tokens stopped.
    let human = fresh.db();
    let o = qflow(dir, &[&args[..], &[&human]].concat());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines().last().unwrap().starts_with(
            "WAITING    instance ask-until-approved-1: stopped, tokens at decide ready"
        ),
        "{text}"
    );
}
