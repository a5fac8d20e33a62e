//! `qflow run MODEL --handlers FILE`: real commands and HTTP endpoints in
//! place of a scenario, classified by the handler contract (docs/handlers.md).
//! Commands that succeed, fail with each class, hang and crash; endpoints
//! that answer 2xx, 429 with Retry-After, 5xx, 4xx, or drop the connection.
//! The run that keeps a database (`--db`) runs on a SQLite file and on a
//! fresh PostgreSQL database (`support::stores`).

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use support::stores::Fresh;
use support::{lines, qflow};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn model(name: &str) -> String {
    root().join("samples").join(name).display().to_string()
}

/// A directory with a handlers file and the scripts it names.
fn world(handlers: &str, scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("handlers.toml"), handlers).unwrap();
    for (name, body) in scripts {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn run(dir: &Path, model_file: &str, extra: &[&str]) -> Vec<Value> {
    let m = model(model_file);
    let mut args = vec![
        "run",
        m.as_str(),
        "--handlers",
        "handlers.toml",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = qflow(dir, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines(&out)
}

fn attempts(lines: &[Value]) -> Vec<(i64, Option<String>, Option<String>)> {
    lines
        .iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| {
            (
                l["at_s"].as_f64().unwrap_or(-1.0) as i64,
                l["code"].as_str().map(str::to_string),
                l["class"].as_str().map(str::to_string),
            )
        })
        .collect()
}

const CHARGE: &str = "[tasks.\"payments.charge\"]\ncommand = \"./charge.sh\"\ntimeout = \"PT2S\"\n";

/// A script that answers by its run number (a counter file), then repeats
/// its last answer.
fn scripted(answers: &[(&str, i32)]) -> String {
    let mut s = String::from(
        "#!/bin/sh\nn=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count\ncat > input.json\n",
    );
    for (i, (out, code)) in answers.iter().enumerate() {
        let test = if i + 1 == answers.len() {
            "true".to_string()
        } else {
            format!("[ $n -eq {} ]", i + 1)
        };
        s.push_str(&format!(
            "if {test}; then printf '%s' '{out}'; exit {code}; fi\n"
        ));
    }
    s
}

/// A registered task the flow enters three times (a loop on `round`).
const TASK_LOOP: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="defs">
  <bpmn:process id="looptask" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge"/>
    <bpmn:serviceTask id="charge" q:task="payments.charge">
      <bpmn:extensionElements>
        <q:retry maxAttempts="3" backoff="PT10S" jitter="none"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="again"/>
    <bpmn:exclusiveGateway id="again" default="done"/>
    <bpmn:sequenceFlow id="done" sourceRef="again" targetRef="end"/>
    <bpmn:sequenceFlow id="loop" sourceRef="again" targetRef="charge">
      <bpmn:conditionExpression>round &lt; 3</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:endEvent id="end"/>
  </bpmn:process>
</bpmn:definitions>
"#;

#[test]
fn a_task_the_flow_enters_again_gets_a_key_it_never_had() {
    // Each run: its attempt number and key in keys.log; `round` one up.
    let script = "#!/bin/sh\n\
                  r=$(sed -n 's/.*\"round\":\\([0-9]*\\).*/\\1/p')\n\
                  echo \"$QFLOW_ATTEMPT $QFLOW_IDEMPOTENCY_KEY\" >> keys.log\n\
                  echo \"{\\\"round\\\": $(( ${r:-0} + 1 ))}\"\n";
    let dir = world(CHARGE, &[("charge.sh", script)]);
    std::fs::write(dir.path().join("loop.bpmn"), TASK_LOOP).unwrap();
    let out = qflow(
        dir.path(),
        &[
            "run",
            "loop.bpmn",
            "--handlers",
            "handlers.toml",
            "--db",
            "loop.db",
            "--format",
            "json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lines(&out).last().unwrap()["status"], "completed");
    let keys = std::fs::read_to_string(dir.path().join("keys.log")).unwrap();
    // The attempt number restarts on each entry; the key does not: it
    // comes from the store's key ledger (it used to be looptask-1/charge/1
    // three times, which a provider deduplicating on it would have
    // answered "already done" twice).
    assert_eq!(
        keys,
        "1 looptask-1/charge/1\n1 looptask-1/charge/2\n1 looptask-1/charge/3\n"
    );
}

#[test]
fn a_command_fails_transiently_then_succeeds_on_the_dbg08_schedule() {
    let script = scripted(&[
        (r#"{"code":"PROVIDER_DOWN","class":"transient"}"#, 1),
        (r#"{"code":"PROVIDER_DOWN","class":"transient"}"#, 1),
        (r#"{"chargeId":"ch_1"}"#, 0),
    ]);
    let dir = world(CHARGE, &[("charge.sh", &script)]);
    let out = run(
        dir.path(),
        "dbg08-charge.bpmn",
        &["--variables", r#"{"orderId":"A-17"}"#],
    );
    assert_eq!(
        attempts(&out),
        vec![
            (0, Some("PROVIDER_DOWN".into()), Some("transient".into())),
            (60, Some("PROVIDER_DOWN".into()), Some("transient".into())),
            (360, None, None),
        ]
    );
    assert_eq!(out.last().unwrap()["status"], "completed");
    // The command got the instance's variables on stdin.
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("input.json")).unwrap())
            .unwrap();
    assert_eq!(input["orderId"], "A-17");
}

#[test]
fn each_failure_class_of_a_command_does_what_the_policy_says() {
    // permanent: one attempt, terminal.
    let dir = world(
        CHARGE,
        &[(
            "charge.sh",
            &scripted(&[(r#"{"code":"INVALID_INPUT","class":"permanent"}"#, 2)]),
        )],
    );
    let out = run(dir.path(), "dbg08-charge.bpmn", &[]);
    let last = out.last().unwrap();
    assert_eq!(
        (last["status"].as_str(), last["code"].as_str()),
        (Some("failed"), Some("INVALID_INPUT"))
    );
    assert_eq!(last["reason"], "non-retryable");
    assert_eq!(attempts(&out).len(), 1);

    // rate-limited: the provider's delay is the next one.
    let dir = world(
        CHARGE,
        &[(
            "charge.sh",
            &scripted(&[
                (
                    r#"{"code":"SLOW_DOWN","class":"rate-limited","retryAfter":"PT10M"}"#,
                    1,
                ),
                ("", 0),
            ]),
        )],
    );
    let out = run(dir.path(), "dbg08-charge.bpmn", &[]);
    assert_eq!(attempts(&out)[1].0, 600, "{out:?}");
    assert_eq!(out.last().unwrap()["status"], "completed");

    // unknown-outcome: no blind retry; waits for reconciliation.
    let dir = world(
        CHARGE,
        &[(
            "charge.sh",
            &scripted(&[(r#"{"code":"GATEWAY_LOST","class":"unknown-outcome"}"#, 1)]),
        )],
    );
    let out = run(dir.path(), "dbg08-charge.bpmn", &[]);
    let last = out.last().unwrap();
    assert_eq!(
        (last["status"].as_str(), last["for"].as_str()),
        (Some("waiting"), Some("reconciliation"))
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("count"))
            .unwrap()
            .trim(),
        "1"
    );

    // A non-zero exit without the JSON shape: transient q.handler.exit, the
    // budget runs out on the DBG-08 schedule.
    let dir = world(
        CHARGE,
        &[("charge.sh", "#!/bin/sh\necho oops >&2\nexit 3\n")],
    );
    let out = run(dir.path(), "dbg08-charge.bpmn", &[]);
    let last = out.last().unwrap();
    assert_eq!(
        (last["code"].as_str(), last["reason"].as_str()),
        (Some("q.handler.exit"), Some("exhausted"))
    );
    assert_eq!(attempts(&out).len(), 6);
}

#[test]
fn a_bpmn_error_from_a_command_routes_to_its_boundary() {
    let handlers = "[tasks.\"stock.reserve\"]\ncommand = \"./reserve.sh\"\n\
                    [tasks.\"stock.backorder\"]\ncommand = [\"sh\", \"-c\", \"echo '{\\\"backordered\\\": true}'\"]\n\
                    [tasks.\"shipping.dispatch\"]\ncommand = \"true\"\n";
    let dir = world(
        handlers,
        &[(
            "reserve.sh",
            "#!/bin/sh\necho '{\"bpmnError\": \"OUT_OF_STOCK\"}'\nexit 1\n",
        )],
    );
    let out = run(dir.path(), "error-boundary.bpmn", &[]);
    let nodes: Vec<&str> = out.iter().filter_map(|l| l["node"].as_str()).collect();
    assert!(nodes.contains(&"backorder"), "{nodes:?}");
    assert!(!nodes.contains(&"ship"), "{nodes:?}");
}

#[test]
fn a_hanging_command_is_an_unknown_outcome_and_a_crashing_one_transient() {
    let hang = "[tasks.\"payments.charge\"]\ncommand = \"sleep 30\"\ntimeout = \"PT1S\"\n";
    let dir = world(hang, &[]);
    let started = std::time::Instant::now();
    let out = run(dir.path(), "dbg08-charge.bpmn", &[]);
    assert!(
        started.elapsed().as_secs() < 20,
        "the hanging command was not cut off"
    );
    assert_eq!(
        attempts(&out),
        vec![(
            0,
            Some("q.handler.timeout".into()),
            Some("unknown-outcome".into())
        )]
    );
    assert_eq!(out.last().unwrap()["for"], "reconciliation");

    // Killed by a signal mid-attempt: nothing said, so transient.
    let crash = "[tasks.\"payments.charge\"]\ncommand = \"./crash.sh\"\n";
    let dir = world(crash, &[("crash.sh", "#!/bin/sh\nkill -9 $$\n")]);
    let out = run(dir.path(), "dbg08-charge.bpmn", &["--until", "PT2M"]);
    let a = attempts(&out);
    assert_eq!(a[0].1.as_deref(), Some("q.handler.exit"));
    assert_eq!(a[0].2.as_deref(), Some("transient"));
    assert_eq!(a.len(), 2, "retried on the policy: {a:?}");
}

#[test]
fn a_timed_out_command_is_killed_with_everything_it_started() {
    // The script starts a background child that would write `late.txt`
    // after 2 s, then hangs: at the 0.5 s timeout the whole process group
    // goes, the background child with it.
    let handlers = "[tasks.\"payments.charge\"]\ncommand = \"./charge.sh\"\ntimeout = \"PT0.5S\"\n";
    let script = "#!/bin/sh\ncat >/dev/null\n(sleep 2; echo late > late.txt) &\nsleep 30\n";
    let dir = world(handlers, &[("charge.sh", script)]);
    let started = std::time::Instant::now();
    let out = run(dir.path(), "dbg08-charge.bpmn", &[]);
    assert_eq!(
        attempts(&out),
        vec![(
            0,
            Some("q.handler.timeout".into()),
            Some("unknown-outcome".into())
        )]
    );
    assert_eq!(out.last().unwrap()["for"], "reconciliation");
    // Well past the moment the background child would have written.
    std::thread::sleep(std::time::Duration::from_secs(4).saturating_sub(started.elapsed()));
    assert!(
        !dir.path().join("late.txt").exists(),
        "the background child of the timed-out command survived it"
    );
}

#[test]
fn a_handlers_file_that_misses_a_task_or_misspells_a_key_is_refused_by_name() {
    let dir = world("[tasks.other]\ncommand = \"true\"\n", &[]);
    let out = qflow(
        dir.path(),
        &[
            "run",
            &model("dbg08-charge.bpmn"),
            "--handlers",
            "handlers.toml",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`payments.charge` has no handler: add [tasks.\"payments.charge\"]"),
        "{err}"
    );

    let dir = world("[tasks.\"payments.charge\"]\ncomand = \"true\"\n", &[]);
    let out = qflow(
        dir.path(),
        &[
            "run",
            &model("dbg08-charge.bpmn"),
            "--handlers",
            "handlers.toml",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tasks.\"payments.charge\".comand: unknown key; did you mean `command`?"),
        "{err}"
    );
}

/// A loopback HTTP service answering each request with the next scripted
/// (status, headers, body). Records what it was sent.
struct Service {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// What the service was sent: path, Idempotency-Key, body.
type Seen = (String, Option<String>, String);

type Answer = (u16, Vec<(&'static str, &'static str)>, &'static str);

fn service(answers: Vec<Answer>) -> Service {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/charge", server.server_addr().to_ip().unwrap());
    let seen: Arc<Mutex<Vec<_>>> = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for (i, mut req) in server.incoming_requests().enumerate() {
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            let key = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Idempotency-Key"))
                .map(|h| h.value.to_string());
            log.lock().unwrap().push((req.url().to_string(), key, body));
            let (status, headers, body) = &answers[i.min(answers.len() - 1)];
            let mut r = tiny_http::Response::from_string(*body).with_status_code(*status);
            for (k, v) in headers {
                r = r.with_header(tiny_http::Header::from_bytes(*k, *v).unwrap());
            }
            let _ = req.respond(r);
        }
    });
    Service { url, seen }
}

fn url_handlers(url: &str) -> String {
    format!("[tasks.\"payments.charge\"]\nurl = \"{url}\"\ntimeout = \"PT2S\"\n")
}

#[test]
fn an_endpoints_statuses_map_to_the_classes() {
    let svc = service(vec![
        (503, vec![], "down"),
        (429, vec![("Retry-After", "7")], ""),
        (
            200,
            vec![("Content-Type", "application/json")],
            r#"{"chargeId":"ch_9"}"#,
        ),
    ]);
    let dir = world(&url_handlers(&svc.url), &[]);
    let out = run(
        dir.path(),
        "dbg08-charge.bpmn",
        &["--variables", r#"{"amount":42}"#],
    );
    assert_eq!(
        attempts(&out),
        vec![
            (
                0,
                Some("q.handler.http-503".into()),
                Some("transient".into())
            ),
            (
                60,
                Some("q.handler.http-429".into()),
                Some("rate-limited".into())
            ),
            (67, None, None),
        ],
        "503 transient on the policy's 1 min; 429 honours Retry-After: 7"
    );
    assert_eq!(out.last().unwrap()["status"], "completed");
    let seen = svc.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    let body: Value = serde_json::from_str(&seen[0].2).unwrap();
    assert_eq!(body["amount"], 42, "the variables are the POST body");
    let keys: Vec<_> = seen.iter().map(|s| s.1.clone().unwrap()).collect();
    assert_eq!(
        keys,
        vec!["dbg08-1/charge/1", "dbg08-1/charge/2", "dbg08-1/charge/3"]
    );

    // Any other 4xx is permanent.
    let svc = service(vec![(400, vec![], r#"{"error":"bad card"}"#)]);
    let dir = world(&url_handlers(&svc.url), &[]);
    let out = run(dir.path(), "dbg08-charge.bpmn", &[]);
    let last = out.last().unwrap();
    assert_eq!(
        (last["code"].as_str(), last["reason"].as_str()),
        (Some("q.handler.http-400"), Some("non-retryable"))
    );
}

#[test]
fn a_dropped_connection_after_sending_is_an_unknown_outcome_and_a_refused_one_transient() {
    // A raw socket that reads the request, then closes without a word.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/charge", listener.local_addr().unwrap());
    let accepted = Arc::new(Mutex::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            *count.lock().unwrap() += 1;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            drop(stream);
        }
    });
    let dir = world(&url_handlers(&url), &[]);
    let out = run(dir.path(), "dbg08-charge.bpmn", &[]);
    assert_eq!(
        attempts(&out)[0].1.as_deref(),
        Some("q.handler.timeout"),
        "{out:?}"
    );
    assert_eq!(
        attempts(&out)[0].2.as_deref(),
        Some("unknown-outcome"),
        "{out:?}"
    );
    assert_eq!(out.last().unwrap()["for"], "reconciliation");
    assert_eq!(*accepted.lock().unwrap(), 1, "never retried blindly");

    // Nothing listens: nothing was sent, so a retry is safe.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = world(
        &url_handlers(&format!("http://127.0.0.1:{port}/charge")),
        &[],
    );
    let out = run(dir.path(), "dbg08-charge.bpmn", &["--until", "PT2M"]);
    let a = attempts(&out);
    assert_eq!(a[0].1.as_deref(), Some("q.handler.unreachable"), "{a:?}");
    assert_eq!(a[0].2.as_deref(), Some("transient"));
    assert_eq!(a.len(), 2);
}

crate::on_both_stores!(
    a_run_killed_inside_its_handler_resumes_with_an_unknown_outcome_not_a_second_run
);

fn a_run_killed_inside_its_handler_resumes_with_an_unknown_outcome_not_a_second_run(fresh: &Fresh) {
    // The handler records its run, then kills the `qflow run` that started
    // it (its parent): a crash at the worst moment, effect done, outcome
    // never recorded.
    let handlers = "[tasks.\"payments.charge\"]\ncommand = [\"./charge.sh\"]\n";
    let script = "#!/bin/sh\ncat >/dev/null\necho run >> runs.log\nkill -9 $PPID\nsleep 5\n";
    let dir = world(handlers, &[("charge.sh", script)]);
    let m = model("dbg08-charge.bpmn");
    let db = fresh.db();
    let args = [
        "run",
        m.as_str(),
        "--handlers",
        "handlers.toml",
        "--db",
        &db,
        "--format",
        "json",
    ];
    let out = qflow(dir.path(), &args);
    assert_eq!(out.status.code(), None, "killed by the signal");
    // Run again: the instance is resumed; attempt 1 is not run a second time.
    let out = qflow(dir.path(), &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = lines(&out);
    let a = attempts(&lines);
    assert_eq!(
        a,
        vec![(
            0,
            Some("q.handler.interrupted".into()),
            Some("unknown-outcome".into())
        )]
    );
    assert_eq!(lines.last().unwrap()["for"], "reconciliation");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("runs.log"))
            .unwrap()
            .lines()
            .count(),
        1
    );
}
