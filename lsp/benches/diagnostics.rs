//! didChange → publishDiagnostics through the whole server (framing, JSON,
//! store, analysis, conversion), against `analyze` alone on the same text:
//! the language server's overhead over `qflow check` should stay under 5 ms.
//!
//! Models come from `qflow_engine::testgen` (modeller-shaped, ~600 bytes per
//! task). Each iteration changes the text (a counter in a comment), so every
//! measurement is a fresh analysis, never a cache hit.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use qflow_lsp::harness::Harness;

fn variant(base: &str, i: u64) -> String {
    format!("{base}<!-- edit {i} -->\n")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("didChange_to_publishDiagnostics");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for tasks in [1_000usize, 20_000] {
        let base = qflow_engine::testgen::generate(tasks);
        group.bench_with_input(BenchmarkId::new("analyze", tasks), &base, |b, base| {
            let mut i = 0;
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    i += 1;
                    let text = variant(base, i);
                    let start = Instant::now();
                    let a = qflow_engine::analyze(&text);
                    total += start.elapsed();
                    assert!(!a.has_errors());
                }
                total
            });
        });
        group.bench_with_input(BenchmarkId::new("lsp", tasks), &base, |b, base| {
            let uri = format!("file:///bench/model-{tasks}.bpmn");
            let mut h = rt.block_on(async {
                let mut h = Harness::initialized().await;
                h.open(&uri, 0, base).await;
                h.diagnostics(&uri, 0).await;
                h
            });
            let mut version = 0i64;
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    version += 1;
                    let text = variant(base, version as u64);
                    // The client's own serialisation is not the server's cost.
                    let body = serde_json::json!({
                        "jsonrpc": "2.0",
                        "method": "textDocument/didChange",
                        "params": {
                            "textDocument": { "uri": uri, "version": version },
                            "contentChanges": [ { "text": text } ]
                        }
                    })
                    .to_string();
                    let framed = qflow_lsp::harness::frame(&body);
                    total += rt.block_on(async {
                        let start = Instant::now();
                        h.send_raw(&framed).await;
                        let diags = h.diagnostics(&uri, version).await;
                        let t = start.elapsed();
                        assert!(diags.iter().all(|d| d["severity"] != 1));
                        t
                    });
                }
                total
            });
            rt.block_on(h.stop());
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
