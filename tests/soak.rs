//! The soak: `qflow serve` replicas on one database for a fixed time under a
//! mixed load, with faults, and at the end every instance accounted for.
//!
//! - **Load**: instances started at about 8 a second on a random replica,
//!   each with an `Idempotency-Key` and sent again on a 503 or a refused
//!   connection (as a client behind a load balancer does); a task whose
//!   handler is slow, fails transiently or permanently at random; then a
//!   channel call whose counterpart answers early, late (after the call's
//!   timeout) or never.
//! - **Faults**: a replica killed (`kill -9`) and replaced every quarter of
//!   the run; clients that open connections and stall; on PostgreSQL the
//!   database server stopped at once and started again half way through.
//! - **At the end** (the load stopped, the fleet given time to settle):
//!   every started instance is in the store once (no start lost, none
//!   doubled), and is completed, failed with its failure code, or waiting
//!   for the reconciliation of an attempt a killed replica left running
//!   (docs/runtime.md: never re-run blindly); no handler attempt key was
//!   used twice; every replica not killed still serves (`/health` 200).
//!
//! Short by default (20 s per store, part of the test suite); longer by
//! hand: `QFLOW_SOAK_SECS=600 QFLOW_REQUIRE_POSTGRES=1 cargo test --release
//! --test soak -- --nocapture`. `QFLOW_SOAK_SEED` replays a run's choices;
//! the figures are printed at the end (with `--nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::cluster::Cluster;
use support::serve::{agent, Serve};

/// A task with retries, then a channel call with a 2 s timeout and retries.
const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:soak">
  <q:channelConfig channel="bank" maxDeliveries="3" deliveryInterval="PT0.5S"/>
  <process id="soak" isExecutable="true">
    <startEvent id="start" name="Placed"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge"/>
    <serviceTask id="charge" name="Charge" q:task="payments.charge">
      <extensionElements>
        <q:retry maxAttempts="4" backoff="PT0.5S" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="charge" targetRef="authorize"/>
    <serviceTask id="authorize" name="Authorize" q:channel="bank">
      <extensionElements>
        <q:timeout duration="PT2S"/>
        <q:retry maxAttempts="3" backoff="PT0.5S" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f3" sourceRef="authorize" targetRef="done"/>
    <endEvent id="done" name="Done"/>
  </process>
</definitions>
"#;

/// The task's handler: each attempt's key in keys.log; about 6 % fail
/// permanently, 18 % transiently, the rest succeed after 0–0.6 s.
const CHARGE: &str = r#"#!/bin/sh
cat > /dev/null
printf '%s\n' "$QFLOW_IDEMPOTENCY_KEY" >> keys.log
r=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')
if [ "$r" -lt 15 ]; then echo '{"code":"DECLINED","class":"permanent"}'; exit 1; fi
if [ "$r" -lt 60 ]; then echo '{"code":"BUSY","class":"transient"}'; exit 1; fi
case $((r % 3)) in 1) sleep 0.3 ;; 2) sleep 0.6 ;; esac
echo '{}'
"#;

/// A small xorshift: the run's choices, replayable by seed.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn seed() -> u64 {
    std::env::var("QFLOW_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

/// The live replicas' URLs, which clients and the counterpart pick from.
type Urls = Arc<Mutex<Vec<String>>>;

fn pick(urls: &Urls, dice: &mut Dice) -> Option<String> {
    let u = urls.lock().unwrap();
    if u.is_empty() {
        return None;
    }
    Some(u[dice.below(u.len() as u64) as usize].clone())
}

/// POST `path` with `key` on a live replica, again on a 503 or a refused
/// connection (on another replica), for at most 60 s; the last answer.
fn post_until_taken(
    urls: &Urls,
    dice: &mut Dice,
    path: &str,
    key: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Some(base) = pick(urls, dice) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let sent = agent()
            .post(&format!("{base}{path}"))
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", key)
            .send(body.to_string().as_bytes());
        match sent {
            Ok(mut r) if r.status().as_u16() != 503 => {
                let status = r.status().as_u16();
                let text = r.body_mut().read_to_string().unwrap_or_default();
                return Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)));
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
    None
}

