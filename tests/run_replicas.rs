//! Several `qflow run --replica` processes serve one database at once (a
//! SQLite file, and a PostgreSQL database when a server is given)
//! and race for the same ready instances and due timers; in the last test
//! this process joins them as a counterpart answering channel calls. The
//! claim must make exactly one decision per event: every instance's
//! transitions are one chain (versions 1, 2, 3, … each once), the parties'
//! decisions add up to the transitions in the store, no handler runs twice
//! for one timer, no call attempt is emitted twice.
//!
//! The races: two or more replicas polling the same timers (DBG-08 long
//! outage; six attempts at 0, 60, 360, 1,860, 9,360, 46,860 s), a late
//! response against a due timer, a poison wake against the timeout, and a
//! poison wake against a counterpart's response from another process.
//! Each party logs every race it lost (`--races-log`: instance and version);
//! the distinct pairs are the contended events, printed with the outcome.
//! The tests assert the invariants, never a number of races or a duration.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use qflow_engine::runtime::decide;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::scenario::Scenario;
use qflow_engine::store::Store;

mod support;
use serde_json::Value;
use support::stores::{open, Fresh};

const INSTANCES: usize = 300;
const REPLICAS: usize = 4;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The contended events of a run: distinct `instance version` pairs some
/// party tried to decide and lost (another party decided or held the claim).
fn contended(races: &Path) -> BTreeSet<(String, i64)> {
    let text = std::fs::read_to_string(races).unwrap_or_default();
    text.lines()
        .map(|l| {
            let mut f = l.split_whitespace();
            let i = f.next().unwrap().to_string();
            (i, f.next().unwrap().parse().unwrap())
        })
        .collect()
}

/// Every instance's transitions are one chain: versions 1, 2, 3, … each
/// exactly once (one decision per event, whoever took it).
fn assert_one_chain(store: &Store, instance: &str) {
    let versions: Vec<i64> = store
        .transitions(instance)
        .unwrap()
        .iter()
        .map(|t| t.version)
        .collect();
    let expected: Vec<i64> = (1..=versions.len() as i64).collect();
    assert_eq!(versions, expected, "{instance}");
}

/// Deploys `source` into a fresh database at `db` and starts `count`
/// instances with the scenario's variables; returns their ids.
fn seed(
    db: impl AsRef<std::ffi::OsStr>,
    source: &str,
    scenario: &Scenario,
    count: usize,
) -> Vec<String> {
    let defs = qflow_engine::load(source).unwrap();
    let graph = Graph::compile(&defs).unwrap();
    let mut store = open(db.as_ref().to_str().unwrap());
    let dep = store.deploy(&graph.process_id, source, 0).unwrap();
    (0..count)
        .map(|_| {
            let start = decide::start(&graph, &scenario.variables, 0);
            store.start_instance(&dep, &start, 0).unwrap()
        })
        .collect()
}

/// One `qflow run --replica` serving `db`, logging its lost races to
/// `races_log` and printing JSON lines; the caller picks stdio and spawns.
fn replica(
    model: &Path,
    scenario: &Path,
    db: impl AsRef<std::ffi::OsStr>,
    races_log: &Path,
) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qflow"));
    cmd.arg("run")
        .arg(model)
        .arg("--scenario")
        .arg(scenario)
        .arg("--db")
        .arg(db)
        .arg("--replica")
        .arg("--races-log")
        .arg(races_log)
        .args(["--format", "json"]);
    cmd
}

