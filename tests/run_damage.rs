//! Damaged durable state, written by hand into the database with rusqlite
//! the way a bad disk, a bad restore or a bad hand would, then met by
//! `qflow run` as a user runs it. A damaged value never wedges an instance
//! and never turns into success. On a SQLite file (damaged with rusqlite)
//! and on a fresh PostgreSQL database (damaged with the postgres client).

use std::path::Path;
mod support;
use std::process::Output;
use support::stores::{open, Fresh};
use support::{lines, qflow};

use serde_json::Value;

/// A channel call with a retry policy; a second model (another process id)
/// shares the database in the replica test.
const CALL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="PROC" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="auth"/>
    <bpmn:serviceTask id="auth" q:channel="bank" q:operation="authorize">
      <bpmn:extensionElements>
        <q:timeout duration="PT30S"/>
        <q:retry maxAttempts="4" backoff="PT10S" jitter="none"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="auth" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

/// Silent twice (two timeouts), then an answer.
const CALL_SCENARIO: &str = r#"{"channels": {"bank": [{"silent": true}, {"silent": true}, {"respond": {"approved": true}}]}}"#;

const TASK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="charge" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:serviceTask id="t" q:task="payments.charge">
      <bpmn:extensionElements><q:retry maxAttempts="3" backoff="PT1M" jitter="none"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

const TASK_SCENARIO: &str = r#"{"tasks": {"payments.charge": [{"fail": {"code": "DOWN", "class": "transient"}}, {"ok": {}}]}}"#;

/// Write a model and its scenario into `dir`; returns the model's file name.
fn model(dir: &Path, name: &str, source: &str, scenario: &str) -> String {
    std::fs::write(dir.join(format!("{name}.bpmn")), source).unwrap();
    std::fs::write(dir.join(format!("{name}.json")), scenario).unwrap();
    format!("{name}.bpmn")
}

