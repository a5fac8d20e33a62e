//! Laying out a 1,000-node model for the diagram (`qflow render`, the
//! console's diagram panel). The console redraws at most 60 times a second,
//! so a layout must take well under 16 ms.
//!
//! - `chain_layered`: [`testgen::generate`]'s chain of 1,000 tasks, laid
//!   out in layers (its diagram section ignored).
//! - `chain_drawn`: the same model placed from its diagram section (the
//!   separate bpmndi pass over the 650 KB text included).
//! - `branches_layered`: 1,000 nodes of exclusive splits into three
//!   branches and joins, every tenth join looping back: the crossing
//!   reduction and the loop routing at work.
//!
//! Run: `cargo bench -p qflow-engine --bench diagram`.

use std::fmt::Write;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use qflow_engine::diagram::{Diagram, Placement};

// The generator is a test helper behind the `testing` feature; the bench
// compiles it in directly, as the other benches do.
#[allow(dead_code)]
// The generator is API of the model crate; here a private copy.
#[allow(unreachable_pub)]
#[path = "../../model/src/testgen.rs"]
mod testgen;

/// `start → (split → a|b|c → join)×k → end`, 5 nodes per diamond; every
/// tenth join loops back to its split.
fn branches(nodes: usize) -> String {
    let k = nodes / 5;
    let mut s = String::from(concat!(
        r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d" targetNamespace="t">"#,
        r#"<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="start"/>"#
    ));
    let mut prev = "start".to_string();
    let mut f = 0;
    let mut flow = |s: &mut String, a: &str, b: &str| {
        f += 1;
        let _ = write!(
            s,
            r#"<bpmn:sequenceFlow id="f{f}" sourceRef="{a}" targetRef="{b}"/>"#
        );
    };
    for i in 0..k {
        let _ = write!(
            s,
            r#"<bpmn:exclusiveGateway id="s{i}"/><bpmn:exclusiveGateway id="j{i}"/>"#
        );
        flow(&mut s, &prev, &format!("s{i}"));
        for b in ["a", "b", "c"] {
            let _ = write!(s, r#"<bpmn:serviceTask id="{b}{i}" q:task="t.{b}"/>"#);
            flow(&mut s, &format!("s{i}"), &format!("{b}{i}"));
            flow(&mut s, &format!("{b}{i}"), &format!("j{i}"));
        }
        if i % 10 == 9 {
            flow(&mut s, &format!("j{i}"), &format!("s{i}"));
        }
        prev = format!("j{i}");
    }
    s.push_str(r#"<bpmn:endEvent id="end"/>"#);
    flow(&mut s, &prev, "end");
    s.push_str("</bpmn:process></bpmn:definitions>");
    s
}

fn bench(c: &mut Criterion) {
    let chain = testgen::generate(998);
    let defs = qflow_engine::analyze(&chain).definitions.expect("loads");
    let p = &defs.processes[0];
    assert_eq!(p.nodes.len(), 1000);
    assert_eq!(Diagram::of(p, Some(&chain)).placement, Placement::Drawn);
    let mut g = c.benchmark_group("diagram_1000_nodes");
    g.bench_function("chain_layered", |b| {
        b.iter(|| black_box(Diagram::of(black_box(p), None)))
    });
    g.bench_function("chain_drawn", |b| {
        b.iter(|| black_box(Diagram::of(black_box(p), Some(&chain))))
    });
    let text = branches(1000);
    let defs = qflow_engine::analyze(&text).definitions.expect("loads");
    let p = &defs.processes[0];
    assert!(p.nodes.len() >= 1000);
    assert_eq!(
        Diagram::of(p, None).flows.iter().filter(|f| f.back).count(),
        20
    );
    g.bench_function("branches_layered", |b| {
        b.iter(|| black_box(Diagram::of(black_box(p), None)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
