//! The runtime end to end through the engine API, on a temporary file store
//! (WAL, one transaction per decision): what `qflow run` costs a user.
//!
//! - `dbg08_long_outage`: the DBG-08 long outage, six attempts over 13 h of
//!   virtual time to the FAILED/exhausted snapshot.
//! - `call_silent_forever`: a channel call whose counterpart never answers,
//!   timed out and re-driven to exhaustion on `q.timeout`.
//!
//! Each iteration deploys, starts and runs one fresh instance on a fresh
//! database file, so the figure includes schema creation and every commit.
//!
//! Run: `cargo bench -p qflow-engine --bench run`.

use qflow_engine::local::LocalRunExt;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use qflow_engine::runtime::{LocalRun, Scenario, VirtualClock};
use qflow_engine::store::Store;

const DBG08: &str = include_str!("../../samples/dbg08-long-outage.bpmn");
const DBG08_SCENARIO: &str = include_str!("../../samples/scenarios/dbg08-long-outage.json");
const BANK: &str = include_str!("../../samples/bank-authorize.bpmn");
const SILENT: &str = include_str!("../../samples/scenarios/call-silent-forever.json");

/// Run one instance to its end; returns the decisions taken and the final
/// status, checked so a bench of a broken run cannot pass for a fast one.
fn run_to_end(source: &str, scenario: &str, expect: &str) -> usize {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = Store::open(&dir.path().join("bench.db")).expect("store opens");
    let defs = qflow_engine::load(source).expect("sample loads");
    let scenario = Scenario::parse(scenario).expect("scenario parses");
    let mut run =
        LocalRun::open(store, source, &defs, scenario, VirtualClock::new(0)).expect("run opens");
    let mut decisions = 0;
    run.run(|_| decisions += 1).expect("run completes");
    let end = run.final_state().expect("final state").to_json();
    assert_eq!(end["status"], "failed", "{end}");
    assert_eq!(end["code"], expect, "{end}");
    decisions
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("runtime");
    group.sample_size(20);
    group.bench_function("dbg08_long_outage", |b| {
        b.iter(|| run_to_end(black_box(DBG08), DBG08_SCENARIO, "PROVIDER_DOWN"))
    });
    group.bench_function("call_silent_forever", |b| {
        b.iter(|| run_to_end(black_box(BANK), SILENT, "q.timeout"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
