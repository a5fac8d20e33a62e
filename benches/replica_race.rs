//! The replica race as a benchmark: four `qflow run --replica` processes
//! serve N DBG-08 long-outage instances (six attempts each, then FAILED)
//! on one database, first PostgreSQL, then SQLite. Printed per store:
//! wall time from the replicas' start to the last one's exit, decisions
//! per second over all replicas, lost races (a claim held elsewhere, work
//! gone when claimed, a stale decision refused) and the contended events
//! (distinct instance versions some replica lost).
//!
//! Run: `scripts/pg-throwaway.sh run cargo bench --bench replica_race -- 300`
//! (PostgreSQL from `QFLOW_TEST_POSTGRES_URL`; without it only SQLite
//! runs, with a note). Figures go to stdout; nothing is asserted.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::{decide, Scenario};
use qflow_engine::store::{Location, Store};
use serde_json::Value;

const REPLICAS: usize = 4;
const MODEL: &str = "samples/dbg08-long-outage.bpmn";
const SCENARIO: &str = "samples/scenarios/dbg08-long-outage.json";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Deploy the model into `db` and start `n` instances.
fn seed(db: &str, n: usize) {
    let source = std::fs::read_to_string(repo().join(MODEL)).expect("model");
    let scenario = Scenario::parse(&std::fs::read_to_string(repo().join(SCENARIO)).unwrap())
        .expect("scenario");
    let graph = Graph::compile(&qflow_engine::load(&source).expect("loads")).expect("compiles");
    let mut store = Store::connect(&Location::parse(db).unwrap()).expect("store opens");
    let dep = store
        .deploy(&graph.process_id, &source, 0)
        .expect("deploys");
    let start = decide::start(&graph, &scenario.variables, 0);
    store.start_instances(&dep, &start, 0, n).expect("starts");
}

fn race(label: &str, db: &str, n: usize, dir: &Path) {
    seed(db, n);
    let races = dir.join(format!("{label}.races"));
    let t = Instant::now();
    let children: Vec<_> = (0..REPLICAS)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_qflow"))
                .current_dir(repo())
                .args([
                    "run",
                    MODEL,
                    "--scenario",
                    SCENARIO,
                    "--db",
                    db,
                    "--replica",
                ])
                .arg("--races-log")
                .arg(&races)
                .args(["--format", "json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("qflow runs")
        })
        .collect();
    let (mut decisions, mut lost, mut per) = (0u64, 0u64, Vec::new());
    for c in children {
        let out = c.wait_with_output().expect("replica ends");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let d = last["decisions"].as_u64().unwrap();
        decisions += d;
        per.push(d);
        lost += ["claimed_elsewhere", "nothing_to_do", "stale"]
            .iter()
            .map(|k| last[*k].as_u64().unwrap_or(0))
            .sum::<u64>();
    }
    let secs = t.elapsed().as_secs_f64();
    let contended: BTreeSet<String> = std::fs::read_to_string(&races)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    println!(
        "{label:<10} {REPLICAS} replicas, {n} instances: {decisions} decisions in {secs:.1} s = {:.0} decisions/s; {lost} lost races, {} contended events; per replica {per:?}",
        decisions as f64 / secs,
        contended.len()
    );
}

fn main() {
    let n = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .find_map(|a| a.parse::<usize>().ok());
    let Some(n) = n else {
        // `cargo test --all-targets` runs this with no size: nothing to do.
        return;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    match std::env::var("QFLOW_TEST_POSTGRES_URL") {
        Ok(server) if !server.is_empty() => {
            let name = format!("qflow_bench_race_{}", std::process::id());
            let db = qflow_engine::store::pg::scratch_database(&server, &name).expect("database");
            race("postgres", &db, n, dir.path());
        }
        _ => println!("postgres   skipped: QFLOW_TEST_POSTGRES_URL is not set"),
    }
    let db = dir.path().join("race.db");
    race("sqlite", db.to_str().unwrap(), n, dir.path());
}
