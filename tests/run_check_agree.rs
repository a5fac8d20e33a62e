//! `check` and `run` agree: a model `check` accepts is a model `run` compiles,
//! and a channel call timed out by a routed timer boundary (which QF020
//! accepts in place of a `<q:timeout>`) runs, the boundary's route winning.

use qflow_engine::local::LocalRunExt;
use std::path::{Path, PathBuf};

use qflow_engine::config::Config;
use qflow_engine::runtime::driver::LocalRun;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::scenario::Scenario;
use qflow_engine::runtime::VirtualClock;

mod support;
use support::stores::{open, Fresh};

fn bpmn_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "bpmn"));
    v.sort();
    v
}

/// Every model `check` accepts (the samples, the broken samples that only
/// warn, the interchange corpus when present) compiles for `run`, or has no
/// executable qflow process, which `run` says in so many words.
#[test]
fn every_model_check_accepts_compiles_for_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = bpmn_files(&root.join("samples"));
    files.extend(bpmn_files(&root.join("samples/broken")));
    let miwg = root.join("../shared/corpus/miwg");
    if miwg.is_dir() {
        files.extend(bpmn_files(&miwg));
    } else {
        println!(
            "skipping the interchange corpus: {} is absent",
            miwg.display()
        );
    }
    let (mut accepted, mut compiled) = (0, 0);
    let mut disagree = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let config = Config::for_model(path);
        let (_, analysis) = qflow_engine::analyze_bytes_with(&bytes, &config.settings);
        if analysis.refusals().next().is_some() {
            continue;
        }
        accepted += 1;
        let defs = analysis
            .definitions
            .as_ref()
            .expect("accepted models parse");
        match Graph::compile(defs) {
            Ok(_) => compiled += 1,
            Err(_) if defs.executable_processes().next().is_none() => {}
            Err(e) => disagree.push(format!("{}: {e}", path.display())),
        }
    }
    // And a call timed out only by a routed timer boundary (no sample has one).
    let boundary = qflow_engine::analyze(BOUNDARY_CALL);
    assert!(
        boundary.refusals().next().is_none(),
        "{:?}",
        boundary.diagnostics
    );
    if let Err(e) = Graph::compile(boundary.definitions.as_ref().unwrap()) {
        disagree.push(format!("a call timed out by a timer boundary: {e}"));
    }
    println!("{accepted} models accepted, {compiled} with an executable process compiled");
    assert!(compiled >= 15, "{compiled} compiled");
    assert!(
        disagree.is_empty(),
        "check accepts, run refuses:\n{}",
        disagree.join("\n")
    );
}

const BOUNDARY_CALL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="defs">
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

/// Runs the boundary call in a new database of `fresh` (a SQLite file or
/// a PostgreSQL database).
fn run_boundary_call(
    fresh: &Fresh,
    scenario: &str,
) -> (Vec<serde_json::Value>, qflow_engine::inspect::Inspection) {
    let defs = qflow_engine::load(BOUNDARY_CALL).unwrap_or_else(|d| panic!("loads: {d:?}"));
    let store = open(&fresh.db());
    let scenario = Scenario::parse(scenario).unwrap();
    let mut run =
        LocalRun::open(store, BOUNDARY_CALL, &defs, scenario, VirtualClock::new(0)).unwrap();
    let mut lines = Vec::new();
    run.run(|d| lines.extend(d.lines.iter().cloned())).unwrap();
    (lines, run.inspect().unwrap())
}

crate::on_both_stores!(a_call_timed_out_by_a_routed_timer_boundary_takes_the_boundary_route);

/// The boundary fires at its time, ends the wait and takes its route; the
/// request's outbox row is kept; an answer in time takes the normal flow.
fn a_call_timed_out_by_a_routed_timer_boundary_takes_the_boundary_route(fresh: &Fresh) {
    let (lines, inspection) =
        run_boundary_call(fresh, r#"{"channels":{"bank":[{"silent":true}]}}"#);
    let kinds: Vec<(String, String, i64)> = lines
        .iter()
        .map(|l| {
            (
                l["kind"].as_str().unwrap_or("").to_string(),
                l["node"].as_str().unwrap_or("").to_string(),
                l["at_s"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    let attempt = &lines.iter().find(|l| l["kind"] == "attempt").unwrap();
    assert!(attempt.get("timeout_at_s").is_none(), "{attempt}");
    assert!(
        kinds.contains(&("boundary".into(), "late".into(), 60)),
        "the boundary fires at 1 min: {kinds:?}"
    );
    assert!(
        kinds.iter().any(|k| k.1 == "gave-up" && k.0 == "end"),
        "{kinds:?}"
    );
    assert!(!kinds.iter().any(|k| k.1 == "answered"), "{kinds:?}");
    assert!(
        !kinds.iter().any(|k| k.0 == "call-failed"),
        "no failure: {kinds:?}"
    );
    assert_eq!(inspection.final_line()["status"], "completed");
    assert_eq!(inspection.outbox.len(), 1, "the request's row is kept");
    assert!(inspection.correlations.is_empty(), "the wait is over");

    let (lines, inspection) = run_boundary_call(
        fresh,
        r#"{"channels":{"bank":[{"respond":{"ok":true},"after":"PT10S"}]}}"#,
    );
    assert!(lines
        .iter()
        .any(|l| l["kind"] == "end" && l["node"] == "answered"));
    assert!(!lines.iter().any(|l| l["kind"] == "boundary"));
    assert_eq!(inspection.final_line()["status"], "completed");
}