/// Spawns `REPLICAS` replicas (see [`replica`]) with piped output.
fn spawn_replicas(make: impl Fn() -> Command) -> Vec<Child> {
    (0..REPLICAS)
        .map(|_| {
            make()
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

/// Waits for a replica, asserts it succeeded and returns its stdout.
fn wait_ok(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The last JSON line a replica printed: its summary.
fn last_line(text: &str) -> Value {
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// An instance's history as JSON detail lines.
fn detail_lines(store: &Store, instance: &str) -> Vec<Value> {
    store
        .history(instance)
        .unwrap()
        .iter()
        .map(|h| h.detail_json())
        .collect()
}

crate::on_both_stores!(
    replicas_racing_on_one_database_take_exactly_one_decision_per_event,
    replicas_arbitrate_late_responses_against_due_timers_on_channel_calls,
    a_poison_wake_races_the_timeout_and_exactly_one_fails_the_attempt,
    a_poison_wake_races_a_counterpart_response_across_processes,
);

/// Four replica processes over 300 DBG-08 instances on one database.
fn replicas_racing_on_one_database_take_exactly_one_decision_per_event(fresh: &Fresh) {
    if support::slow_test_left_out("a race of replica processes on one database") {
        return;
    }
    dbg08_race(&fresh.db(), fresh.dir());
}

/// `db`: exactly one decision per event, and every handler run recorded once.
fn dbg08_race(db: &str, dir: &Path) {
    let races_log = dir.join("races.log");
    let effects = dir.join("effects.log");
    let model = repo().join("samples/dbg08-long-outage.bpmn");
    let scenario_path = repo().join("samples/scenarios/dbg08-long-outage.json");
    let source = std::fs::read_to_string(&model).unwrap();
    let scenario = Scenario::parse(&std::fs::read_to_string(&scenario_path).unwrap()).unwrap();
    seed(db, &source, &scenario, INSTANCES);
    let children = spawn_replicas(|| {
        let mut cmd = replica(&model, &scenario_path, db, &races_log);
        cmd.arg("--effects-log").arg(&effects);
        cmd
    });
    let mut decisions = 0u64;
    let mut races = 0u64;
    let mut per_replica = Vec::new();
    for c in children {
        let last = last_line(&wait_ok(c));
        assert_eq!(last["status"], "served");
        let d = last["decisions"].as_u64().unwrap();
        decisions += d;
        per_replica.push(d);
        races +=
            last["claimed_elsewhere"].as_u64().unwrap() + last["nothing_to_do"].as_u64().unwrap();
        assert_eq!(
            last["stale"], 0,
            "a decision was computed from facts another replica changed"
        );
    }
    let store = open(db);
    let instances = store.instances().unwrap();
    assert_eq!(instances.len(), INSTANCES);
    let mut transitions = 0u64;
    let mut recorded = BTreeSet::new();
    for i in &instances {
        assert_one_chain(&store, &i.id);
        assert_eq!(i.status.as_str(), "failed", "{}", i.id);
        let h = store.history(&i.id).unwrap();
        let at: Vec<i64> = h
            .iter()
            .filter(|r| r.kind == "attempt")
            .map(|r| r.at_ms / 1000)
            .collect();
        assert_eq!(at, vec![0, 60, 360, 1860, 9360, 46860], "{}", i.id);
        for r in h.iter().filter(|r| r.kind == "attempt") {
            recorded.insert(format!(
                "{} {} {}",
                i.id,
                r.node.as_deref().unwrap_or(""),
                r.attempt.unwrap()
            ));
        }
        transitions += store.transitions(&i.id).unwrap().len() as u64 - 1;
    }
    assert_eq!(
        decisions, transitions,
        "replicas' decisions vs transitions in the store"
    );
    // Every handler run (effect) is exactly one recorded attempt.
    let log = std::fs::read_to_string(&effects).unwrap();
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    for line in log.lines() {
        let mut f = line.split_whitespace();
        let key = format!(
            "{} {} {}",
            f.next().unwrap(),
            f.next().unwrap(),
            f.next().unwrap()
        );
        *runs.entry(key).or_default() += 1;
    }
    assert!(
        runs.values().all(|n| *n == 1),
        "a handler ran twice for one attempt"
    );
    assert_eq!(runs.keys().cloned().collect::<BTreeSet<_>>(), recorded);
    eprintln!(
        "replicas: {REPLICAS} processes, {INSTANCES} instances, {decisions} decisions (per replica {per_replica:?}), {races} lost races, {} contended events, {} handler runs",
        contended(&races_log).len(),
        runs.len()
    );
    assert!(
        per_replica.iter().filter(|d| **d > 0).count() >= 2,
        "the replicas did not share the work: {per_replica:?}"
    );
}

fn replicas_arbitrate_late_responses_against_due_timers_on_channel_calls(fresh: &Fresh) {
    if support::slow_test_left_out("a race of replica processes on one database") {
        return;
    }
    const CALLS: usize = 400;
    let db = fresh.db();
    let races_log = fresh.dir().join("races.log");
    let model = repo().join("samples/bank-authorize.bpmn");
    let scenario_path = repo().join("samples/scenarios/call-late-answer.json");
    let source = std::fs::read_to_string(&model).unwrap();
    let scenario = Scenario::parse(&std::fs::read_to_string(&scenario_path).unwrap()).unwrap();
    seed(&db, &source, &scenario, CALLS);
    let children = spawn_replicas(|| replica(&model, &scenario_path, &db, &races_log));
    let mut races = 0;
    for c in children {
        let last = last_line(&wait_ok(c));
        assert_eq!(last["stale"], 0);
        races +=
            last["claimed_elsewhere"].as_u64().unwrap() + last["nothing_to_do"].as_u64().unwrap();
    }
    let store = open(&db);
    for i in store.instances().unwrap() {
        assert_one_chain(&store, &i.id);
        assert_eq!(i.status.as_str(), "completed", "{}", i.id);
        let lines = detail_lines(&store, &i.id);
        let kinds = |k: &str| lines.iter().filter(|l| l["kind"] == k).count();
        let verdicts: Vec<&str> = lines
            .iter()
            .filter(|l| l["kind"] == "response")
            .map(|l| l["verdict"].as_str().unwrap())
            .collect();
        // The late answer to attempt 1 was refused exactly once, the answer
        // to attempt 2 accepted exactly once; two emissions, two keys.
        assert_eq!(verdicts, vec!["retry-pending", "accepted"], "{}", i.id);
        assert_eq!(kinds("attempt"), 2, "{}", i.id);
        assert_eq!(kinds("call-failed"), 1, "{}", i.id);
        let keys: BTreeSet<&str> = lines
            .iter()
            .filter(|l| l["kind"] == "attempt")
            .map(|l| l["idempotencyKey"].as_str().unwrap())
            .collect();
        assert_eq!(keys.len(), 2);
    }
    eprintln!(
        "replicas on channel calls: {REPLICAS} processes, {CALLS} instances, {races} lost races, {} contended events",
        contended(&races_log).len()
    );
}

/// On PostgreSQL the wake also crosses processes (NOTIFY): the other
/// replicas' prompts must not make a second failure either.
fn a_poison_wake_races_the_timeout_and_exactly_one_fails_the_attempt(fresh: &Fresh) {
    if support::slow_test_left_out("a race of replica processes on one database") {
        return;
    }
    poison_wake_against_the_timeout(&fresh.db(), fresh.dir());
}

fn poison_wake_against_the_timeout(db: &str, dir: &Path) {
    const CALLS: usize = 300;
    let races_log = dir.join("races.log");
    let model = repo().join("samples/bank-authorize.bpmn");
    let scenario_path = repo().join("samples/scenarios/call-delivery-poisoned.json");
    let source = std::fs::read_to_string(&model).unwrap();
    let scenario = Scenario::parse(&std::fs::read_to_string(&scenario_path).unwrap()).unwrap();
    seed(db, &source, &scenario, CALLS);
    let children = spawn_replicas(|| replica(&model, &scenario_path, db, &races_log));
    for c in children {
        wait_ok(c);
    }
    let store = open(db);
    let mut won: BTreeMap<String, usize> = BTreeMap::new();
    for i in store.instances().unwrap() {
        assert_one_chain(&store, &i.id);
        assert_eq!(i.status.as_str(), "completed", "{}", i.id);
        let lines = detail_lines(&store, &i.id);
        let failed: Vec<&str> = lines
            .iter()
            .filter(|l| l["kind"] == "call-failed")
            .map(|l| l["code"].as_str().unwrap())
            .collect();
        // The wake (a prompt) and the timeout (the guarantee) race for the
        // poisoned attempt: exactly one of them fails it, never both.
        assert_eq!(failed.len(), 1, "{}: {failed:?}", i.id);
        assert!(["q.delivery.poisoned", "q.timeout"].contains(&failed[0]));
        *won.entry(failed[0].to_string()).or_default() += 1;
        assert_eq!(
            lines.iter().filter(|l| l["kind"] == "attempt").count(),
            2,
            "{}",
            i.id
        );
        assert_eq!(
            lines.iter().filter(|l| l["verdict"] == "accepted").count(),
            1
        );
    }
    eprintln!(
        "poison wake vs timeout: {REPLICAS} processes, {CALLS} instances, {} contended events, won {won:?}",
        contended(&races_log).len()
    );
}

/// A poison wake against a counterpart's response, across processes: the
/// replicas deliver (every delivery fails; one failure poisons the request)
/// and fire the in-process wake; this test process is the counterpart, and
/// answers attempt 1 the moment it sees that attempt's row poisoned — the
/// window in which the wake is owed. The claim lets exactly one act: either
/// the response is accepted (the wake then finds nothing waiting) or the wake
/// fails the attempt (the response then hears it is gone or superseded).
fn a_poison_wake_races_a_counterpart_response_across_processes(fresh: &Fresh) {
    if support::slow_test_left_out("a race of replica processes on one database") {
        return;
    }
    use qflow_engine::runtime::driver::{respond, Verdict};
    const CALLS: usize = 1600;
    let db = fresh.db();
    let dir = fresh.dir();
    let races_log = dir.join("races.log");
    // One delivery poisons a request; two attempts in all.
    let source = std::fs::read_to_string(repo().join("samples/bank-authorize.bpmn"))
        .unwrap()
        .replace(r#"maxDeliveries="5""#, r#"maxDeliveries="1""#)
        .replace(r#"maxAttempts="4""#, r#"maxAttempts="2""#);
    let model = dir.join("bank-poison-race.bpmn");
    std::fs::write(&model, &source).unwrap();
    let scenario_path = dir.join("poison-race.json");
    let scenario_text = r#"{"variables": {"paymentId": "P-9", "amount": 120},
        "deliveries": {"bank": [{"fail": "connection reset"}]},
        "channels": {"bank": [{"silent": true}]}}"#;
    std::fs::write(&scenario_path, scenario_text).unwrap();
    let scenario = Scenario::parse(scenario_text).unwrap();
    let ids = seed(&db, &source, &scenario, CALLS);
    // Each replica's lines go to a file: this process is busy answering and
    // must not leave a replica blocked on a full pipe.
    let outputs: Vec<PathBuf> = (0..REPLICAS)
        .map(|r| dir.join(format!("replica-{r}.jsonl")))
        .collect();
    let mut children: Vec<_> = outputs
        .iter()
        .map(|out| {
            replica(&model, &scenario_path, &db, &races_log)
                .stdout(std::fs::File::create(out).unwrap())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // The counterpart: answer each instance's attempt 1 once, as soon as its
    // request shows poisoned; instances it never caught in the window are
    // answered late, after the replicas are done.
    let mut store = open(&db);
    let mut answered: BTreeMap<String, (bool, Verdict)> = BTreeMap::new();
    let mut responder_lost = BTreeSet::new();
    let answer = |store: &mut Store, id: &str, lost: &mut BTreeSet<(String, i64)>| -> Verdict {
        loop {
            let row = store.instance(id).unwrap().unwrap();
            match respond(
                store,
                &format!("{id}/authorize"),
                &format!("{id}/authorize/1"),
                serde_json::json!({"approved": true}),
                row.updated_ms,
            ) {
                Ok((v, _)) => return v,
                Err(qflow_engine::runtime::RunError::Store(
                    qflow_engine::store::StoreError::Claimed { .. },
                )) => {
                    // A replica holds the claim: this event is contended.
                    lost.insert((id.to_string(), row.version));
                    std::thread::yield_now();
                }
                Err(e) => panic!("{id}: {e}"),
            }
        }
    };
    loop {
        let running = children.iter_mut().any(|c| c.try_wait().unwrap().is_none());
        for id in &ids {
            if answered.contains_key(id) {
                continue;
            }
            let rows = store.outbox(id).unwrap();
            // Attempt 1 is out and undelivered (pending, or poisoned with
            // the wake owed): answer it now, racing the replicas.
            if rows.iter().any(|r| {
                r.attempt == 1 && r.state != qflow_engine::instance::OutboxState::Delivered
            }) {
                let v = answer(&mut store, id, &mut responder_lost);
                answered.insert(id.clone(), (true, v));
            }
        }
        if !running {
            break;
        }
    }
    for id in &ids {
        if !answered.contains_key(id) {
            let v = answer(&mut store, id, &mut responder_lost);
            answered.insert(id.clone(), (false, v));
        }
    }
    let mut decisions = 0;
    for (mut c, out) in children.into_iter().zip(&outputs) {
        assert!(c.wait().unwrap().success());
        let last = last_line(&std::fs::read_to_string(out).unwrap());
        assert_eq!(last["stale"], 0);
        decisions += last["decisions"].as_u64().unwrap();
    }
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut transitions = 0u64;
    for id in &ids {
        assert_one_chain(&store, id);
        transitions += store.transitions(id).unwrap().len() as u64 - 1;
        let lines = detail_lines(&store, id);
        fn of<'a>(lines: &'a [Value], k: &'a str) -> impl Iterator<Item = &'a Value> {
            lines.iter().filter(move |l| l["kind"] == k)
        }
        // The counterpart's one answer is one decision.
        let responses: Vec<&Value> = of(&lines, "response").collect();
        assert_eq!(responses.len(), 1, "{id}: {responses:?}");
        let verdict = responses[0]["verdict"].as_str().unwrap();
        let failed_1: Vec<&Value> = of(&lines, "call-failed")
            .filter(|l| l["attempt"] == 1)
            .collect();
        // Exactly one of the two acted on attempt 1.
        match verdict {
            "accepted" => {
                assert!(failed_1.is_empty(), "{id}: both acted");
                assert_eq!(
                    store.instance(id).unwrap().unwrap().status.as_str(),
                    "completed"
                );
            }
            "retry-pending" | "superseded" | "failed" => {
                // The wake is a prompt: another replica may take the
                // durable timeout first (virtual time skips to it). Either
                // way, one failure of attempt 1.
                assert_eq!(failed_1.len(), 1, "{id}: {failed_1:?}");
                let code = failed_1[0]["code"].as_str().unwrap();
                assert!(
                    ["q.delivery.poisoned", "q.timeout"].contains(&code),
                    "{id}: {code}"
                );
            }
            other => panic!("{id}: verdict {other}"),
        }
        let (in_window, v) = &answered[id];
        assert_eq!(
            (verdict == "accepted"),
            (*v == Verdict::Accepted),
            "{id}: the caller heard what history says"
        );
        let key = match (in_window, verdict) {
            (true, "accepted") => "in window: response won",
            (true, _) if failed_1[0]["code"] == "q.timeout" => "in window: timeout won",
            (true, _) => "in window: wake won",
            (false, _) => "answered late",
        };
        *outcomes.entry(key).or_default() += 1;
        // No attempt emitted twice: one line and one key per attempt.
        let keys: Vec<&str> = of(&lines, "attempt")
            .map(|l| l["idempotencyKey"].as_str().unwrap())
            .collect();
        let distinct: BTreeSet<&str> = keys.iter().copied().collect();
        assert_eq!(keys.len(), distinct.len(), "{id}: {keys:?}");
        let mut per_attempt: BTreeMap<u64, usize> = BTreeMap::new();
        for l in of(&lines, "call-failed") {
            *per_attempt
                .entry(l["attempt"].as_u64().unwrap())
                .or_default() += 1;
        }
        assert!(
            per_attempt.values().all(|n| *n == 1),
            "{id}: {per_attempt:?}"
        );
    }
    assert_eq!(
        decisions + CALLS as u64,
        transitions,
        "replicas' decisions plus one response per instance vs transitions"
    );
    let mut events = contended(&races_log);
    events.extend(responder_lost.iter().cloned());
    eprintln!(
        "poison wake vs response: {REPLICAS} processes + the counterpart, {CALLS} instances, {} contended events ({} lost by the counterpart), outcomes {outcomes:?}",
        events.len(),
        responder_lost.len()
    );
}
