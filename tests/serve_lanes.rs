//! `qflow serve` with many attempts and deliveries in flight on its lanes,
//! killed with SIGKILL. Afterwards no instance is lost; every in-flight task
//! attempt is decided as an unknown outcome (`q.handler.interrupted`) and
//! never run a second time; every in-flight delivery is delivered again
//! with its one idempotency key (no new attempt, no new key). On a SQLite
//! file and on a fresh PostgreSQL database (`support::stores`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::serve::{agent, post, Serve};
use support::stores::Fresh;

/// How many instances of each model are in flight when serve is killed.
const N: usize = 10;

const TASK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="charge" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" name="Charge" q:task="payments.charge">
      <extensionElements>
        <q:retry maxAttempts="3" backoff="PT1S" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#;

const CALL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <q:channelConfig channel="bank" maxDeliveries="5" deliveryInterval="PT0.5S"/>
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

fn state(s: &Serve, id: &str) -> Value {
    let mut resp = agent()
        .get(format!("{}/instances/{id}", s.url))
        .call()
        .unwrap();
    serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

crate::on_both_stores!(
    kill_9_with_many_in_flight_decides_each_attempt_once_and_redelivers_each_request
);

fn kill_9_with_many_in_flight_decides_each_attempt_once_and_redelivers_each_request(fresh: &Fresh) {
    let d = fresh.dir();
    let db = fresh.db();
    for (file, model) in [("task.bpmn", TASK), ("call.bpmn", CALL)] {
        std::fs::write(d.join(file), model).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
            .current_dir(d)
            .args(["deploy", file, "--db", &db])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The counterpart: the first delivery of each request is held until
    // serve is dead (in flight when it dies, however long the starts took);
    // a later one is taken at once. Every key seen is counted.
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let bank = format!("http://{}/authorize", server.server_addr().to_ip().unwrap());
    let keys: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let log = keys.clone();
    let held = killed.clone();
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let log = log.clone();
            let held = held.clone();
            std::thread::spawn(move || {
                let key = req
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Idempotency-Key"))
                    .map(|h| h.value.to_string())
                    .unwrap_or_default();
                let first = {
                    let mut m = log.lock().unwrap();
                    let n = m.entry(key).or_insert(0);
                    *n += 1;
                    *n == 1
                };
                let until = Instant::now() + Duration::from_secs(60);
                while first
                    && !held.load(std::sync::atomic::Ordering::SeqCst)
                    && Instant::now() < until
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = req.respond(tiny_http::Response::empty(202));
            });
        }
    });

    // The charge handler records each run and its process group, then hangs.
    let script =
        "#!/bin/sh\necho \"$QFLOW_INSTANCE\" >> runs.log\necho $$ >> pids.log\nexec sleep 30\n";
    std::fs::write(d.join("charge.sh"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.join("charge.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        d.join("handlers.toml"),
        format!(
            "[tasks.\"payments.charge\"]\ncommand = \"./charge.sh\"\ntimeout = \"PT60S\"\n\
             [channels.bank]\nurl = \"{bank}\"\ntimeout = \"PT10S\"\n"
        ),
    )
    .unwrap();

    let s = support::serve::spawn(d, &db, &[]);
    let (mut tasks, mut calls) = (Vec::new(), Vec::new());
    for _ in 0..N {
        for (process, ids) in [("charge", &mut tasks), ("pay", &mut calls)] {
            let (status, v) = post(
                &format!("{}/processes/{process}/instances", s.url),
                None,
                &json!({"amount": 7}),
            );
            assert_eq!(status, 201, "{v}");
            ids.push(v["instance"].as_str().unwrap().to_string());
        }
    }
    // Every attempt and every delivery is in flight at once: on lanes,
    // not one after the other.
    wait_until("every handler to run", || {
        lines(&d.join("runs.log")).len() == N
    });
    wait_until("every request to be out", || {
        keys.lock().unwrap().len() == N
    });
    drop(s); // SIGKILL, with 2N requests in flight
    for pid in lines(&d.join("pids.log")) {
        let _ = Command::new("kill").arg("-9").arg(pid).status();
    }
    killed.store(true, std::sync::atomic::Ordering::SeqCst);

    let s = support::serve::spawn(d, &db, &[]);
    wait_until("every interrupted attempt to be decided", || {
        tasks
            .iter()
            .all(|id| state(&s, id)["for"] == "reconciliation")
    });
    for id in &tasks {
        let st = state(&s, id);
        assert_eq!(st["code"], "q.handler.interrupted", "{st}");
    }
    wait_until("every request to be delivered again", || {
        keys.lock().unwrap().values().all(|n| *n >= 2)
    });
    std::thread::sleep(Duration::from_millis(300));
    let runs = lines(&d.join("runs.log"));
    assert_eq!(runs.len(), N, "each handler ran once: {runs:?}");
    for id in &tasks {
        assert_eq!(runs.iter().filter(|r| *r == id).count(), 1, "{id}");
    }
    let seen = keys.lock().unwrap().clone();
    let want: Vec<String> = calls.iter().map(|id| format!("{id}/authorize/1")).collect();
    let mut got: Vec<String> = seen.keys().cloned().collect();
    let mut want_sorted = want.clone();
    got.sort();
    want_sorted.sort();
    assert_eq!(got, want_sorted, "the same keys, no new attempt");
    for id in calls.iter().chain(&tasks) {
        assert_eq!(state(&s, id)["status"], "waiting", "{id}: nothing lost");
    }
}
