//! The headline figure in one line: `analyze` against the bare quick-xml pass
//! on the generated 20,000-task model, as the best of N alternating runs.
//!
//! criterion (`--bench check`) gives the full statistics; on a shared, loaded
//! machine its means wander, while the best of many alternating runs of each
//! side stays close to the unloaded figure, so the ratio stays honest.
//!
//! Run: `cargo bench -p qflow-engine --bench ratio` (optionally `-- TASKS RUNS`).

// The generator is API of the model crate; here a private copy.
#[allow(unreachable_pub)]
#[path = "../../model/src/testgen.rs"]
#[allow(dead_code)]
mod testgen;

use qflow_engine::loader::DRAWING_LEAVES;
use std::hint::black_box;
use std::time::{Duration, Instant};

mod common;

fn best(runs: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    (times[0], times[times.len() / 2])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    // `cargo test --all-targets` runs this too (without `--bench`): a smoke run.
    let benching = args.iter().any(|a| a == "--bench");
    let (default_tasks, default_runs) = if benching { (20_000, 15) } else { (100, 1) };
    let tasks = numbers.first().copied().unwrap_or(default_tasks);
    let runs = numbers.get(1).copied().unwrap_or(default_runs);
    let source = testgen::generate(tasks);
    assert!(!qflow_engine::analyze(&source).has_errors());
    let (mut bare_best, mut analyze_best) = (Duration::MAX, Duration::MAX);
    let (mut bare_median, mut analyze_median) = (Duration::ZERO, Duration::ZERO);
    let mut read_best = Duration::MAX;
    // Every modelling rule on, as a `.bpmnlintrc` extending
    // `bpmnlint:recommended` asks (the diagram rules included).
    let all_rules = qflow_engine::config::Settings {
        base: qflow_engine::config::Base::Recommended,
        ..Default::default()
    };
    let mut all_best = Duration::MAX;
    // Alternate in rounds so both sides see the same machine load.
    for _ in 0..3 {
        let (b, bm) = best(runs, || {
            black_box(common::bare_quick_xml(black_box(&source)));
        });
        let (a, am) = best(runs, || {
            black_box(qflow_engine::analyze(black_box(&source)));
        });
        let (r, _) = best(runs, || {
            let read = qflow_engine::reader::read_source(black_box(&source), DRAWING_LEAVES);
            black_box(read.map(|d| d.map_or(0, |d| d.ids.len()))).ok();
        });
        let (all, _) = best(runs, || {
            black_box(qflow_engine::analyze_with(black_box(&source), &all_rules));
        });
        all_best = all_best.min(all);
        read_best = read_best.min(r);
        bare_best = bare_best.min(b);
        analyze_best = analyze_best.min(a);
        (bare_median, analyze_median) = (bm, am);
    }
    println!(
        "{tasks} tasks, {} bytes: bare quick-xml {:.1} ms, analyze {:.1} ms (best of {}), ratio {:.2}x; last-round medians {:.1} / {:.1} ms",
        source.len(),
        bare_best.as_secs_f64() * 1e3,
        analyze_best.as_secs_f64() * 1e3,
        runs * 3,
        analyze_best.as_secs_f64() / bare_best.as_secs_f64(),
        bare_median.as_secs_f64() * 1e3,
        analyze_median.as_secs_f64() * 1e3,
    );
    println!(
        "  every rule on (bpmnlint:recommended): analyze {:.1} ms, ratio {:.2}x",
        all_best.as_secs_f64() * 1e3,
        all_best.as_secs_f64() / bare_best.as_secs_f64(),
    );
    println!(
        "  layers (best): reader::read_source (checked XML to the model) {:.1} ms, + rules {:.1} ms",
        read_best.as_secs_f64() * 1e3,
        (analyze_best.as_secs_f64() - read_best.as_secs_f64()) * 1e3,
    );
    // The rules alone, every rule on, on one thread and on two: where
    // `rules::PARALLEL_RULES_MIN_IDS` should lie (run at several sizes).
    let defs = qflow_engine::reader::read_source(&source, DRAWING_LEAVES)
        .expect("well-formed")
        .expect("BPMN");
    let (mut one_best, mut two_best) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        for (two, best_of) in [(false, &mut one_best), (true, &mut two_best)] {
            let (b, _) = best(runs, || {
                black_box(qflow_engine::rules::check_on(
                    &defs, &source, &all_rules, two,
                ));
            });
            *best_of = (*best_of).min(b);
        }
    }
    println!(
        "  rules, every rule on, {} ids (best): one thread {:.3} ms, two threads {:.3} ms (two from {} ids)",
        defs.ids.len(),
        one_best.as_secs_f64() * 1e3,
        two_best.as_secs_f64() * 1e3,
        qflow_engine::rules::PARALLEL_RULES_MIN_IDS,
    );
}
