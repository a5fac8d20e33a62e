//! `qflow serve` on loopback: real handlers on the wall clock, channel calls
//! relayed over HTTP to a test counterpart that answers, stays silent,
//! answers late or fails deliveries, and every verdict of the decision
//! table given over real HTTP (docs/handlers.md). Policies are seconds
//! long so each test stays short. Each test runs on a SQLite file and on a
//! fresh PostgreSQL database (`support::stores`).

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::serve::{agent, get, post, Serve};
use support::stores::{open, Fresh};

/// A channel call with a 2 s timeout, 3 attempts 1 s apart, and an outbox
/// curve of 3 deliveries 300 ms apart; then a gateway on `approved`.
const CALL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <q:channelConfig channel="bank" maxDeliveries="3" deliveryInterval="PT0.3S"/>
  <process id="pay" isExecutable="true">
    <startEvent id="start" name="Requested"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
    <serviceTask id="authorize" name="Authorize" q:channel="bank">
      <extensionElements>
        <q:timeout duration="PT2S"/>
        <q:retry maxAttempts="3" backoff="PT1S" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="authorize" targetRef="decide"/>
    <exclusiveGateway id="decide" name="Approved?" default="no"/>
    <sequenceFlow id="yes" name="yes" sourceRef="decide" targetRef="approved">
      <conditionExpression xsi:type="tFormalExpression">approved == true</conditionExpression>
    </sequenceFlow>
    <sequenceFlow id="no" name="no" sourceRef="decide" targetRef="declined"/>
    <endEvent id="approved" name="Approved"/>
    <endEvent id="declined" name="Declined"/>
  </process>
</definitions>
"#;

/// A registered task with 3 attempts 1 s apart.
const TASK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="charge" isExecutable="true">
    <startEvent id="start" name="Placed"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" name="Charge" q:task="payments.charge">
      <extensionElements>
        <q:retry maxAttempts="3" backoff="PT1S" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="done"/>
    <endEvent id="done" name="Charged"/>
  </process>
</definitions>
"#;

crate::on_both_stores!(
    an_answered_call_is_accepted_and_routes_on_the_answer,
    a_silent_then_late_counterpart_gets_retry_pending_superseded_and_unknown_request,
    failing_deliveries_poison_each_attempt_and_the_failed_instance_says_so,
    a_command_handler_recovers_from_a_transient_outage_on_the_wall_clock,
    listening_beyond_loopback_needs_a_token_and_the_token_is_checked,
    qflow_respond_answers_from_the_command_line_with_the_same_verdicts,
    two_serve_processes_on_one_database_run_each_attempt_once,
    two_waiting_answers_overlap_and_the_first_freed_is_answered_first,
);

fn qflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
}

