//! A circuit breaker through the binary, on both stores: `qflow serve`
//! with a failing command handler whose task declares a breaker
//! (`[tasks."payments.charge".breaker]`). The breaker opens on its own
//! after its consecutive failures (a real pause of the dependency: no
//! attempt runs while it is open), lets its canaries through once its open
//! time is over, opens again when a canary fails, and closes when its
//! canaries succeed, releasing the held retries on its ramp: every
//! instance completes. Each move is in serve's log and in `qflow stats`
//! (human and JSON); the pause and the release are the breaker's in the
//! containment log.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::serve::{post, spawn, Serve};
use support::stores::Fresh;

const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="charge" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" name="Charge" q:task="payments.charge">
      <extensionElements>
        <q:retry maxAttempts="20" backoff="PT0.5S" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#;

/// Fails while `down` exists beside it; every run appends a line to
/// `attempts.log`.
const CHARGE: &str = r#"#!/bin/sh
cat > /dev/null
if [ -e down ]; then echo fail >> attempts.log; exit 1; fi
echo ok >> attempts.log
echo '{}'
"#;

const HANDLERS: &str = r#"
[tasks."payments.charge"]
command = "./charge.sh"

[tasks."payments.charge".breaker]
consecutive_failures = 3
open_for = "2s"
canaries = 2
release_ramp = "600/min"
"#;

const N: usize = 6;

crate::on_both_stores!(
    a_breaker_opens_on_its_own_sends_canaries_and_closes_with_a_release,
    simulate_runs_the_breaker_and_reports_its_moves_and_the_requests_it_saved,
    an_operators_pause_holds_the_canaries_and_is_not_the_breakers_to_lift,
    two_replicas_move_one_breaker,
);

fn attempts(dir: &Path) -> (usize, usize) {
    let log = std::fs::read_to_string(dir.join("attempts.log")).unwrap_or_default();
    (
        log.lines().filter(|l| *l == "fail").count(),
        log.lines().filter(|l| *l == "ok").count(),
    )
}

/// The attempts once every one already running has ended: the log has
/// not grown for 700 ms. Attempts that started before a pause or an open
/// end after it (a handler process takes its time on a loaded machine);
/// what is held never starts. A held retry that ran anyway (one is due
/// every half second) would keep the log growing, and this times out.
fn settled(dir: &Path) -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = attempts(dir);
    let mut since = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = attempts(dir);
        if now != last {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() >= Duration::from_millis(700) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "the attempts never settled: {now:?}"
        );
    }
}

