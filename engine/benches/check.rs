//! `analyze` on generated modeller-like models, beside the cheapest honest XML
//! pass over the same bytes (quick-xml's namespace reader visiting every event
//! and attribute). The ratio of the two is the loader's overhead: the issue's
//! target is at most 3x on the 20,000-task model.
//!
//! Run: `cargo bench -p qflow-engine --bench check`.

// The generator is API of the model crate; here a private copy.
#[allow(unreachable_pub)]
#[path = "../../model/src/testgen.rs"]
#[allow(dead_code)]
mod testgen;

use qflow_engine::loader::DRAWING_LEAVES;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

mod common;
use common::bare_quick_xml;

fn bench(c: &mut Criterion) {
    for tasks in [1_000usize, 20_000] {
        let source = testgen::generate(tasks);
        let analysis = qflow_engine::analyze(&source);
        assert!(
            !analysis.has_errors(),
            "the generated model must check clean"
        );
        let mut group = c.benchmark_group(format!("{tasks}_tasks"));
        group.throughput(Throughput::Bytes(source.len() as u64));
        if tasks >= 20_000 {
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(10));
        }
        group.bench_function("bare_quick_xml", |b| {
            b.iter(|| bare_quick_xml(black_box(&source)))
        });
        // The layers of `analyze`, so a regression can be placed: the checked
        // XML read into the model (the rest is rules).
        group.bench_function("read_source", |b| {
            b.iter(|| {
                let read = qflow_engine::reader::read_source(black_box(&source), DRAWING_LEAVES);
                read.map(|d| d.map_or(0, |d| d.ids.len())).ok()
            })
        });
        group.bench_function("analyze", |b| {
            b.iter(|| qflow_engine::analyze(black_box(&source)))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
