//! Several `qflow run --replica` processes serve one database file at once
//! and race for the same ready instances and due timers. The claim must make
//! exactly one decision per event: every instance runs its schedule exactly
//! (six attempts at 0, 60, 360, 1,860, 9,360, 46,860 s), no handler runs twice
//! for one timer (the effects log has one line per recorded attempt), and the
//! replicas' decisions add up to the transitions in the store.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use qflow_engine::runtime::decide;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::scenario::Scenario;
use qflow_engine::store::Store;
use serde_json::Value;

const INSTANCES: usize = 120;
const REPLICAS: usize = 4;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn replicas_racing_on_one_database_take_exactly_one_decision_per_event() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let effects = dir.path().join("effects.log");
    let model = repo().join("samples/dbg08-long-outage.bpmn");
    let scenario_path = repo().join("samples/scenarios/dbg08-long-outage.json");
    let source = std::fs::read_to_string(&model).unwrap();
    let scenario = Scenario::parse(&std::fs::read_to_string(&scenario_path).unwrap()).unwrap();
    {
        let defs = qflow_engine::load(&source).unwrap();
        let graph = Graph::compile(&defs).unwrap();
        let mut store = Store::open(&db).unwrap();
        let dep = store.deploy(&graph.process_id, &source, 0).unwrap();
        for _ in 0..INSTANCES {
            let start = decide::start(&graph, &scenario.variables, 0);
            store.start_instance(&dep, &start, 0).unwrap();
        }
    }
    let children: Vec<_> = (0..REPLICAS)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_qflow"))
                .arg("run")
                .arg(&model)
                .arg("--scenario")
                .arg(&scenario_path)
                .arg("--db")
                .arg(&db)
                .arg("--replica")
                .arg("--effects-log")
                .arg(&effects)
                .args(["--format", "json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut decisions = 0u64;
    let mut races = 0u64;
    let mut per_replica = Vec::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
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
    let store = Store::open(&db).unwrap();
    let instances = store.instances().unwrap();
    assert_eq!(instances.len(), INSTANCES);
    let mut transitions = 0u64;
    let mut recorded = BTreeSet::new();
    for i in &instances {
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
        "replicas: {REPLICAS} processes, {INSTANCES} instances, {decisions} decisions (per replica {per_replica:?}), {races} lost races, {} handler runs",
        runs.len()
    );
    assert!(
        per_replica.iter().filter(|d| **d > 0).count() >= 2,
        "the replicas did not share the work: {per_replica:?}"
    );
}

#[test]
fn replicas_arbitrate_late_responses_against_due_timers_on_channel_calls() {
    const CALLS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("calls.db");
    let model = repo().join("samples/bank-authorize.bpmn");
    let scenario_path = repo().join("samples/scenarios/call-late-answer.json");
    let source = std::fs::read_to_string(&model).unwrap();
    let scenario = Scenario::parse(&std::fs::read_to_string(&scenario_path).unwrap()).unwrap();
    {
        let defs = qflow_engine::load(&source).unwrap();
        let graph = Graph::compile(&defs).unwrap();
        let mut store = Store::open(&db).unwrap();
        let dep = store.deploy(&graph.process_id, &source, 0).unwrap();
        for _ in 0..CALLS {
            let start = decide::start(&graph, &scenario.variables, 0);
            store.start_instance(&dep, &start, 0).unwrap();
        }
    }
    let children: Vec<_> = (0..REPLICAS)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_qflow"))
                .arg("run")
                .arg(&model)
                .arg("--scenario")
                .arg(&scenario_path)
                .arg("--db")
                .arg(&db)
                .arg("--replica")
                .args(["--format", "json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut races = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["stale"], 0);
        races +=
            last["claimed_elsewhere"].as_u64().unwrap() + last["nothing_to_do"].as_u64().unwrap();
    }
    let store = Store::open(&db).unwrap();
    for i in store.instances().unwrap() {
        assert_eq!(i.status.as_str(), "completed", "{}", i.id);
        let lines: Vec<Value> = store
            .history(&i.id)
            .unwrap()
            .iter()
            .map(|h| h.detail_json())
            .collect();
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
        "replicas on channel calls: {REPLICAS} processes, {CALLS} instances, {races} lost races"
    );
}

#[test]
fn a_poison_wake_races_the_timeout_and_exactly_one_fails_the_attempt() {
    const CALLS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("poison.db");
    let model = repo().join("samples/bank-authorize.bpmn");
    let scenario_path = repo().join("samples/scenarios/call-delivery-poisoned.json");
    let source = std::fs::read_to_string(&model).unwrap();
    let scenario = Scenario::parse(&std::fs::read_to_string(&scenario_path).unwrap()).unwrap();
    {
        let defs = qflow_engine::load(&source).unwrap();
        let graph = Graph::compile(&defs).unwrap();
        let mut store = Store::open(&db).unwrap();
        let dep = store.deploy(&graph.process_id, &source, 0).unwrap();
        for _ in 0..CALLS {
            let start = decide::start(&graph, &scenario.variables, 0);
            store.start_instance(&dep, &start, 0).unwrap();
        }
    }
    let children: Vec<_> = (0..REPLICAS)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_qflow"))
                .arg("run")
                .arg(&model)
                .arg("--scenario")
                .arg(&scenario_path)
                .arg("--db")
                .arg(&db)
                .arg("--replica")
                .args(["--format", "json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = Store::open(&db).unwrap();
    let mut won: BTreeMap<String, usize> = BTreeMap::new();
    for i in store.instances().unwrap() {
        assert_eq!(i.status.as_str(), "completed", "{}", i.id);
        let lines: Vec<Value> = store
            .history(&i.id)
            .unwrap()
            .iter()
            .map(|h| h.detail_json())
            .collect();
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
    eprintln!("poison wake vs timeout over {CALLS} instances: {won:?}");
}