fn deploy(dir: &Path, db: &str, model: &str) {
    std::fs::write(dir.join("model.bpmn"), model).unwrap();
    let out = qflow()
        .current_dir(dir)
        .args(["deploy", "model.bpmn", "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn serve(dir: &Path, db: &str, handlers: &str, env: &[(&str, &str)]) -> Serve {
    std::fs::write(dir.join("handlers.toml"), handlers).unwrap();
    support::serve::spawn(dir, db, env)
}

/// Poll the instance's state until `done` holds (at most 20 s).
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

fn start(s: &Serve, process: &str, vars: Value) -> String {
    let (status, body) = post(
        &format!("{}/processes/{process}/instances", s.url),
        None,
        &vars,
    );
    assert_eq!(status, 201, "{body}");
    body["instance"].as_str().unwrap().to_string()
}

/// One request the counterpart received.
#[derive(Debug, Clone)]
struct Received {
    key: String,
    reply_to: String,
    body: Value,
}

/// A test counterpart on loopback: each request is recorded and answered
/// with the status `deliver` gives for its index (2xx: taken).
fn counterpart(
    deliver: impl Fn(usize) -> u16 + Send + 'static,
) -> (String, mpsc::Receiver<Received>, Arc<Mutex<Vec<Received>>>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/authorize", server.server_addr().to_ip().unwrap());
    let (tx, rx) = mpsc::channel();
    let all: Arc<Mutex<Vec<Received>>> = Arc::default();
    let log = all.clone();
    std::thread::spawn(move || {
        for (i, mut req) in server.incoming_requests().enumerate() {
            let mut text = String::new();
            let _ = req.as_reader().read_to_string(&mut text);
            let header = |name: &'static str| {
                req.headers()
                    .iter()
                    .find(|h| h.field.equiv(name))
                    .map(|h| h.value.to_string())
                    .unwrap_or_default()
            };
            let got = Received {
                key: header("Idempotency-Key"),
                reply_to: header("Qflow-Reply-To"),
                body: serde_json::from_str(&text).unwrap_or(Value::Null),
            };
            log.lock().unwrap().push(got.clone());
            let status = deliver(i);
            let _ = req.respond(tiny_http::Response::empty(status));
            if (200..300).contains(&status) {
                let _ = tx.send(got);
            }
        }
    });
    (url, rx, all)
}

fn channel_handlers(url: &str) -> String {
    format!("[channels.bank]\nurl = \"{url}\"\ntimeout = \"PT2S\"\n")
}

fn an_answered_call_is_accepted_and_routes_on_the_answer(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    deploy(dir, &db, CALL);
    let (url, rx, _) = counterpart(|_| 202);
    let s = serve(dir, &db, &channel_handlers(&url), &[]);
    let id = start(&s, "pay", json!({"amount": 42}));
    let req = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the request is relayed");
    assert_eq!(req.body, json!({"amount": 42}));
    assert_eq!(req.key, format!("{id}/authorize/1"));
    assert_eq!(
        req.reply_to,
        format!("{}/correlations/{id}/authorize", s.url)
    );
    let (status, verdict) = post(&req.reply_to, Some(&req.key), &json!({"approved": true}));
    assert_eq!(
        (status, verdict["verdict"].as_str()),
        (200, Some("accepted"))
    );
    let state = wait_for(&s, &id, |v| v["status"] == "completed");
    assert_eq!(state["status"], "completed", "{state}");
    let ended: Vec<String> = s
        .lines_once(|l| l["kind"] == "end")
        .iter()
        .filter(|l| l["kind"] == "end")
        .filter_map(|l| l["node"].as_str().map(str::to_string))
        .collect();
    assert_eq!(ended, vec!["approved"]);
    // The decision the endpoint took is printed with the loop's own.
    let answered = s.lines_once(|l| l["kind"] == "response");
    assert!(
        answered.iter().any(|l| l["kind"] == "response"
            && l["verdict"] == "accepted"
            && l["instance"] == id.as_str()),
        "serve's output names the accepted response: {answered:?}"
    );
    // Answered again: the node is no longer waiting (the instance exists:
    // not a 404).
    let (status, verdict) = post(&req.reply_to, Some(&req.key), &json!({}));
    assert_eq!(
        (status, verdict["verdict"].as_str()),
        (409, Some("not-waiting")),
        "{verdict}"
    );
    // Nobody by that name.
    let (status, verdict) = post(
        &format!("{}/correlations/nobody/authorize", s.url),
        None,
        &json!({}),
    );
    assert_eq!(
        (status, verdict["verdict"].as_str()),
        (404, Some("no-such-instance"))
    );
}

fn a_silent_then_late_counterpart_gets_retry_pending_superseded_and_unknown_request(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    deploy(dir, &db, CALL);
    let (url, rx, _) = counterpart(|_| 202);
    let s = serve(dir, &db, &channel_handlers(&url), &[]);
    let id = start(&s, "pay", json!({}));
    // Attempt 1: silent. Its 2 s timeout parks the call for 1 s.
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let state = wait_for(&s, &id, |v| v["for"] == "retry");
    assert_eq!(state["for"], "retry", "{state}");
    let (status, v) = post(
        &first.reply_to,
        Some(&first.key),
        &json!({"approved": true}),
    );
    assert_eq!(
        (status, v["verdict"].as_str()),
        (409, Some("retry-pending")),
        "{v}"
    );
    // The re-drive sends attempt 2 with a fresh key.
    let second = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(second.key, format!("{id}/authorize/2"));
    let (status, v) = post(
        &first.reply_to,
        Some(&first.key),
        &json!({"approved": true}),
    );
    assert_eq!(
        (status, v["verdict"].as_str()),
        (409, Some("superseded")),
        "{v}"
    );
    assert_eq!(v["live_attempt"], 2);
    let (status, v) = post(
        &first.reply_to,
        Some(&format!("{id}/authorize/9")),
        &json!({}),
    );
    assert_eq!(
        (status, v["verdict"].as_str()),
        (409, Some("unknown-request")),
        "{v}"
    );
    // The live attempt's answer: declined is business data, not a failure.
    let (status, v) = post(
        &second.reply_to,
        Some(&second.key),
        &json!({"approved": false}),
    );
    assert_eq!(
        (status, v["verdict"].as_str()),
        (200, Some("accepted")),
        "{v}"
    );
    let state = wait_for(&s, &id, |v| v["status"] == "completed");
    assert_eq!(state["status"], "completed", "{state}");
}

fn failing_deliveries_poison_each_attempt_and_the_failed_instance_says_so(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    deploy(dir, &db, CALL);
    let (url, _rx, all) = counterpart(|_| 500);
    let s = serve(dir, &db, &channel_handlers(&url), &[]);
    let id = start(&s, "pay", json!({}));
    let state = wait_for(&s, &id, |v| v["status"] == "failed");
    assert_eq!(state["status"], "failed", "{state}");
    assert_eq!(state["code"], "q.delivery.poisoned");
    assert_eq!(state["attempts"], 3);
    // 3 attempts × 3 deliveries, each attempt's key on each of its deliveries.
    let keys: Vec<String> = all.lock().unwrap().iter().map(|r| r.key.clone()).collect();
    let want: Vec<String> = (1..=3)
        .flat_map(|a| std::iter::repeat_n(format!("{id}/authorize/{a}"), 3))
        .collect();
    assert_eq!(keys, want);
    // The honest verdict for a FAILED instance.
    let (status, v) = post(
        &format!("{}/correlations/{id}/authorize", s.url),
        None,
        &json!({"approved": true}),
    );
    assert_eq!(
        (status, v["verdict"].as_str()),
        (410, Some("failed")),
        "{v}"
    );
}

fn a_command_handler_recovers_from_a_transient_outage_on_the_wall_clock(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    deploy(dir, &db, TASK);
    let script = "#!/bin/sh\nn=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count\n\
                  cat >/dev/null\n\
                  if [ $n -le 1 ]; then echo '{\"code\":\"DOWN\",\"class\":\"transient\"}'; exit 1; fi\n\
                  echo \"{\\\"chargeId\\\":\\\"ch_$n\\\"}\"\n";
    std::fs::write(dir.join("charge.sh"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("charge.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let s = serve(
        dir,
        &db,
        "[tasks.\"payments.charge\"]\ncommand = \"./charge.sh\"\ntimeout = \"PT5S\"\n",
        &[],
    );
    let t0 = Instant::now();
    let id = start(&s, "charge", json!({"orderId": "A-1"}));
    let state = wait_for(&s, &id, |v| v["status"] == "completed");
    assert_eq!(state["status"], "completed", "{state}");
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "the 1 s backoff is waited for on the wall clock"
    );
    let attempts: Vec<Value> = s
        .lines_once(|l| l["kind"] == "end")
        .iter()
        .filter(|l| l["kind"] == "attempt")
        .cloned()
        .collect();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0]["code"], "DOWN");
    // Unknown process, bad variables.
    let (status, _) = post(
        &format!("{}/processes/nope/instances", s.url),
        None,
        &json!({}),
    );
    assert_eq!(status, 404);
    let (status, _) = post(
        &format!("{}/processes/charge/instances", s.url),
        None,
        &json!([1]),
    );
    assert_eq!(status, 422);
}

