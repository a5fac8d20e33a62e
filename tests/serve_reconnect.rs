//! `qflow serve` through a PostgreSQL outage, on a server of the test's own
//! (`support::cluster`): the server stopped at once (as a crash or
//! `pg_ctl stop -m immediate`) while attempts are in flight, started again;
//! every backend terminated. Serving never stops: `/health` stays up and
//! says the store is out of reach, `/ready` answers 503 until the database
//! is back, requests meanwhile get 503 naming the database, the log says
//! what is retried; then deciding resumes, every instance completes, and
//! no handler ran twice (docs/store.md, "Losing the database").

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::cluster::Cluster;
use support::serve::{get, post, Serve};

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

/// The handler: records each run (its variables) in runs.log, and takes
/// `sleep` seconds when the variables ask for it.
const CHARGE: &str = r#"#!/bin/sh
input=$(cat)
printf '%s\n' "$input" >> runs.log
s=$(printf '%s' "$input" | sed -n 's/.*"sleep":\([0-9]*\).*/\1/p')
[ -n "$s" ] && sleep "$s"
echo '{}'
"#;

fn setup(dir: &Path, db: &str) -> Serve {
    std::fs::write(dir.join("model.bpmn"), TASK).unwrap();
    let charge = dir.join("charge.sh");
    std::fs::write(&charge, CHARGE).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&charge, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        dir.join("handlers.toml"),
        "[tasks.\"payments.charge\"]\ncommand = \"./charge.sh\"\ntimeout = \"PT30S\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir)
        .args(["deploy", "model.bpmn", "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    support::serve::spawn(dir, db, &[])
}

/// Start instance `n` as a careful client does: with an idempotency key,
/// sent again on a 503 (a request that met a connection cut that moment).
fn start(s: &Serve, n: u32, sleep: u32) -> String {
    let key = format!("start-{n}");
    for _ in 0..20 {
        let (status, body) = post(
            &format!("{}/processes/charge/instances", s.url),
            Some(&key),
            &json!({"n": n, "sleep": sleep}),
        );
        if status == 503 {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        assert_eq!(status, 201, "{body}");
        return body["instance"].as_str().unwrap().to_string();
    }
    panic!("start {n}: 503 twenty times\n{}", s.stderr.lock().unwrap());
}

/// Poll until `done` holds of `GET path`, at most `within`; the last answer.
fn until(
    s: &Serve,
    path: &str,
    within: Duration,
    done: impl Fn(u16, &Value) -> bool,
) -> (u16, Value) {
    let deadline = Instant::now() + within;
    loop {
        let (status, body) = get(&format!("{}{path}", s.url));
        if done(status, &body) || Instant::now() > deadline {
            return (status, body);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn all_completed(s: &Serve, ids: &[String]) {
    for id in ids {
        let (_, state) = until(
            s,
            &format!("/instances/{id}"),
            Duration::from_secs(60),
            |_, v| v["status"] == "completed",
        );
        assert_eq!(
            state["status"],
            "completed",
            "{id}: {state}\n{}",
            s.stderr.lock().unwrap()
        );
    }
}

/// How many times the handler ran for each `n`.
fn runs(dir: &Path) -> std::collections::BTreeMap<u64, usize> {
    let mut by_n = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(dir.join("runs.log"))
        .unwrap_or_default()
        .lines()
    {
        let v: Value = serde_json::from_str(line).unwrap();
        *by_n.entry(v["n"].as_u64().unwrap()).or_insert(0) += 1;
    }
    by_n
}

#[test]
fn a_database_restart_under_serve_is_waited_out_and_nothing_runs_twice() {
    let Some(cluster) = Cluster::start("restart") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = cluster.url();
    let mut s = setup(dir.path(), &db);
    let (status, ready) = get(&format!("{}/ready", s.url));
    assert_eq!(
        (status, &ready["store"]["state"]),
        (200, &json!("up")),
        "{ready}"
    );

    // Five attempts in flight (3 s each) when the server goes away.
    let mut ids: Vec<String> = (0..5).map(|n| start(&s, n, 3)).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while runs(dir.path()).len() < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    cluster.stop();

    let (status, ready) = until(&s, "/ready", Duration::from_secs(20), |st, _| st == 503);
    assert_eq!(status, 503, "/ready while the server is down: {ready}");
    assert_eq!(ready["store"]["state"], "unavailable", "{ready}");
    let (status, health) = get(&format!("{}/health", s.url));
    assert_eq!(status, 200, "liveness holds through the outage: {health}");
    assert_eq!(health["store"]["state"], "unavailable", "{health}");
    // A start meanwhile: 503 (send again), naming the database.
    let (status, refused) = post(
        &format!("{}/processes/charge/instances", s.url),
        None,
        &json!({"n": 99}),
    );
    assert_eq!(status, 503, "{refused}");
    let error = refused["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("127.0.0.1") && error.contains("send again"),
        "{error}"
    );
    assert!(s.child.try_wait().unwrap().is_none(), "serve stays up");

    std::thread::sleep(Duration::from_secs(2));
    cluster.start_again();
    let (status, ready) = until(&s, "/ready", Duration::from_secs(30), |st, _| st == 200);
    assert_eq!(status, 200, "/ready once the server is back: {ready}");
    ids.extend((5..10).map(|n| start(&s, n, 0)));
    all_completed(&s, &ids);

    let log = s.stderr.lock().unwrap().clone();
    assert!(log.contains("is out of reach"), "{log}");
    assert!(log.contains("trying again in"), "{log}");
    assert!(log.contains("answers again after"), "{log}");
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "serve stays up\n{log}"
    );
    let by_n = runs(dir.path());
    assert_eq!(by_n.len(), 10, "{by_n:?}");
    assert!(
        by_n.values().all(|&c| c == 1),
        "a handler ran twice: {by_n:?}"
    );
    eprintln!("{log}");
    let _ = s.child.kill();
}

#[test]
fn terminated_backends_are_connected_again_and_serving_goes_on() {
    let Some(cluster) = Cluster::start("terminate") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = cluster.url();
    let s = setup(dir.path(), &db);
    let mut ids = Vec::new();
    for round in 0..3u32 {
        ids.extend((0..4).map(|i| start(&s, round * 4 + i, 1)));
        std::thread::sleep(Duration::from_millis(300));
        // The loop's connection and every endpoint worker's.
        assert!(cluster.terminate_backends() >= 1);
    }
    // Requests on the workers' new connections, at once.
    ids.extend((12..16).map(|n| start(&s, n, 0)));
    all_completed(&s, &ids);
    let (status, ready) = until(&s, "/ready", Duration::from_secs(20), |st, _| st == 200);
    assert_eq!(status, 200, "{ready}");
    let by_n = runs(dir.path());
    assert_eq!(by_n.len(), 16, "{by_n:?}");
    assert!(
        by_n.values().all(|&c| c == 1),
        "a handler ran twice: {by_n:?}"
    );
    let log = s.stderr.lock().unwrap().clone();
    assert!(!log.lines().any(|l| l.starts_with("error:")), "{log}");
}