/// Run `file` with its scenario on `db`, `extra` arguments after.
fn run(dir: &Path, db: &str, file: &str, extra: &[&str]) -> Output {
    let scenario = file.replace(".bpmn", ".json");
    let mut args = vec![
        "run",
        file,
        "--db",
        db,
        "--scenario",
        &scenario,
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = qflow(dir, &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "qflow {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The damage: one write, as a hand would: with rusqlite into a SQLite
/// file, with the postgres client into a PostgreSQL database.
fn write_snapshot(db: &str, instance: &str, bytes: &[u8]) {
    let n = if db.starts_with("postgres") {
        let mut client = postgres::Client::connect(db, postgres::NoTls).unwrap();
        client
            .execute(
                "UPDATE instances SET snapshot = $2 WHERE id = $1",
                &[&instance, &bytes],
            )
            .unwrap() as usize
    } else {
        let conn = rusqlite::Connection::open(db).unwrap();
        conn.execute(
            "UPDATE instances SET snapshot = ?2 WHERE id = ?1",
            rusqlite::params![instance, bytes],
        )
        .unwrap()
    };
    assert_eq!(n, 1);
}

fn stored(db: &str, instance: &str) -> (String, Vec<u8>) {
    let store = open(db);
    let row = store.instance(instance).unwrap().unwrap();
    (row.status.as_str().to_string(), row.snapshot)
}

fn edit_snapshot(db: &str, instance: &str, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let (_, bytes) = stored(db, instance);
    let mut v: Value = serde_json::from_slice(&bytes).unwrap();
    edit(v.as_object_mut().unwrap());
    write_snapshot(db, instance, v.to_string().as_bytes());
}

crate::on_both_stores!(
    a_damaged_call_counter_reads_as_zero_is_reported_and_never_reuses_a_key,
    a_damaged_task_counter_reads_as_zero_and_the_task_goes_on,
    a_frontier_token_that_does_not_decode_fails_the_instance_and_keeps_the_bytes,
    snapshot_bytes_that_are_not_an_object_fail_that_instance_and_the_others_are_served,
);

fn a_damaged_call_counter_reads_as_zero_is_reported_and_never_reuses_a_key(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    let file = model(dir, "call", &CALL.replace("PROC", "p"), CALL_SCENARIO);
    // Attempt 1 times out at 30 s; the node parks for its re-drive at 40 s.
    let first = run(dir, &db, &file, &["--until", "PT35S"]);
    let end = lines(&first).pop().unwrap();
    assert_eq!(end["for"], "retry", "{end}");
    edit_snapshot(&db, "p-1", |m| {
        assert_eq!(m["attempts.auth"], 1);
        m.insert("attempts.auth".into(), Value::from("x"));
    });
    let second = run(dir, &db, &file, &[]);
    let out = lines(&second);
    let damaged = out
        .iter()
        .find(|l| l["kind"] == "damaged")
        .unwrap_or_else(|| panic!("a damaged line: {out:?}"));
    assert_eq!(
        (&damaged["key"], &damaged["raw"], &damaged["read_as"]),
        (
            &Value::from("attempts.auth"),
            &Value::from("x"),
            &Value::from(0)
        )
    );
    let mut keys: Vec<String> = lines(&first)
        .iter()
        .chain(&out)
        .filter(|l| l["kind"] == "attempt")
        .map(|l| l["idempotencyKey"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, ["p-1/auth/1", "p-1/auth/2", "p-1/auth/3"], "{out:?}");
    keys.dedup();
    assert_eq!(keys.len(), 3, "no key is ever sent twice");
    let end = out.last().unwrap();
    assert_eq!(
        end["status"], "completed",
        "the instance is not wedged: {end}"
    );
    let store = open(&db);
    let incident = store
        .incidents("p-1")
        .unwrap()
        .into_iter()
        .find(|i| i.kind.as_str() == "damaged")
        .expect("an incident");
    assert!(
        incident.message.contains("attempts.auth") && incident.message.contains("\"x\""),
        "{}",
        incident.message
    );
}

fn a_damaged_task_counter_reads_as_zero_and_the_task_goes_on(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    let file = model(dir, "task", TASK, TASK_SCENARIO);
    run(dir, &db, &file, &["--until", "PT30S"]);
    edit_snapshot(&db, "charge-1", |m| {
        m.insert("attempts.t".into(), Value::from(-7));
        m.insert("first_attempt.t".into(), Value::from("yesterday"));
    });
    let out = lines(&run(dir, &db, &file, &[]));
    let damaged: Vec<(&str, &Value)> = out
        .iter()
        .filter(|l| l["kind"] == "damaged")
        .map(|l| (l["key"].as_str().unwrap(), &l["raw"]))
        .collect();
    assert_eq!(
        damaged,
        [
            ("attempts.t", &Value::from(-7)),
            ("first_attempt.t", &Value::from("yesterday"))
        ]
    );
    let attempt = out.iter().find(|l| l["kind"] == "attempt").unwrap();
    assert_eq!(attempt["attempt"], 1, "the counter read as zero: {attempt}");
    assert_eq!(out.last().unwrap()["status"], "completed");
    let store = open(&db);
    assert_eq!(
        store
            .incidents("charge-1")
            .unwrap()
            .iter()
            .filter(|i| i.kind.as_str() == "damaged")
            .count(),
        2
    );
}

fn a_frontier_token_that_does_not_decode_fails_the_instance_and_keeps_the_bytes(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    let file = model(dir, "call", &CALL.replace("PROC", "p"), CALL_SCENARIO);
    run(dir, &db, &file, &["--until", "PT5S"]);
    edit_snapshot(&db, "p-1", |m| {
        m.insert(
            "frontier".into(),
            serde_json::json!([{"node": "auth", "state": "sleeping"}]),
        );
    });
    let (_, damaged) = stored(&db, "p-1");
    let out = lines(&run(dir, &db, &file, &[]));
    let end = out.last().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["code"].as_str()),
        (Some("failed"), Some("q.snapshot.damaged")),
        "never COMPLETED on a frontier that only looks empty: {out:?}"
    );
    let line = out.iter().find(|l| l["kind"] == "damaged").unwrap();
    assert_eq!(line["key"], "frontier");
    let (status, bytes) = stored(&db, "p-1");
    assert_eq!(status, "failed");
    assert_eq!(bytes, damaged, "the stored bytes are kept untouched");
    // `qflow show` never calls a node of it completed, and its repair line
    // is not a migrate that would be refused.
    let shown = qflow(dir, &["show", "p-1", "--db", &db]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        !text.contains("completed") && text.contains("auth  call       unknown"),
        "{text}"
    );
    assert!(
        text.contains("correct it in the database first") && !text.contains("--to MODEL"),
        "{text}"
    );
    let shown = qflow(dir, &["show", "p-1", "--db", &db, "--format", "json"]);
    let v: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let states: Vec<(&str, &str)> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["node"].as_str().unwrap(), n["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [("s", "unknown"), ("auth", "unknown"), ("e", "idle")],
        "{v}"
    );
    let refused = qflow(dir, &["migrate", "p-1", "--to", "1", "--db", &db]);
    assert_ne!(
        refused.status.code(),
        Some(0),
        "migrate refuses it, as show says"
    );
}

fn snapshot_bytes_that_are_not_an_object_fail_that_instance_and_the_others_are_served(
    fresh: &Fresh,
) {
    let dir = fresh.dir();
    let db = fresh.db();
    let a = model(dir, "a", &CALL.replace("PROC", "pa"), CALL_SCENARIO);
    let b = model(dir, "b", &CALL.replace("PROC", "pb"), CALL_SCENARIO);
    run(dir, &db, &a, &["--until", "PT5S"]);
    run(dir, &db, &b, &["--until", "PT5S"]);
    let garbage = b"[1,2,\"not a snapshot\"".to_vec();
    write_snapshot(&db, "pa-1", &garbage);
    // One replica serves every unfinished instance of the database.
    let served = qflow(
        dir,
        &[
            "run",
            &b,
            "--db",
            &db,
            "--scenario",
            "b.json",
            "--replica",
            "--format",
            "json",
        ],
    );
    assert_eq!(
        served.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&served.stderr)
    );
    let (status, bytes) = stored(&db, "pa-1");
    assert_eq!((status.as_str(), bytes), ("failed", garbage.clone()));
    assert_eq!(stored(&db, "pb-2").0, "completed");
    // The failed instance is inspectable: its record and its raw bytes.
    let store = open(&db);
    let end = qflow_engine::local::final_state(&store, "pa-1")
        .unwrap()
        .to_json();
    assert_eq!(
        (
            end["status"].as_str(),
            end["code"].as_str(),
            end["reason"].as_str()
        ),
        (Some("failed"), Some("q.snapshot.damaged"), Some("damaged")),
        "{end}"
    );
    let graph = qflow_engine::runtime::shell::deployed_graph(
        &store,
        store.instance("pa-1").unwrap().unwrap().deployment_id,
    )
    .unwrap();
    let seen = qflow_engine::inspect::Inspection::read(&store, &graph, "pa-1").unwrap();
    assert_eq!(
        seen.raw_snapshot.as_deref(),
        Some("[1,2,\"not a snapshot\"")
    );
    assert_eq!(seen.failure.unwrap().code, "q.snapshot.damaged");
    // And `qflow show` says so, with the bytes, in words and in JSON.
    let shown = qflow(dir, &["show", "pa-1", "--db", &db]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("damaged: the stored bytes are not a snapshot")
            && text.contains("[1,2,\"not a snapshot\""),
        "{text}"
    );
    let shown = qflow(dir, &["show", "pa-1", "--db", &db, "--format", "json"]);
    let v: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(v["raw_snapshot"], "[1,2,\"not a snapshot\"");
    assert!(store
        .incidents("pa-1")
        .unwrap()
        .iter()
        .any(|i| i.kind.as_str() == "damaged" && i.message.contains("q.snapshot.damaged")));
}
