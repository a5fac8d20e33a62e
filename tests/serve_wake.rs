//! What another process commits wakes `qflow serve`: an answer given with
//! `qflow respond` and a pause lifted with `qflow unpause` (each its own
//! process, its own connection) are decided by the serving process. On
//! PostgreSQL the commit's `NOTIFY qflow_work` wakes it, and its log says
//! so; on SQLite (no notifications) the safety poll finds the same work
//! and the log says nothing of a wake. Each test on a SQLite file and on a
//! fresh PostgreSQL database (`support::stores`).

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::serve::{get, post, Serve};
use support::stores::Fresh;

/// What the serving process's log says when another process's commit
/// woke it.
const WOKEN: &str = "woken by new work another process committed";

/// A channel call answered by its counterpart later (a long timeout: no
/// retry comes between).
const CALL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="pay" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
    <serviceTask id="authorize" name="Authorize" q:channel="bank">
      <extensionElements>
        <q:timeout duration="PT60S"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="authorize" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#;

/// One registered task.
const TASK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="charge" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" q:task="payments.charge"/>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#;

crate::on_both_stores!(
    an_answer_from_qflow_respond_is_decided_by_serve,
    an_unpause_from_another_process_is_decided_by_serve,
);

fn qflow(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "qflow {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn serve(dir: &Path, db: &str, model: &str, handlers: &str) -> Serve {
    std::fs::write(dir.join("model.bpmn"), model).unwrap();
    qflow(dir, &["deploy", "model.bpmn", "--db", db]);
    std::fs::write(dir.join("handlers.toml"), handlers).unwrap();
    support::serve::spawn(dir, db, &[])
}

fn start(s: &Serve, process: &str) -> String {
    let (status, body) = post(
        &format!("{}/processes/{process}/instances", s.url),
        None,
        &json!({}),
    );
    assert_eq!(status, 201, "{body}");
    body["instance"].as_str().unwrap().to_string()
}

/// The instance's state once `done` holds (at most 20 s).
fn wait_for(s: &Serve, instance: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, state) = get(&format!("{}/instances/{instance}", s.url));
        if done(&state) || Instant::now() > deadline {
            return state;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the log said after `mark` (a length of it read earlier).
fn log_since(s: &Serve, mark: usize) -> String {
    s.stderr.lock().unwrap()[mark..].to_string()
}

/// Whether the wake is in the log as each store promises: said on
/// PostgreSQL, never on SQLite.
fn assert_wake_logged(fresh: &Fresh, log: &str) {
    if fresh.is_postgres() {
        assert!(log.contains(WOKEN), "no wake in the log:\n{log}");
    } else {
        assert!(!log.contains(WOKEN), "SQLite sends no notification:\n{log}");
    }
}

fn an_answer_from_qflow_respond_is_decided_by_serve(fresh: &Fresh) {
    let (dir, db) = (fresh.dir(), fresh.db());
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/authorize", server.server_addr().to_ip().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let key = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Idempotency-Key"))
                .map(|h| h.value.to_string())
                .unwrap_or_default();
            let _ = req.respond(tiny_http::Response::empty(202));
            let _ = tx.send(key);
        }
    });
    let handlers = format!("[channels.bank]\nurl = \"{url}\"\ntimeout = \"PT2S\"\n");
    let s = serve(dir, &db, CALL, &handlers);
    let id = start(&s, "pay");
    let key = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    let delivered = wait_for(&s, &id, |v| v["status"] == "waiting");
    assert_eq!(delivered["status"], "waiting", "{delivered}");
    let mark = s.stderr.lock().unwrap().len();
    let out = qflow(
        dir,
        &[
            "respond",
            &format!("{id}/authorize"),
            "--db",
            &db,
            "--key",
            &key,
            "--body",
            "{}",
            "--format",
            "json",
        ],
    );
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict["verdict"], "accepted", "{verdict}");
    // The answer was taken by `qflow respond`; what follows it (the end
    // event) is decided by the serving process, woken for it.
    let state = wait_for(&s, &id, |v| v["status"] == "completed");
    assert_eq!(state["status"], "completed", "{state}");
    let lines = s.lines_once(|l| l["instance"] == id.as_str() && l["kind"] == "end");
    assert!(
        lines
            .iter()
            .any(|l| l["instance"] == id.as_str() && l["kind"] == "end"),
        "serve decided the end: {lines:?}"
    );
    assert_wake_logged(fresh, &log_since(&s, mark));
}

fn an_unpause_from_another_process_is_decided_by_serve(fresh: &Fresh) {
    let (dir, db) = (fresh.dir(), fresh.db());
    std::fs::write(dir.join("model.bpmn"), TASK).unwrap();
    qflow(dir, &["deploy", "model.bpmn", "--db", &db]);
    qflow(
        dir,
        &["pause", "--dependency", "payments.charge", "--db", &db],
    );
    let s = serve(
        dir,
        &db,
        TASK,
        "[tasks.\"payments.charge\"]\ncommand = \"true\"\n",
    );
    let id = start(&s, "charge");
    // Held: its attempt waits for the unpause.
    let held = wait_for(&s, &id, |v| v["tokens"]["charge_card"] == "ready");
    assert_eq!(held["tokens"]["charge_card"], "ready", "{held}");
    let mark = s.stderr.lock().unwrap().len();
    qflow(
        dir,
        &["unpause", "--dependency", "payments.charge", "--db", &db],
    );
    let state = wait_for(&s, &id, |v| v["status"] == "completed");
    assert_eq!(state["status"], "completed", "{state}");
    assert_wake_logged(fresh, &log_since(&s, mark));
}