fn listening_beyond_loopback_needs_a_token_and_the_token_is_checked(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    deploy(dir, &db, TASK);
    std::fs::write(
        dir.join("handlers.toml"),
        "[tasks.\"payments.charge\"]\ncommand = \"true\"\n",
    )
    .unwrap();
    let out = qflow()
        .current_dir(dir)
        .args([
            "serve",
            "--db",
            &db,
            "--handlers",
            "handlers.toml",
            "--listen",
            "0.0.0.0:0",
        ])
        .env_remove("QFLOW_SERVE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("QFLOW_SERVE_TOKEN"));

    let s = serve(
        dir,
        &db,
        "[tasks.\"payments.charge\"]\ncommand = \"true\"\n",
        &[("QFLOW_SERVE_TOKEN", "s3cret")],
    );
    let (status, _) = get(&format!("{}/health", s.url));
    assert_eq!(status, 401);
    let mut resp = agent()
        .get(format!("{}/health", s.url))
        .header("Authorization", "Bearer s3cret")
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.body_mut().read_to_string().unwrap(),
        r#"{"status":"ok","store":{"state":"up"}}"#
    );
}

fn qflow_respond_answers_from_the_command_line_with_the_same_verdicts(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    deploy(dir, &db, CALL);
    let (url, rx, _) = counterpart(|_| 202);
    let s = serve(dir, &db, &channel_handlers(&url), &[]);
    let id = start(&s, "pay", json!({}));
    let req = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let respond = |key: &str| {
        qflow()
            .current_dir(dir)
            .args([
                "respond",
                &format!("{id}/authorize"),
                "--db",
                &db,
                "--key",
                key,
                "--body",
                r#"{"approved": true}"#,
                "--format",
                "json",
            ])
            .output()
            .unwrap()
    };
    let out = respond(&format!("{id}/authorize/7"));
    assert_eq!(out.status.code(), Some(4));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "unknown-request", "{v}");
    let out = respond(&req.key);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "accepted");
    let state = wait_for(&s, &id, |v| v["status"] == "completed");
    assert_eq!(state["status"], "completed", "{state}");
    let out = respond(&req.key);
    assert_eq!(out.status.code(), Some(4));
}

