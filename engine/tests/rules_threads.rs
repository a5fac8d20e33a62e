//! The rules give the same verdicts, in the same order, on one thread and
//! on two (`rules::check_on`): on the generated model, a model with every
//! kind of finding (every repository model: samples, broken samples,
//! conformance models, fixtures) and the MIWG corpus, under qflow's
//! defaults, `bpmnlint:recommended` and `bpmnlint:all`. `check_with` picks
//! two threads from `PARALLEL_RULES_MIN_IDS` ids up; below, one.

#[allow(dead_code)]
mod reader_corners;
use reader_corners::repository_and_corpus_models;

use qflow_engine::config::{Base, Settings};
use qflow_engine::loader::DRAWING_LEAVES;
use qflow_engine::{reader, rules, testgen, xml};

fn settings() -> [Settings; 3] {
    [Base::Defaults, Base::Recommended, Base::All].map(|base| Settings {
        base,
        ..Settings::default()
    })
}

/// The same findings on one thread and on two; returns how many.
fn same_on_both(name: &str, src: &str) -> usize {
    let Ok(Ok(defs)) = reader::read_source(src, DRAWING_LEAVES) else {
        return 0;
    };
    let mut found = 0;
    for s in settings() {
        let one = rules::check_on(&defs, src, &s, false);
        let two = rules::check_on(&defs, src, &s, true);
        assert_eq!(one, two, "{name} under {:?}", s.base);
        assert_eq!(rules::check_with(&defs, src, &s), one, "{name}");
        found += one.len();
    }
    found
}

#[test]
fn the_generated_model_gets_the_same_verdicts_on_two_threads() {
    let src = testgen::generate(1_000);
    let defs = reader::read_source(&src, DRAWING_LEAVES)
        .expect("well-formed")
        .expect("BPMN");
    // Large enough that check_with takes two threads.
    assert!(defs.ids.len() >= rules::PARALLEL_RULES_MIN_IDS);
    assert!(same_on_both("generated", &src) > 0);
}

#[test]
fn every_model_in_the_repository_and_the_corpus_gets_the_same_verdicts_on_two_threads() {
    let files = repository_and_corpus_models();
    let mut found = 0;
    for path in &files {
        let bytes = std::fs::read(path).expect("readable model");
        if let Ok(src) = xml::decode(&bytes) {
            found += same_on_both(&path.display().to_string(), src);
        }
    }
    // The broken samples and conformance models have findings of every family.
    assert!(found > 500, "expected many findings, found {found}");
}
