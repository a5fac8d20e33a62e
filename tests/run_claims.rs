//! Claims and clocks as a user meets them through `qflow run --db`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

mod support;
use support::stores::{open, Fresh};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn qflow(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("qflow runs")
}

crate::on_both_stores!(an_instance_claimed_by_a_live_process_is_not_run_by_a_second_one);

fn an_instance_claimed_by_a_live_process_is_not_run_by_a_second_one(fresh: &Fresh) {
    let db = fresh.db();
    let db_s = db.as_str();
    let model = "samples/dbg08-long-outage.bpmn";
    let first = qflow(&[
        "run", model, "--db", db_s, "--until", "PT2M", "--format", "json",
    ]);
    assert!(first.status.success());
    // Another live process (this test, under another host name) holds the claim.
    let mut store = open(&db);
    let owner = format!("elsewhere:{}", std::process::id());
    store
        .claim(
            "dbg08-1",
            &owner,
            qflow_engine::runtime::clock::system_now_ms(),
        )
        .unwrap();
    let second = qflow(&["run", model, "--db", db_s, "--format", "json"]);
    assert_eq!(second.status.code(), Some(2));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("being decided by elsewhere:"), "{err}");
    // How long the claim lasts, in seconds: never a wall-clock instant in
    // epoch milliseconds for the reader to convert.
    assert!(
        err.contains("its claim lasts") && err.contains(" s more"),
        "{err}"
    );
    assert!(!err.contains("wall-clock ms"), "{err}");
    // Nothing was decided by the refused run.
    let attempts = store
        .history("dbg08-1")
        .unwrap()
        .iter()
        .filter(|h| h.kind == "attempt")
        .count();
    assert_eq!(attempts, 2);
    // Released: the next run resumes and finishes.
    store.release("dbg08-1", &owner).unwrap();
    let third = qflow(&["run", model, "--db", db_s, "--format", "json"]);
    assert!(third.status.success());
    assert!(String::from_utf8_lossy(&third.stdout).contains(r#""reason":"exhausted""#));
}

#[test]
fn the_system_clock_waits_for_real_time_between_steps() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("wait.bpmn");
    std::fs::write(
        &model,
        r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="w"/>
    <bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>PT0.5S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="w" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#,
    )
    .unwrap();
    let m = model.to_str().unwrap();
    let t = Instant::now();
    let out = qflow(&["run", m, "--clock", "system", "--format", "json"]);
    let real = t.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains(r#""status":"completed""#),
        "{text}"
    );
    assert!(real.as_millis() >= 500, "the timer fired early: {real:?}");
    // The virtual clock skips the same wait.
    let out = qflow(&["run", m, "--format", "json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(r#""at_s":0.5,"kind":"timer""#), "{text}");
}