/// The counterpart: each new request is answered early (0.1–0.8 s, half
/// of them), late (2.5 s, after the call's 2 s timeout: a fifth) or never;
/// the answer goes to a live replica (the one that sent may be dead).
fn counterpart(urls: Urls, seed: u64, answers: Arc<AtomicU64>) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/authorize", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        let mut dice = Dice(seed ^ 0x9e37_79b9_7f4a_7c15);
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for mut req in server.incoming_requests() {
            let mut text = String::new();
            let _ = req.as_reader().read_to_string(&mut text);
            let header = |name: &'static str| {
                req.headers()
                    .iter()
                    .find(|h| h.field.equiv(name))
                    .map(|h| h.value.to_string())
                    .unwrap_or_default()
            };
            let (key, reply_to) = (header("Idempotency-Key"), header("Qflow-Reply-To"));
            let _ = req.respond(tiny_http::Response::empty(202));
            // A redelivery of a request already taken changes nothing.
            if !seen.insert(key.clone()) {
                continue;
            }
            let wait = match dice.below(10) {
                0..=4 => Duration::from_millis(100 + dice.below(700)),
                5..=6 => Duration::from_millis(2_500),
                _ => continue,
            };
            let Some(path) = reply_to
                .find("/correlations/")
                .map(|i| reply_to[i..].to_string())
            else {
                continue;
            };
            let (urls, answers) = (urls.clone(), answers.clone());
            let mut dice = Dice(dice.next() | 1);
            std::thread::spawn(move || {
                std::thread::sleep(wait);
                if post_until_taken(&urls, &mut dice, &path, &key, &json!({"approved": true}))
                    .is_some()
                {
                    answers.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    url
}

fn replica(dir: &Path, db: &str) -> Serve {
    support::serve::spawn_with(dir, db, &[], &["--request-timeout", "PT2S"], None)
}

/// Clients that open a connection, send half a request and stall.
fn stall(base: &str, held: &mut Vec<TcpStream>) {
    let addr = base.trim_start_matches("http://");
    for _ in 0..3 {
        if let Ok(mut s) = TcpStream::connect(addr) {
            let _ =
                s.write_all(b"POST /processes/soak/instances HTTP/1.1\r\nContent-Length: 100\r\n");
            held.push(s);
        }
    }
    if held.len() > 30 {
        held.drain(..held.len() - 30);
    }
}

fn instances(dir: &Path, db: &str) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir)
        .args(["instances", "--db", db, "--limit", "0", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["instances"].as_array().cloned().unwrap_or_default()
}

/// Settled: nothing more happens to it without a person.
fn settled(i: &Value) -> bool {
    i["status"] == "completed"
        || (i["status"] == "failed" && i["code"].is_string())
        || (i["status"] == "waiting" && i["waiting_for"] == "reconciliation")
}

fn soak(name: &str, dir: &Path, db: &str, cluster: Option<&Cluster>) {
    let secs: u64 = std::env::var("QFLOW_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let seed = seed();
    eprintln!("{name}: soak for {secs} s, seed {seed} (QFLOW_SOAK_SEED replays it)");
    let mut dice = Dice(seed);
    std::fs::write(dir.join("model.bpmn"), MODEL).unwrap();
    let charge = dir.join("charge.sh");
    std::fs::write(&charge, CHARGE).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&charge, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
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

    let urls: Urls = Arc::default();
    let answers = Arc::new(AtomicU64::new(0));
    let bank = counterpart(urls.clone(), seed, answers.clone());
    std::fs::write(
        dir.join("handlers.toml"),
        format!(
            "[tasks.\"payments.charge\"]\ncommand = \"./charge.sh\"\ntimeout = \"PT10S\"\n\n\
             [channels.bank]\nurl = \"{bank}\"\ntimeout = \"PT2S\"\n"
        ),
    )
    .unwrap();
    let mut replicas: Vec<Serve> = (0..3).map(|_| replica(dir, db)).collect();
    *urls.lock().unwrap() = replicas.iter().map(|r| r.url.clone()).collect();

    // The load: starts until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let started: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let load = {
        let (urls, stop, started) = (urls.clone(), stop.clone(), started.clone());
        let mut dice = Dice(seed.rotate_left(17) | 1);
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("soak-{n}");
                let got = post_until_taken(
                    &urls,
                    &mut dice,
                    "/processes/soak/instances",
                    &key,
                    &json!({"n": n}),
                );
                match got {
                    Some((201, body)) => {
                        let id = body["instance"].as_str().unwrap_or_default().to_string();
                        started.lock().unwrap().insert(key, id);
                    }
                    other => panic!("start {key}: {other:?}"),
                }
                n += 1;
                std::thread::sleep(Duration::from_millis(125));
            }
        })
    };

    // The faults, on a schedule through the run.
    let begin = Instant::now();
    let quarter = Duration::from_secs(secs) / 4;
    let (mut kills, mut restarts, mut next_kill) = (0u32, 0u32, quarter);
    let mut restarted = cluster.is_none();
    let mut stalled: Vec<TcpStream> = Vec::new();
    let mut dead: Vec<Serve> = Vec::new();
    while begin.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(500));
        if let Some(base) = pick(&urls, &mut dice) {
            stall(&base, &mut stalled);
        }
        if begin.elapsed() >= next_kill {
            let i = dice.below(replicas.len() as u64) as usize;
            let mut victim = replicas.remove(i);
            urls.lock().unwrap().retain(|u| *u != victim.url);
            let _ = victim.child.kill();
            let _ = victim.child.wait();
            dead.push(victim);
            kills += 1;
            let fresh = replica(dir, db);
            urls.lock().unwrap().push(fresh.url.clone());
            replicas.push(fresh);
            next_kill += quarter;
        }
        if !restarted && begin.elapsed() >= Duration::from_secs(secs) / 2 {
            let c = cluster.unwrap();
            c.stop();
            std::thread::sleep(Duration::from_secs(2));
            c.start_again();
            restarted = true;
            restarts += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    load.join().unwrap();
    drop(stalled);

    // Settle: every instance done, failed, or waiting for a person.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut all = instances(dir, db);
    while !all.iter().all(settled) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        all = instances(dir, db);
    }
    let started = started.lock().unwrap().clone();
    let by_id: BTreeMap<&str, &Value> = all
        .iter()
        .map(|i| (i["instance"].as_str().unwrap(), i))
        .collect();
    let lost: Vec<&String> = started
        .values()
        .filter(|id| !by_id.contains_key(id.as_str()))
        .collect();
    let distinct: BTreeSet<&String> = started.values().collect();
    let unsettled: Vec<&&Value> = by_id.values().filter(|i| !settled(i)).collect();
    let keys = std::fs::read_to_string(dir.join("keys.log")).unwrap_or_default();
    let mut seen = BTreeSet::new();
    let twice: Vec<&str> = keys.lines().filter(|k| !seen.insert(*k)).collect();
    let count = |s: &str| all.iter().filter(|i| i["status"] == s).count();
    let decisions: usize = replicas
        .iter()
        .chain(&dead)
        .map(|r| r.lines.lock().unwrap().len())
        .sum();
    let mut serving = 0;
    for r in &mut replicas {
        let alive = r.child.try_wait().unwrap().is_none();
        if alive && support::serve::get(&format!("{}/health", r.url)).0 == 200 {
            serving += 1;
        }
    }
    eprintln!(
        "{name}: {} instances ({} completed, {} failed, {} waiting for reconciliation), \
         {} attempts, {} answers, {kills} replica kills, {restarts} database restarts, \
         {decisions} decision lines; lost {}, duplicate starts {}, keys used twice {}, \
         unsettled {}, replicas serving {serving} of {}",
        all.len(),
        count("completed"),
        count("failed"),
        count("waiting"),
        keys.lines().count(),
        answers.load(Ordering::Relaxed),
        lost.len(),
        started.len() - distinct.len(),
        twice.len(),
        unsettled.len(),
        replicas.len(),
    );
    assert!(lost.is_empty(), "started but not in the store: {lost:?}");
    assert_eq!(
        distinct.len(),
        started.len(),
        "two keys started one instance"
    );
    assert_eq!(
        all.len(),
        started.len(),
        "the store holds instances nobody started"
    );
    assert!(twice.is_empty(), "attempt keys used twice: {twice:?}");
    assert!(
        unsettled.is_empty(),
        "not settled after 120 s: {unsettled:?}"
    );
    assert_eq!(
        serving,
        replicas.len(),
        "a replica that was not killed stopped serving"
    );
    assert!(
        count("completed") > 0,
        "nothing completed: the load did not run"
    );
}

#[test]
fn soak_on_sqlite() {
    if support::slow_test_left_out("the soak") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    soak("sqlite", dir.path(), "soak.db", None);
}

#[test]
fn soak_on_postgres_with_a_database_restart() {
    if support::slow_test_left_out("the soak with a database restart") {
        return;
    }
    let Some(cluster) = Cluster::start("soak") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    soak("postgres", dir.path(), &cluster.url(), Some(&cluster));
}