fn two_serve_processes_on_one_database_run_each_attempt_once(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    deploy(dir, &db, TASK);
    // Each run appends `instance attempt`; attempt 1 fails transiently.
    let script = "#!/bin/sh\ncat >/dev/null\necho \"$QFLOW_INSTANCE $QFLOW_ATTEMPT\" >> runs.log\n\
                  if [ \"$QFLOW_ATTEMPT\" = 1 ]; then echo '{\"code\":\"DOWN\",\"class\":\"transient\"}'; exit 1; fi\n";
    std::fs::write(dir.join("charge.sh"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("charge.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let handlers = "[tasks.\"payments.charge\"]\ncommand = \"./charge.sh\"\ntimeout = \"PT5S\"\n";
    let a = serve(dir, &db, handlers, &[]);
    let b = serve(dir, &db, handlers, &[]);
    let ids: Vec<String> = (0..8)
        .map(|i| start(if i % 2 == 0 { &a } else { &b }, "charge", json!({"n": i})))
        .collect();
    for id in &ids {
        let state = wait_for(&a, id, |v| v["status"] == "completed");
        assert_eq!(state["status"], "completed", "{id}: {state}");
    }
    let log = std::fs::read_to_string(dir.join("runs.log")).unwrap();
    let mut runs: Vec<&str> = log.lines().collect();
    runs.sort();
    let mut want: Vec<String> = ids
        .iter()
        .flat_map(|id| [format!("{id} 1"), format!("{id} 2")])
        .collect();
    want.sort();
    assert_eq!(
        runs, want,
        "every attempt ran exactly once across both processes"
    );
}

/// Two answers that must wait (each instance's claim is held elsewhere, as
/// while the driving thread decides it) are in flight at once: the one
/// whose instance comes free first is answered first, while the other still
/// waits, and both are accepted. One request at a time would keep the
/// second answer queued behind the first until the first gave up (`503
/// busy` after 3 s).
fn two_waiting_answers_overlap_and_the_first_freed_is_answered_first(fresh: &Fresh) {
    use qflow_engine::store::local_owner;
    let dir = fresh.dir();
    let db = fresh.db();
    // The call's timeout is long: only the answers decide here.
    deploy(
        dir,
        &db,
        &CALL.replace(
            r#"<q:timeout duration="PT2S"/>"#,
            r#"<q:timeout duration="PT60S"/>"#,
        ),
    );
    let (url, rx, _) = counterpart(|_| 202);
    let s = serve(dir, &db, &channel_handlers(&url), &[]);
    let a = start(&s, "pay", json!({"n": 1}));
    let b = start(&s, "pay", json!({"n": 2}));
    let mut requests = std::collections::BTreeMap::new();
    for _ in 0..2 {
        let r = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("each call is relayed");
        requests.insert(r.key.split('/').next().unwrap().to_string(), r);
    }
    // This test holds both instances' claims, as a replica deciding them would.
    let mut store = open(&db);
    let owner = local_owner();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };
    for id in [&a, &b] {
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.claim(id, &owner, now()).is_err() {
            assert!(
                Instant::now() < deadline,
                "the claim on {id} never came free"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let (tx, answered) = mpsc::channel();
    for id in [&a, &b] {
        let r = requests[id.as_str()].clone();
        let (tx, id) = (tx.clone(), id.clone());
        std::thread::spawn(move || {
            let (status, verdict) = post(&r.reply_to, Some(&r.key), &json!({"approved": true}));
            let _ = tx.send((id, status, verdict));
        });
        // A's answer reaches the endpoint first.
        std::thread::sleep(Duration::from_millis(200));
    }
    // Both wait; B comes free first and is answered while A still waits.
    std::thread::sleep(Duration::from_millis(200));
    store.release(&b, &owner).unwrap();
    let (first, status, verdict) = answered
        .recv_timeout(Duration::from_secs(10))
        .expect("an answer");
    assert_eq!(
        (first.as_str(), status, verdict["verdict"].as_str()),
        (b.as_str(), 200, Some("accepted")),
        "B's answer came back first, accepted, while A's still waited: {verdict}"
    );
    store.release(&a, &owner).unwrap();
    let (second, status, verdict) = answered
        .recv_timeout(Duration::from_secs(10))
        .expect("an answer");
    assert_eq!(
        (second.as_str(), status, verdict["verdict"].as_str()),
        (a.as_str(), 200, Some("accepted")),
        "A's answer waited for its claim and was accepted: {verdict}"
    );
    for id in [&a, &b] {
        let state = wait_for(&s, id, |v| v["status"] == "completed");
        assert_eq!(state["status"], "completed", "{state}");
    }
}
