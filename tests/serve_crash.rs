//! A kill -9 of `qflow serve` while a delivery is in flight, and again while
//! a handler is in flight. Afterwards no instance is lost, the request keeps
//! its one idempotency key (re-delivered, never re-issued as a new attempt),
//! and the handler's unknown outcome waits for a reconciliation instead of
//! being run a second time; reconciled, the instance completes. On a
//! SQLite file and on a fresh PostgreSQL database (`support::stores`).

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::serve::{agent, post, Serve};
use support::stores::Fresh;

/// A channel call (its request relayed over HTTP), then a registered task.
const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <q:channelConfig channel="bank" maxDeliveries="5" deliveryInterval="PT0.5S"/>
  <process id="order" isExecutable="true">
    <startEvent id="start" name="Placed"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
    <serviceTask id="authorize" name="Authorize" q:channel="bank">
      <extensionElements>
        <q:timeout duration="PT60S"/>
        <q:retry maxAttempts="2" backoff="PT1S" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="authorize" targetRef="charge"/>
    <serviceTask id="charge" name="Charge" q:task="payments.charge">
      <extensionElements>
        <q:retry maxAttempts="3" backoff="PT1S" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f3" sourceRef="charge" targetRef="done"/>
    <endEvent id="done" name="Done"/>
  </process>
</definitions>
"#;

fn serve(dir: &Path, db: &str) -> Serve {
    support::serve::spawn(dir, db, &[])
}

fn state(s: &Serve, id: &str) -> Value {
    let mut resp = agent()
        .get(format!("{}/instances/{id}", s.url))
        .call()
        .unwrap();
    serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

crate::on_both_stores!(kill_9_mid_delivery_and_mid_handler_loses_nothing_and_runs_nothing_twice);

fn kill_9_mid_delivery_and_mid_handler_loses_nothing_and_runs_nothing_twice(fresh: &Fresh) {
    if support::slow_test_left_out("serve's kill -9 with attempts in flight") {
        return;
    }
    let d = fresh.dir();
    let db = fresh.db();
    std::fs::write(d.join("model.bpmn"), MODEL).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(d)
        .args(["deploy", "model.bpmn", "--db", &db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The counterpart: the first delivery is held 3 s (in flight when serve
    // dies), later ones are taken at once. Every request's key is recorded.
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let bank = format!("http://{}/authorize", server.server_addr().to_ip().unwrap());
    let keys: Arc<Mutex<Vec<String>>> = Arc::default();
    let (got, deliveries) = mpsc::channel::<(String, String)>();
    let log = keys.clone();
    std::thread::spawn(move || {
        for (i, mut req) in server.incoming_requests().enumerate() {
            let log = log.clone();
            let got = got.clone();
            std::thread::spawn(move || {
                let mut body = String::new();
                let _ = req.as_reader().read_to_string(&mut body);
                let h = |n: &'static str| {
                    req.headers()
                        .iter()
                        .find(|h| h.field.equiv(n))
                        .map(|h| h.value.to_string())
                        .unwrap_or_default()
                };
                let (key, reply) = (h("Idempotency-Key"), h("Qflow-Reply-To"));
                log.lock().unwrap().push(key.clone());
                let _ = got.send((key, reply));
                if i == 0 {
                    std::thread::sleep(Duration::from_secs(3));
                }
                let _ = req.respond(tiny_http::Response::empty(202));
            });
        }
    });

    // The charge handler records each run and its pid, then hangs.
    let script = "#!/bin/sh\necho run >> runs.log\necho $$ > charge.pid\nexec sleep 30\n";
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

    // 1. Killed while the first delivery is in flight.
    let s = serve(d, &db);
    let (status, started) = post(
        &format!("{}/processes/order/instances", s.url),
        None,
        &json!({"amount": 7}),
    );
    assert_eq!(status, 201, "{started}");
    let id = started["instance"].as_str().unwrap().to_string();
    let (first_key, _) = deliveries.recv_timeout(Duration::from_secs(10)).unwrap();
    drop(s); // SIGKILL, mid-delivery

    // 2. Restarted: the same request is delivered again, with its one key.
    let s = serve(d, &db);
    let (again_key, reply_to) = deliveries.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        again_key, first_key,
        "a re-delivery of the same request keeps its key"
    );
    assert_eq!(first_key, format!("{id}/authorize/1"));
    let (status, v) = post(&reply_to, Some(&again_key), &json!({"approved": true}));
    assert_eq!(
        (status, v["verdict"].as_str()),
        (200, Some("accepted")),
        "{v}"
    );

    // 3. Killed while the charge handler runs.
    // (The shell creates the file before it writes the number in it.)
    let pid_of = || {
        std::fs::read_to_string(d.join("charge.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
    };
    wait_until("the handler to start", || pid_of().is_some());
    let pid = pid_of().unwrap();
    assert!(pid > 1);
    drop(s); // SIGKILL, mid-handler
    let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();

    // 4. Restarted: the attempt is an unknown outcome, not a second run.
    let s = serve(d, &db);
    wait_until("the interrupted attempt to be decided", || {
        state(&s, &id)["for"] == "reconciliation"
    });
    let st = state(&s, &id);
    assert_eq!(st["code"], "q.handler.interrupted", "{st}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        std::fs::read_to_string(d.join("runs.log"))
            .unwrap()
            .lines()
            .count(),
        1,
        "the handler ran once"
    );

    // 5. Reconciled by the operator: the charge did happen.
    let (status, v) = post(
        &format!("{}/instances/{id}/resolve", s.url),
        None,
        &json!({"node": "charge", "as": "succeeded", "variables": {"chargeId": "manual"}}),
    );
    assert_eq!(status, 200, "{v}");
    wait_until("completion", || state(&s, &id)["status"] == "completed");
    // Nothing lost, no key issued for a second attempt of the call.
    let seen = keys.lock().unwrap().clone();
    assert!(seen.iter().all(|k| *k == first_key), "{seen:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("runs.log"))
            .unwrap()
            .lines()
            .count(),
        1
    );
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(d)
        .args(["instances", "--db", &db, "--format", "json"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains(&id), "{listed}");
}
