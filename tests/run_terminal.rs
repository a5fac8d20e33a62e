//! The terminal record keeps why the operation cannot succeed, with enough
//! to act on: its class, the first and last attempt's time and the
//! dependency (the task's handler or the call's channel), in the snapshot's
//! `failure` record, the incident, and `qflow run`'s final line.

use std::process::Command;

use serde_json::Value;

mod support;
use support::stores::{open, Fresh};

fn run(model: &str, scenario: &str, db: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "run",
            model,
            "--scenario",
            scenario,
            "--format",
            "json",
            "--db",
        ])
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

fn failed_incident(db: &str, instance: &str) -> String {
    let store = open(db);
    store
        .incidents(instance)
        .unwrap()
        .into_iter()
        .find(|i| i.kind.as_str() == "failed")
        .expect("a failed incident")
        .message
}

crate::on_both_stores!(the_terminal_record_keeps_class_first_and_last_attempt_and_the_dependency);

fn the_terminal_record_keeps_class_first_and_last_attempt_and_the_dependency(fresh: &Fresh) {
    // A registered task: six attempts over the DBG-08 schedule.
    let db = fresh.db();
    let end = run(
        "samples/dbg08-long-outage.bpmn",
        "samples/scenarios/dbg08-long-outage.json",
        &db,
    );
    assert_eq!(end["class"], "transient", "{end}");
    assert_eq!(end["task"], "payments.charge", "{end}");
    assert_eq!(
        (
            end["first_attempt_s"].as_i64(),
            end["last_attempt_s"].as_i64()
        ),
        (Some(0), Some(46_860)),
        "attempt 1 at once, attempt 6 after 60+300+1500+7500+37500 s: {end}"
    );
    let store = open(&db);
    let row = store.instance("dbg08-1").unwrap().unwrap();
    let snap = qflow_engine::instance::snapshot::Snapshot::decode(&row.snapshot).unwrap();
    let f = snap.failure().unwrap();
    assert_eq!(
        (f.task.as_deref(), f.first_attempt_ms, f.last_attempt_ms),
        (Some("payments.charge"), Some(0), Some(46_860_000))
    );
    let incident = failed_incident(&db, "dbg08-1");
    assert!(
        incident.contains("class transient")
            && incident.contains("task payments.charge")
            && incident.contains("attempts from +0s to +13h 1m"),
        "{incident}"
    );
    // A channel call: the channel is the dependency; its attempts started
    // when each request was sent, the last one timed out after it.
    let db = fresh.db();
    let end = run(
        "samples/bank-authorize.bpmn",
        "samples/scenarios/call-silent-forever.json",
        &db,
    );
    assert_eq!(
        (
            end["code"].as_str(),
            end["channel"].as_str(),
            end["class"].as_str()
        ),
        (Some("q.timeout"), Some("bank"), Some("transient")),
        "{end}"
    );
    assert_eq!(end["first_attempt_s"], 0, "{end}");
    // Attempt 4 was sent at +413.118 s (jittered, seeded) and timed out 30 s later.
    assert_eq!(end["last_attempt_s"].as_f64(), Some(413.118), "{end}");
    assert!(failed_incident(&db, "bank-authorize-1").contains("channel bank"));
}
