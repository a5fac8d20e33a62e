//! The loader reads the model straight from the parser's events
//! (`reader::read_source`), with no element tree. Whatever it is given, it
//! answers: a model, QF002 (not BPMN), or the first XML fault, never a panic.
//! A document cut short anywhere is a fault, never a model read from half
//! a file. Checked on the generated model, every model in the repository
//! (samples, broken samples, conformance models, fixtures), the MIWG corpus,
//! a document written to reach every corner of the reader, and each of those
//! cut short. (When the reader replaced the tree reader, the same inputs
//! showed both reading the same model, QF002 and first fault.)

mod reader_corners;
use reader_corners::{repository_and_corpus_models, BODY, HEAD};

use qflow_engine::loader::DRAWING_LEAVES;
use qflow_engine::{reader, testgen, xml};

/// Read `src` whole, then cut short: the whole reads as `whole` says; a cut
/// that leaves the root element open is an XML fault.
fn assert_reads(name: &str, src: &str, cuts: impl IntoIterator<Item = usize>) {
    let whole = reader::read_source(src, DRAWING_LEAVES);
    assert!(
        matches!(&whole, Ok(Ok(_))),
        "{name}: a model was expected, got {whole:?}"
    );
    let root_end = src.trim_end().len();
    for cut in cuts {
        if !src.is_char_boundary(cut) || cut >= root_end {
            continue;
        }
        let read = reader::read_source(&src[..cut], DRAWING_LEAVES);
        assert!(
            read.is_err(),
            "{name} cut at {cut}: a fault was expected, got a model or QF002"
        );
    }
}

#[test]
fn the_generated_model_reads_and_every_cut_is_a_fault() {
    let src = testgen::generate(500);
    let n = src.len();
    assert_reads("generated", &src, (1..20).map(|k| n * k / 20));
}

#[test]
fn every_model_in_the_repository_and_the_corpus_reads_and_every_cut_is_a_fault() {
    let files = repository_and_corpus_models();
    for path in &files {
        let bytes = std::fs::read(path).expect("readable model");
        let Ok(src) = xml::decode(&bytes) else {
            continue;
        };
        let name = path.display().to_string();
        let n = src.len();
        match reader::read_source(src, DRAWING_LEAVES) {
            // Broken samples may be faulty or not BPMN on purpose.
            Ok(Ok(_)) => assert_reads(&name, src, [n / 3, n / 2, n * 9 / 10]),
            Ok(Err(d)) => assert_eq!(d.code.as_str(), "QF002", "{name}"),
            Err(_) => {}
        }
    }
}

#[test]
fn every_corner_of_the_reader_reads_and_every_cut_is_a_fault() {
    let src = format!("{HEAD}{BODY}");
    let streamed = reader::read_source(&src, DRAWING_LEAVES)
        .expect("well-formed")
        .expect("BPMN");
    // The document does reach the corners it is written for.
    let p = &streamed.processes[0];
    assert!(p.nodes.len() > 20 && p.flows.len() >= 5 && p.lanes.len() == 4);
    assert_eq!(p.later_lane_sets.len(), 2);
    assert!(p.nodes.iter().any(|n| n.scope.is_some()));
    assert_eq!(p.links.len(), 1);
    assert!(streamed.shape_bounds.len() >= 5);
    assert!(streamed.qflow_items.len() >= 8);
    // Cut short anywhere: a fault.
    assert_reads("corners", &src, (0..src.len()).step_by(7));
}

#[test]
fn refusals_and_faults_are_answers_not_panics() {
    for src in [
        "",
        "<a/>",
        r#"<definitions xmlns="urn:other"><process/></definitions>"#,
        r#"<x:definitions xmlns:x="http://www.omg.org/spec/BPMN/20100524/MODEL"><x:process id="P"/></x:definitions>"#,
        r#"<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="P"><startEvent id="S"/></process></definitions>"#,
        r#"<a><b></a>"#,
        r#"<a/><b/>"#,
        "<a>text</a> tail",
        r#"<notbpmn><p:x/></notbpmn>"#,
        r#"<notbpmn>&unknown;</notbpmn>"#,
        r#"<!DOCTYPE x><a/>"#,
    ] {
        let read = reader::read_source(src, DRAWING_LEAVES);
        let bpmn = src
            .contains("<definitions xmlns=\"http://www.omg.org/spec/BPMN/20100524/MODEL\">")
            || src.starts_with("<x:definitions");
        match read {
            Ok(Ok(_)) => assert!(bpmn, "{src}: read as a model"),
            Ok(Err(d)) => assert_eq!(d.code.as_str(), "QF002", "{src}"),
            Err(_) => {}
        }
    }
}