fn moves(s: &Serve) -> Vec<(String, String)> {
    s.lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l["breaker"] == "payments.charge")
        .map(|l| {
            (
                l["from"].as_str().unwrap_or_default().to_string(),
                l["to"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stats(db: &str, dir: &Path) -> Value {
    let o = support::qflow(dir, &["stats", "--db", db, "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

fn a_breaker_opens_on_its_own_sends_canaries_and_closes_with_a_release(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    std::fs::write(dir.join("charge.bpmn"), MODEL).unwrap();
    std::fs::write(dir.join("handlers.toml"), HANDLERS).unwrap();
    let script = dir.join("charge.sh");
    std::fs::write(&script, CHARGE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("down"), "").unwrap();
    let o = support::qflow(dir, &["deploy", "charge.bpmn", "--db", &db]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let s = spawn(dir, &db, &[]);
    for i in 0..N {
        let (status, _) = post(
            &format!("{}/processes/charge/instances", s.url),
            Some(&format!("k{i}")),
            &json!({}),
        );
        assert!(status == 200 || status == 201, "{status}");
    }

    // It opens on its own: serve's log says so, and the dependency is
    // paused by the breaker, as `pause --dependency` pauses it.
    wait_for("the breaker to open", 20, || {
        moves(&s).first().map(|m| m.1.as_str()) == Some("open")
    });
    let st = stats(&db, dir);
    assert_eq!(st["breakers"][0]["dependency"], "payments.charge", "{st}");
    assert_eq!(st["breakers"][0]["state"]["phase"], "open", "{st}");
    assert_eq!(st["paused"][0]["kind"], "dependency", "{st}");
    assert_eq!(st["paused"][0]["value"], "payments.charge", "{st}");
    assert_eq!(st["paused"][0]["by"], "breaker", "{st}");
    assert_eq!(
        st["breaker_transitions"][0]["reason"], "3 consecutive failures",
        "{st}"
    );
    // Open: nothing runs. The retries (due every half second) are held.
    // (Its open time is 2 s: the settling and this look end before.)
    let at_open = settled(dir);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(attempts(dir), at_open, "no attempt runs while it is open");
    assert!(at_open.0 >= 3 && at_open.0 <= N, "{at_open:?}");

    // Its open time over, it lets its canaries through (at most two); the
    // dependency is still down, so a canary fails and it opens again.
    wait_for("the breaker to open again", 20, || moves(&s).len() >= 3);
    let m = moves(&s);
    assert_eq!(
        m[..3],
        [
            ("closed".to_string(), "open".to_string()),
            ("open".into(), "half-open".into()),
            ("half-open".into(), "open".into()),
        ],
        "{m:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let after_canaries = attempts(dir);
    assert!(
        after_canaries.0 > at_open.0 && after_canaries.0 <= at_open.0 + 2,
        "one or two canaries ran: {at_open:?} then {after_canaries:?}"
    );
    assert_eq!(after_canaries.1, 0);

    // The dependency is back: the next canaries succeed and it closes,
    // releasing every held retry on its ramp. Every instance completes.
    std::fs::remove_file(dir.join("down")).unwrap();
    wait_for("the breaker to close", 20, || {
        moves(&s).last().map(|m| m.1.as_str()) == Some("closed")
    });
    wait_for("every instance to complete", 30, || {
        stats(&db, dir)["completed"] == N as u64
    });
    let m = moves(&s);
    assert_eq!(
        m[m.len() - 2..],
        [
            ("open".to_string(), "half-open".to_string()),
            ("half-open".into(), "closed".into()),
        ],
        "{m:?}"
    );
    let st = stats(&db, dir);
    assert_eq!(st["breakers"][0]["state"]["phase"], "closed", "{st}");
    assert_eq!(st["breakers"][0]["state"]["opened"], 2, "{st}");
    assert_eq!(st["paused"], json!([]), "{st}");
    let last = st["breaker_transitions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["reason"]
            .as_str()
            .unwrap()
            .starts_with("2 of 2 canaries succeeded"),
        "{last}"
    );
    let release = last["release"]
        .as_i64()
        .expect("a close makes a release ramp");
    assert!(
        st["releases"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == release && r["ramp"] == "600/min" && r["by"] == "breaker"),
        "{st}"
    );
    // The containment log holds the breaker's pauses and its unpause.
    let log = st["containment_log"].as_array().unwrap();
    let by_breaker: Vec<&str> = log
        .iter()
        .filter(|e| e["by"] == "breaker")
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(by_breaker, ["pause", "pause", "unpause"], "{st}");

    // So does the web inspector's fleet page that serve serves.
    let mut resp = support::serve::agent()
        .get(format!("{}/ui/", s.url))
        .call()
        .unwrap();
    let page = resp.body_mut().read_to_string().unwrap();
    assert!(page.contains("Circuit breakers"), "{page}");
    assert!(
        page.contains("half-open → closed: 2 of 2 canaries succeeded"),
        "{page}"
    );

    // So does the HTML report.
    let o = support::qflow(dir, &["stats", "--db", &db, "--report", "r.html"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(
        html.contains("breaker of payments.charge"),
        "the report names the breaker"
    );
    assert!(
        html.contains("half-open -&gt; closed: 2 of 2 canaries succeeded")
            || html.contains("half-open -> closed: 2 of 2 canaries succeeded"),
        "the report lists its moves"
    );

    // The human stats show the breaker and its moves.
    let o = support::qflow(dir, &["stats", "--db", &db]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("breaker of dependency payments.charge: closed since"),
        "{out}"
    );
    assert!(
        out.contains("closed -> open: 3 consecutive failures"),
        "{out}"
    );
    assert!(
        out.contains("half-open -> closed: 2 of 2 canaries succeeded"),
        "{out}"
    );
}

const SIM_HANDLERS: &str = r#"
[tasks."payments.charge"]
command = "./never-run.sh"

[tasks."payments.charge".breaker]
consecutive_failures = 5
open_for = "5m"
canaries = 2
release_ramp = "10,50,200/min"
"#;

fn simulate_runs_the_breaker_and_reports_its_moves_and_the_requests_it_saved(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    std::fs::write(dir.join("handlers.toml"), SIM_HANDLERS).unwrap();
    let model = std::fs::canonicalize("samples/dbg08-long-outage.bpmn").unwrap();
    let model = model.to_str().unwrap();
    let o = support::qflow(
        dir,
        &[
            "simulate",
            model,
            "--jobs",
            "200",
            "--outage",
            "2h",
            "--handlers",
            "handlers.toml",
            "--db",
            &db,
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(v["completed"], 200, "{v}");
    let b = &v["breakers"][0];
    assert_eq!(b["dependency"], "payments.charge", "{v}");
    let moves = b["moves"].as_array().unwrap();
    let first = &moves[0];
    assert_eq!(
        (first["from"].as_str(), first["to"].as_str()),
        (Some("closed"), Some("open"))
    );
    assert_eq!(first["reason"], "5 consecutive failures");
    // Every five minutes of the outage its canaries go and fail; after it
    // they succeed and it closes.
    assert_eq!(moves[1]["to"], "half-open");
    assert_eq!(moves[1]["at_s"], 300.0);
    assert_eq!(moves[2]["to"], "open");
    let last = moves.last().unwrap();
    assert_eq!(last["to"], "closed", "{v}");
    assert!(last["at_s"].as_f64().unwrap() >= 7200.0, "{v}");
    let (with, without) = (
        b["requests"].as_i64().unwrap(),
        b["requests_without_breaker"].as_i64().unwrap(),
    );
    assert_eq!(
        without, 1000,
        "five attempts each in two hours without it: {v}"
    );
    assert!(with < without / 2, "{v}");
    assert_eq!(b["saved"].as_i64().unwrap(), without - with);
    // The simulation's store keeps the breaker's story, as serve's does.
    let st = stats(&db, dir);
    assert_eq!(st["breakers"][0]["state"]["phase"], "closed", "{st}");
    assert_eq!(
        st["breaker_transitions"].as_array().unwrap().len(),
        moves.len().min(20),
        "{st}"
    );

    // The human summary says it in words.
    let o = support::qflow(
        dir,
        &[
            "simulate",
            model,
            "--jobs",
            "20",
            "--outage",
            "2h",
            "--handlers",
            "handlers.toml",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("breaker of payments.charge (opens after 5 consecutive failures, open 300s, 2 canaries, release 10,50,200/min)"), "{out}");
    assert!(
        out.contains("+0s         closed -> open: 5 consecutive failures"),
        "{out}"
    );
    assert!(out.contains("requests to payments.charge: "), "{out}");
    assert!(out.contains(" without it ("), "{out}");

    // A failure-ratio breaker opens once its window holds enough attempts.
    std::fs::write(
        dir.join("ratio.toml"),
        "[tasks.\"payments.charge\"]\ncommand = \"x\"\n[tasks.\"payments.charge\".breaker]\nfailure_ratio = 0.5\nwindow = \"1m\"\nmin_attempts = 10\nopen_for = \"10m\"\n",
    )
    .unwrap();
    let o = support::qflow(
        dir,
        &[
            "simulate",
            model,
            "--jobs",
            "50",
            "--outage",
            "1h",
            "--handlers",
            "ratio.toml",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(
        v["breakers"][0]["moves"][0]["reason"],
        "10 of 10 attempts failed in 60s (ratio 1 at least 0.5)",
        "{v}"
    );
    assert_eq!(v["completed"], 50, "{v}");

    // A handlers file with no breaker for the model's tasks is refused.
    std::fs::write(dir.join("none.toml"), "[tasks.other]\ncommand = \"x\"\n").unwrap();
    let o = support::qflow(
        dir,
        &[
            "simulate",
            model,
            "--jobs",
            "2",
            "--outage",
            "1h",
            "--handlers",
            "none.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--handlers none.toml: it declares no breaker for a task of this model (its tasks: payments.charge)"), "{err}");
    // A bad breaker table names its place.
    std::fs::write(
        dir.join("bad.toml"),
        "[tasks.\"payments.charge\"]\ncommand = \"x\"\nbreaker = { open_for = \"1m\" }\n",
    )
    .unwrap();
    let o = support::qflow(
        dir,
        &[
            "simulate",
            model,
            "--jobs",
            "2",
            "--outage",
            "1h",
            "--handlers",
            "bad.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("tasks.\"payments.charge\".breaker: needs a threshold"),
        "{err}"
    );
}

const ONE_CANARY: &str = r#"
[tasks."payments.charge"]
command = "./charge.sh"

[tasks."payments.charge".breaker]
consecutive_failures = 2
open_for = "1s"
canaries = 1
release_ramp = "600/min"
"#;

fn an_operators_pause_holds_the_canaries_and_is_not_the_breakers_to_lift(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    std::fs::write(dir.join("charge.bpmn"), MODEL).unwrap();
    std::fs::write(dir.join("handlers.toml"), ONE_CANARY).unwrap();
    let script = dir.join("charge.sh");
    std::fs::write(&script, CHARGE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("down"), "").unwrap();
    let o = support::qflow(dir, &["deploy", "charge.bpmn", "--db", &db]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = spawn(dir, &db, &[]);
    for i in 0..3 {
        post(
            &format!("{}/processes/charge/instances", s.url),
            Some(&format!("k{i}")),
            &json!({}),
        );
    }
    wait_for("the breaker to open", 20, || {
        moves(&s).first().map(|m| m.1.as_str()) == Some("open")
    });
    // An operator takes the dependency over: the breaker's pause lifted,
    // their own made.
    for args in [
        &[
            "unpause",
            "--db",
            &db,
            "--dependency",
            "payments.charge",
            "--by",
            "ops",
        ][..],
        &[
            "pause",
            "--db",
            &db,
            "--dependency",
            "payments.charge",
            "--by",
            "ops",
            "--reason",
            "hands on",
        ][..],
    ] {
        let o = support::qflow(dir, args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let held = settled(dir);
    // Its open time over, it half-opens, but the operator's pause holds
    // every retry: no canary goes.
    wait_for("the breaker to half-open", 20, || moves(&s).len() >= 2);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(attempts(dir), held, "no canary passes an operator's pause");
    let st = stats(&db, dir);
    assert_eq!(st["breakers"][0]["state"]["phase"], "half-open", "{st}");
    assert_eq!(st["breakers"][0]["canaries"], 0, "{st}");
    // The operator lifts it with the dependency back: a canary is chosen,
    // succeeds, the breaker closes and lifts no pause (there is none).
    std::fs::remove_file(dir.join("down")).unwrap();
    let o = support::qflow(
        dir,
        &[
            "unpause",
            "--db",
            &db,
            "--dependency",
            "payments.charge",
            "--by",
            "ops",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait_for("the breaker to close", 20, || {
        moves(&s).last().map(|m| m.1.as_str()) == Some("closed")
    });
    wait_for("every instance to complete", 30, || {
        stats(&db, dir)["completed"] == 3
    });
    let st = stats(&db, dir);
    let last = st["breaker_transitions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["release"], Value::Null, "{st}");
    let by: Vec<(String, String)> = st["containment_log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["by"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            ("pause".to_string(), "breaker".to_string()),
            ("unpause".into(), "ops".into()),
            ("pause".into(), "ops".into()),
            ("unpause".into(), "ops".into()),
        ],
        "{st}"
    );
}

/// The breaker's moves as the store records them: (from, to).
fn recorded(db: &str, dir: &Path) -> Vec<(String, String)> {
    stats(db, dir)["breaker_transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["from"].as_str().unwrap().to_string(),
                m["to"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn two_replicas_move_one_breaker(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    std::fs::write(dir.join("charge.bpmn"), MODEL).unwrap();
    std::fs::write(dir.join("handlers.toml"), HANDLERS).unwrap();
    let script = dir.join("charge.sh");
    std::fs::write(&script, CHARGE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("down"), "").unwrap();
    let o = support::qflow(dir, &["deploy", "charge.bpmn", "--db", &db]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a = spawn(dir, &db, &[]);
    let b = spawn(dir, &db, &[]);
    for i in 0..N {
        let s = if i % 2 == 0 { &a } else { &b };
        post(
            &format!("{}/processes/charge/instances", s.url),
            Some(&format!("k{i}")),
            &json!({}),
        );
    }
    wait_for("the breaker to open", 20, || !recorded(&db, dir).is_empty());
    // Open for both: no attempt runs on either replica.
    // (Its open time is 2 s: the settling and this look end before.)
    let at_open = settled(dir);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        attempts(dir),
        at_open,
        "neither replica runs an attempt while it is open"
    );
    std::fs::remove_file(dir.join("down")).unwrap();
    wait_for("every instance to complete", 40, || {
        stats(&db, dir)["completed"] == N as u64
    });
    // One breaker, one story: each move made once, whichever replica made it.
    let m = recorded(&db, dir);
    assert_eq!(
        m,
        [
            ("closed".to_string(), "open".to_string()),
            ("open".into(), "half-open".into()),
            ("half-open".into(), "closed".into()),
        ],
        "{m:?}"
    );
    let logged = moves(&a).len() + moves(&b).len();
    assert_eq!(
        logged, 3,
        "each move is in the log of the replica that made it"
    );
}
