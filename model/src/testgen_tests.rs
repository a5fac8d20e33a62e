//! The model generator's own tests (kept out of `testgen.rs`, which the
//! benchmarks include by path).

use crate::testgen::*;

#[test]
fn small_models_check_without_errors() {
    for tasks in [0, 1, 9, 10, 25] {
        let src = generate(tasks);
        let analysis = crate::analyze(&src);
        let errors: Vec<_> = analysis.errors().collect();
        assert!(errors.is_empty(), "{tasks} tasks: {errors:#?}");
        let defs = analysis.definitions.expect("a model");
        assert_eq!(defs.processes.len(), 1);
        let p = &defs.processes[0];
        assert_eq!(p.nodes.len(), tasks + 2, "start, tasks, end");
        assert_eq!(p.flows.len(), tasks + 1);
        let retries: usize = p.nodes.iter().map(|n| n.retries.len()).sum();
        assert_eq!(retries, tasks / 10);
    }
}

#[test]
fn looks_like_modeller_output() {
    let src = generate(20);
    for needle in [
        "xmlns:bpmndi=",
        "xmlns:q=\"urn:qflow:bpmn:1\"",
        "isExecutable=\"true\"",
        "q:task=\"orders.step",
        "<q:retry maxAttempts=\"5\" backoff=\"PT1S PT5S PT25S\" jitter=\"full\"/>",
        "<bpmn:documentation>",
        "<dc:Bounds ",
        "<di:waypoint ",
    ] {
        assert!(src.contains(needle), "missing {needle}");
    }
    assert_eq!(src.matches("<bpmndi:BPMNShape ").count(), 22);
    assert_eq!(src.matches("<bpmndi:BPMNEdge ").count(), 21);
}

#[test]
fn twenty_thousand_tasks_is_about_twelve_megabytes() {
    let len = generate(20_000).len();
    assert!((10_000_000..14_000_000).contains(&len), "{len} bytes");
}
