//! A fleet on one file database: N DBG-08 instances whose provider never
//! answers, each driven to exhaustion (six attempts, then FAILED), beside a
//! baseline of raw SQLite transactions of the same shape in the same run.
//!
//! - `replica N...`: one [`Replica`] (what `qflow run --replica` serves)
//!   over N seeded instances; decisions per second, to exhaustion or over
//!   the first `--window D` decisions. The cost of a decision should not
//!   depend on how many instances are parked.
//! - `raw T`: T raw write transactions of a decision's shape (update the
//!   instance, resolve its timer and arm the next, append a transition and a
//!   history line), one transaction each, WAL and `synchronous=FULL`: the
//!   store's own settings.
//!
//! Run: `cargo bench -p qflow-engine --bench fleet -- replica 1000 10000`.
//! Figures go to stdout; nothing is asserted about time.

use std::path::Path;
use std::time::Instant;

use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::replica::Replica;
use qflow_engine::runtime::{decide, Scenario};
use qflow_engine::store::Store;

const DBG08: &str = include_str!("../../samples/dbg08-long-outage.bpmn");
const ALWAYS_FAILS: &str = include_str!("../../samples/scenarios/dbg08-long-outage.json");

/// Deploy DBG-08 and start `n` instances through the store API.
fn seed(path: &Path, n: usize) -> Store {
    let mut store = Store::open(path).expect("store opens");
    let defs = qflow_engine::load(DBG08).expect("sample loads");
    let graph = Graph::compile(&defs).expect("sample compiles");
    let scenario = Scenario::parse(ALWAYS_FAILS).expect("scenario parses");
    let dep = store.deploy(&graph.process_id, DBG08, 0).expect("deploys");
    let start = decide::start(&graph, &scenario.variables, 0);
    for chunk in (0..n).step_by(10_000) {
        store
            .start_instances(&dep, &start, 0, (n - chunk).min(10_000))
            .expect("starts");
    }
    store
}

fn replica(n: usize, window: Option<u64>) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("fleet.db");
    let t = Instant::now();
    let store = seed(&path, n);
    let seeded = t.elapsed().as_secs_f64();
    let scenario = Scenario::parse(ALWAYS_FAILS).expect("scenario parses");
    let mut r = Replica::new(store, scenario, "bench:1".into());
    if let Some(w) = window {
        r.stop_after(w);
    }
    let t = Instant::now();
    let stats = r.serve(|_, _| {}).expect("serves");
    let secs = t.elapsed().as_secs_f64();
    if window.is_none() {
        assert_eq!(stats.decisions, 6 * n as u64, "six attempts per instance");
    }
    println!(
        "replica  N={n:>6}  seeded in {seeded:>6.1} s  {:>7} decisions in {secs:>7.1} s  = {:>7.0} decisions/s",
        stats.decisions,
        stats.decisions as f64 / secs
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut window = None;
    let mut mode = String::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bench" => {}
            "--window" => window = it.next().and_then(|w| w.parse().ok()),
            "replica" | "raw" => mode = a.clone(),
            n => {
                let Ok(n) = n.parse::<usize>() else {
                    eprintln!("fleet: unknown argument {n}");
                    std::process::exit(2);
                };
                match mode.as_str() {
                    "replica" => replica(n, window),
                    _ => {
                        eprintln!("fleet: give a mode (replica, raw) before a size");
                        std::process::exit(2);
                    }
                }
            }
        }
    }
}
