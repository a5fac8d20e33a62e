//! The loader has the parser leave the diagram's coordinate leaves
//! (`dc:Bounds`, `di:waypoint`) out of what it hands on, to save memory. That
//! must change nothing a user sees: the model and every diagnostic are those
//! read with every leaf kept, and the XML tree keeps every other span.
//!
//! The MIWG corpus is read from `<repo>/../shared/corpus/miwg` when present.

use qflow_engine::loader::DRAWING_LEAVES;
use qflow_engine::{reader, rules, testgen, xml};

/// Model, diagnostics and spans with every leaf kept and with leaves left out.
// The reads are compared whole, QF002 included.
#[allow(clippy::result_large_err)]
fn assert_same_verdicts(name: &str, src: &str) -> (usize, usize) {
    let full = xml::parse(src).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let trimmed = xml::parse_with(src, DRAWING_LEAVES).expect("same well-formedness");
    // The model and verdicts read with every leaf kept, and as the loader
    // reads them, leaving the leaves out.
    let verdicts = |options| {
        reader::read_source(src, options)
            .expect("well-formed")
            .map(|d| {
                let diags = rules::check(&d, src);
                (d, diags)
            })
    };
    let from_full = verdicts(xml::ParseOptions::default());
    let from_trimmed = verdicts(DRAWING_LEAVES);
    assert_eq!(
        from_full, from_trimmed,
        "{name}: model or diagnostics differ"
    );
    // Every element kept has the span it has in the full tree.
    let spans = |doc: &xml::XmlDoc<'_>| -> Vec<_> {
        doc.elements
            .iter()
            .filter(|e| !is_leaf_like(e))
            .map(|e| {
                (
                    e.span,
                    e.start_tag(),
                    e.name_span(),
                    e.text_span(),
                    e.parent().is_some(),
                )
            })
            .collect()
    };
    assert_eq!(spans(&full), spans(&trimmed), "{name}: spans differ");
    (full.elements.len(), trimmed.elements.len())
}

fn is_leaf_like(e: &xml::XmlElement<'_>) -> bool {
    (e.in_ns(reader::DC_NS) || e.in_ns(reader::DI_NS)) && !e.has_children()
}

#[test]
fn generated_model_drops_exactly_its_coordinate_leaves() {
    let src = testgen::generate(300);
    let (full, trimmed) = assert_same_verdicts("generated", &src);
    let leaves = src.matches("<dc:Bounds ").count() + src.matches("<di:waypoint ").count();
    assert!(leaves > 0);
    assert_eq!(full - trimmed, leaves);
}

const DOC_HEAD: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" xmlns:di="http://www.omg.org/spec/DD/20100524/DI" xmlns:q="urn:qflow:bpmn:1" xmlns:v="urn:vendor" id="D">
<bpmn:process id="P" isExecutable="true"><bpmn:startEvent id="S"/></bpmn:process>
<bpmndi:BPMNDiagram id="Dg"><bpmndi:BPMNPlane id="Pl" bpmnElement="P">
<bpmndi:BPMNShape id="Sh" bpmnElement="S">"#;
const DOC_TAIL: &str =
    "</bpmndi:BPMNShape></bpmndi:BPMNPlane></bpmndi:BPMNDiagram></bpmn:definitions>";

#[test]
fn leaves_the_model_reads_are_kept() {
    let cases = [
        // An id (QF003 sees duplicates in bpmndi content too).
        (r#"<dc:Bounds id="S" x="1" y="2" width="3" height="4"/>"#, 1),
        // A reference attribute.
        (r#"<di:waypoint x="1" y="2" sourceRef="Nowhere"/>"#, 1),
        // qflow vocabulary (QF006) and a vendor attribute.
        (
            r#"<di:waypoint x="1" q:retry="3"/><dc:Bounds v:k="1" x="0"/>"#,
            2,
        ),
        // Not empty: it may hold anything.
        (r#"<dc:Bounds x="1"></dc:Bounds>"#, 1),
        // Plain leaves go.
        (
            r#"<bpmndi:BPMNLabel><dc:Bounds x="1" y="2" width="3" height="4"/></bpmndi:BPMNLabel>"#,
            0,
        ),
    ];
    for (inner, kept_leaves) in cases {
        let src = format!("{DOC_HEAD}{inner}{DOC_TAIL}");
        let (_, _) = assert_same_verdicts(inner, &src);
        let trimmed = xml::parse_with(&src, DRAWING_LEAVES).unwrap();
        let leaves = trimmed.elements.iter().filter(|e| is_leaf_like(e)).count();
        assert_eq!(leaves, kept_leaves, "{inner}");
    }
}

#[test]
fn left_out_leaves_are_still_checked_for_well_formedness() {
    for (inner, fault) in [
        (r#"<dc:Bounds x="1" x="2"/>"#, "appears twice"),
        (r#"<zz:Bounds x="1"/>"#, "prefix `zz` is not declared"),
        (r#"<dc:Bounds x="1 < 2"/>"#, "`<` inside an attribute value"),
        (r#"<dc:Bounds x="&bad;"/>"#, "bad escape"),
    ] {
        let src = format!("{DOC_HEAD}{inner}{DOC_TAIL}");
        let full = xml::parse(&src).unwrap_err();
        let trimmed = xml::parse_with(&src, DRAWING_LEAVES).unwrap_err();
        assert_eq!(full, trimmed, "{inner}");
        assert!(trimmed.message.contains(fault), "{inner}: {trimmed:?}");
    }
}

#[test]
fn corpus_models_read_the_same() {
    let dir = std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../shared/corpus/miwg");
    if !dir.is_dir() {
        println!("skipping: ../shared/corpus/miwg not found");
        return;
    }
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus folder is readable") {
        let path = entry.expect("directory entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("bpmn") {
            continue;
        }
        let bytes = std::fs::read(&path).expect("readable corpus file");
        let src = xml::decode(&bytes).expect("corpus files are UTF-8");
        assert_same_verdicts(&path.display().to_string(), src);
        seen += 1;
    }
    assert!(seen >= 20, "expected the 21 MIWG models, found {seen}");
}
