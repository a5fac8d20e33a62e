//! A large document is read on two threads (`reader::read_source` splits it
//! before its diagram); the answer must be exactly the one-thread read's:
//! the same model, the same QF002, the same first fault, the same
//! diagnostics. Held here against the one-thread read on every model in the
//! repository, the MIWG corpus, the generated model, each of them cut short,
//! and documents written to put a split candidate where it does not split
//! the document (in a comment, CDATA, an attribute, extension content, a
//! deeper element), with two diagrams, a process after the diagram,
//! namespaces declared on the diagram, and faults on either side of the
//! split. Splits are forced at the diagram and at every `<` of the small
//! documents, so both the kept split and its rejection are exercised.

mod reader_corners;
use reader_corners::{repository_and_corpus_models, BODY, HEAD};

use qflow_engine::loader::DRAWING_LEAVES;
use qflow_engine::reader::{SplitOutcome, SplitPlan};
use qflow_engine::{reader, rules, testgen, xml};

/// The split read at `split` (between children of the root) equals the
/// one-thread read (model, QF002 or fault, and the rules' diagnostics when
/// `diagnostics`); whether both halves were kept.
fn same_at(name: &str, src: &str, split: usize, diagnostics: bool) -> bool {
    let whole = reader::read_source_whole(src, DRAWING_LEAVES);
    same_as(name, src, &whole, split, diagnostics)
}

fn same_as(name: &str, src: &str, whole: &reader::Read, split: usize, diagnostics: bool) -> bool {
    let plan = SplitPlan { enter: None, split };
    same_plan(name, src, whole, plan, diagnostics) == SplitOutcome::Kept
}

/// The split read by `plan` equals the one-thread read; how it went.
fn same_plan(
    name: &str,
    src: &str,
    whole: &reader::Read,
    plan: SplitPlan,
    diagnostics: bool,
) -> SplitOutcome {
    let (read, outcome) = reader::read_source_split_at(src, DRAWING_LEAVES, plan);
    assert!(
        &read == whole,
        "{name} split by {plan:?} ({outcome:?}): the split read differs from the whole read"
    );
    if diagnostics {
        if let (Ok(Ok(a)), Ok(Ok(b))) = (&read, whole) {
            assert_eq!(
                rules::check(a, src),
                rules::check(b, src),
                "{name} split by {plan:?}: diagnostics differ"
            );
        }
    }
    outcome
}

/// Every `<` of `src` as the split, between children of the root and
/// between children of each process: the split read always equals the
/// whole read. Returns how many splits were kept.
fn every_lt(name: &str, src: &str) -> usize {
    let whole = reader::read_source_whole(src, DRAWING_LEAVES);
    let mut enters = vec![None];
    enters.extend(src.match_indices("<bpmn:process").map(|(at, _)| Some(at)));
    let mut kept = 0;
    for enter in enters {
        for (split, _) in src.match_indices('<') {
            let outcome = same_plan(name, src, &whole, SplitPlan { enter, split }, false);
            kept += usize::from(outcome == SplitOutcome::Kept);
        }
    }
    kept
}

const DIAGRAM: &str = r#"<bpmndi:BPMNDiagram id="Dg2"><bpmndi:BPMNPlane id="Pl2" bpmnElement="P2"><bpmndi:BPMNShape id="Sh2" bpmnElement="P2" isExpanded="true"><dc:Bounds x="0" y="0" width="500" height="300"/></bpmndi:BPMNShape><bpmndi:BPMNShape id="Sh3" bpmnElement="T"><dc:Bounds x="10" y="10" width="100" height="80"/></bpmndi:BPMNShape></bpmndi:BPMNPlane></bpmndi:BPMNDiagram>"#;

/// The corner document with `before` just before its diagram and `after`
/// just before the root's end tag.
fn corners(before: &str, after: &str) -> String {
    let body = BODY.replacen(
        "<bpmndi:BPMNDiagram id=\"Dg\">",
        &format!("{before}<bpmndi:BPMNDiagram id=\"Dg\">"),
        1,
    );
    let body = body.replacen(
        "</bpmn:definitions>",
        &format!("{after}</bpmn:definitions>"),
        1,
    );
    format!("{HEAD}{body}")
}

#[test]
fn the_generated_model_splits_before_its_diagram_and_reads_the_same() {
    let src = testgen::generate(2_000);
    assert!(
        src.len() >= reader::SPLIT_THRESHOLD,
        "large enough to be split by read_source: {} bytes",
        src.len()
    );
    let split = reader::diagram_start(&src).expect("the generated model has a diagram");
    assert!(src[split..].starts_with("<bpmndi:BPMNDiagram"));
    let whole = reader::read_source_whole(&src, DRAWING_LEAVES);
    let Ok(Ok(model)) = &whole else {
        panic!("the generated model reads");
    };
    assert!(!model.shape_bounds.is_empty() && !model.diagram_elements.is_empty());
    assert!(
        same_as("generated", &src, &whole, split, true),
        "the split is kept"
    );
    // What every face calls splits it on its own, inside the process so
    // both threads have about the same work, to the same answer.
    let plan = reader::split_plan(&src).expect("a plan");
    let process = src.find("<bpmn:process").expect("a process");
    assert_eq!(plan.enter, Some(process));
    assert!(plan.split > process && plan.split < split, "{plan:?}");
    assert_eq!(
        same_plan("generated", &src, &whole, plan, true),
        SplitOutcome::Kept
    );
    assert!(reader::read_source(&src, DRAWING_LEAVES) == whole);
    // Inside the process at a `<` that is not one of its children: the
    // first thread reads on alone.
    let incoming = src.find("<bpmn:incoming").unwrap();
    let deeper = SplitPlan {
        enter: plan.enter,
        split: incoming,
    };
    assert_eq!(
        same_plan("generated", &src, &whole, deeper, false),
        SplitOutcome::Continued
    );
    // Splits between two children of the root other than the diagram are
    // kept too; a split inside an element is not.
    assert!(same_as("generated", &src, &whole, process, false));
    let task = src.find("<bpmn:serviceTask").expect("a task");
    assert!(!same_as("generated", &src, &whole, task, false));
    let _ = process;
    // Cut short: a fault, the whole read's; after the split point, the
    // second half finds it itself.
    for k in 1..10 {
        let cut = &src[..src.len() * k / 10];
        let whole = reader::read_source_whole(cut, DRAWING_LEAVES);
        assert!(whole.is_err());
        if let Some(plan) = reader::split_plan(cut).filter(|p| p.enter.is_some()) {
            let outcome = same_plan("generated cut", cut, &whole, plan, false);
            assert_eq!(outcome, SplitOutcome::Fault, "cut at {k}/10");
        }
    }
}

#[test]
fn every_model_in_the_repository_and_the_corpus_reads_the_same_split() {
    let files = repository_and_corpus_models();
    let (mut kept, mut planned) = (0, 0);
    for path in &files {
        let bytes = std::fs::read(path).expect("readable model");
        let Ok(src) = xml::decode(&bytes) else {
            continue;
        };
        let name = path.display().to_string();
        let whole = reader::read_source_whole(src, DRAWING_LEAVES);
        if let Some(split) = reader::diagram_start(src) {
            kept += usize::from(same_as(&name, src, &whole, split, true));
        }
        if let Some(plan) = reader::split_plan(src) {
            planned += usize::from(same_plan(&name, src, &whole, plan, true) == SplitOutcome::Kept);
        }
        // Every `<` of the small ones, a spread of them in the others.
        let lts: Vec<usize> = src.match_indices('<').map(|(at, _)| at).collect();
        let step = (lts.len() / 200).max(1);
        let enter = reader::split_plan(src).and_then(|p| p.enter);
        for &split in lts.iter().step_by(step) {
            same_as(&name, src, &whole, split, false);
            same_plan(&name, src, &whole, SplitPlan { enter, split }, false);
        }
        for k in [3, 5, 9] {
            let cut = &src[..src.floor_char_boundary(src.len() * k / 10)];
            let split = reader::diagram_start(cut).unwrap_or(cut.len() / 2);
            same_at(&name, cut, split, false);
        }
    }
    // With the interchange corpus beside the checkout (CI) the corpus adds
    // its 21 models; a fresh clone has the repository's own alone, which
    // keep the split before the diagram in 13 models and the split plan in
    // 103 (measured without ../shared).
    println!("splits kept before the diagram in {kept} models, split plans in {planned}");
    let floor = if reader_corners::corpus_present() {
        20
    } else {
        10
    };
    assert!(
        kept >= floor,
        "splits before the diagram kept in {kept} models"
    );
    assert!(planned >= floor, "split plans kept in {planned} models");
}

#[test]
fn the_corner_document_reads_the_same_split_anywhere() {
    let src = format!("{HEAD}{BODY}");
    let split = reader::diagram_start(&src).expect("a diagram");
    assert!(
        same_at("corners", &src, split, true),
        "kept before the diagram"
    );
    let kept = every_lt("corners", &src);
    // The root's direct children: 16 before the diagram, the diagram.
    assert!(kept >= 10, "{kept} splits kept");
}

#[test]
fn a_candidate_that_does_not_split_the_document_reads_it_whole() {
    for (what, before, after) in [
        ("a comment", "<!-- <bpmndi:BPMNDiagram id=\"C\"> -->", ""),
        (
            "CDATA",
            "<bpmn:process id=\"P3\"><bpmn:task id=\"T3\"><bpmn:documentation><![CDATA[<bpmndi:BPMNDiagram id=\"C\">]]></bpmn:documentation></bpmn:task></bpmn:process>",
            "",
        ),
        (
            "extension content",
            "<bpmn:extensionElements><bpmndi:BPMNDiagram id=\"InExt\"/></bpmn:extensionElements>",
            "",
        ),
        (
            "a deeper element",
            "<bpmn:process id=\"P3\"><bpmndi:BPMNDiagram id=\"Deep\"/></bpmn:process>",
            "",
        ),
        ("a processing instruction", "<?pi <bpmndi:BPMNDiagram id=\"C\"> ?>", ""),
        (
            "an attribute value",
            "<bpmn:process id=\"P3\" name=\"a &lt;bpmndi:BPMNDiagram id &gt;\"/>",
            "",
        ),
    ] {
        let src = corners(before, "");
        let split = reader::diagram_start(&src).expect("a candidate");
        let whole = reader::read_source_whole(&src, DRAWING_LEAVES);
        assert!(matches!(whole, Ok(Ok(_))), "{what}: a model");
        // The attribute's candidate is escaped, so not a candidate at all.
        if what != "an attribute value" {
            assert!(
                !src[split..].starts_with("<bpmndi:BPMNDiagram id=\"Dg\""),
                "{what}: the first candidate is the decoy"
            );
            assert!(!same_as(what, &src, &whole, split, true), "{what}: rejected");
        }
        every_lt(what, &src);
        let _ = after;
    }
}

#[test]
fn two_diagrams_a_process_after_the_diagram_and_namespaces_on_it_read_the_same() {
    let process_after = r#"<bpmn:process id="P9" isExecutable="true"><bpmn:startEvent id="S9"/><bpmn:sequenceFlow id="F99" sourceRef="S9" targetRef="T9"/><bpmn:serviceTask id="T9" q:task="late"><bpmn:extensionElements><q:retry maxAttempts="2"/></bpmn:extensionElements></bpmn:serviceTask></bpmn:process><bpmn:error id="E9"/><bpmn:message id="M9"/><bpmn:collaboration id="C9"><bpmn:participant id="Pa9"/></bpmn:collaboration><q:channelConfig channel="late"/>"#;
    for (what, src) in [
        ("two diagrams", corners("", DIAGRAM)),
        ("a process after the diagram", corners("", process_after)),
        (
            "both",
            corners("", &format!("{DIAGRAM}{process_after}{DIAGRAM}")),
        ),
    ] {
        assert!(
            same_at(what, &src, reader::diagram_start(&src).unwrap(), true),
            "{what}: kept"
        );
        assert!(every_lt(what, &src) >= 10, "{what}");
    }
    // The diagram binds its own prefixes, and the only declaration of
    // qflow's namespace is on it: the model still declares qflow.
    let head = HEAD.replace(r#" xmlns:q="urn:qflow:bpmn:1""#, "");
    let src = format!(
        "{head}<bpmn:process id=\"P\"/>\n<d:BPMNDiagram xmlns:d=\"http://www.omg.org/spec/BPMN/20100524/DI\" xmlns:z=\"urn:qflow:bpmn:1\" xmlns:w=\"urn:w\" id=\"Dg\" z:mark=\"1\"><d:BPMNPlane bpmnElement=\"P\"><d:BPMNShape id=\"S\" bpmnElement=\"P\"><dc:Bounds x=\"1\" y=\"1\" width=\"1\" height=\"1\"/></d:BPMNShape></d:BPMNPlane></d:BPMNDiagram></bpmn:definitions >\n<!-- after --><?pi?>\n"
    );
    let split = reader::diagram_start(&src).unwrap();
    assert!(src[split..].starts_with("<d:BPMNDiagram"));
    assert!(same_at("prefixes on the diagram", &src, split, true));
    let Ok(Ok(model)) =
        reader::read_source_split_at(&src, DRAWING_LEAVES, SplitPlan { enter: None, split }).0
    else {
        panic!("a model");
    };
    assert!(model.declares_qflow, "declared on the diagram only");
    assert_eq!(model.shape_bounds.len(), 1);
    every_lt("prefixes on the diagram", &src);
    // A default namespace on the diagram, no prefix.
    let src = src.replace("d:BPMN", "BPMN").replace("xmlns:d=", "xmlns=");
    let split = reader::diagram_start(&src).unwrap();
    assert!(src[split..].starts_with("<BPMNDiagram "));
    assert!(same_at(
        "default namespace on the diagram",
        &src,
        split,
        true
    ));
}

#[test]
fn faults_and_refusals_on_either_side_of_the_split_are_the_whole_reads() {
    let faults = [
        (
            "a mismatched end tag before",
            "<bpmn:process id=\"X\"><bpmn:task></bpmn:tusk></bpmn:process>",
            "",
        ),
        (
            "an unknown entity before",
            "<bpmn:process id=\"X\" name=\"&nope;\"/>",
            "",
        ),
        (
            "a `<` in an attribute before",
            "<bpmn:process id=\"X\" name=\"<bpmndi:BPMNDiagram id\"/>",
            "",
        ),
        (
            "an unclosed comment before",
            "<!-- <bpmndi:BPMNDiagram id=\"C\">",
            "",
        ),
        (
            "a mismatched end tag after",
            "",
            "<bpmn:process></bpmn:proces>",
        ),
        ("an undeclared prefix after", "", "<u:thing/>"),
        (
            "an unknown entity after",
            "",
            "<bpmn:process name=\"&nope;\"/>",
        ),
        ("a stray end tag after", "", "</bpmn:process>"),
        ("too deep after", "", &"<bpmn:a>".repeat(300)),
    ];
    for (what, before, after) in faults {
        let src = corners(before, after);
        let whole = reader::read_source_whole(&src, DRAWING_LEAVES);
        assert!(whole.is_err(), "{what}: a fault");
        let split = reader::diagram_start(&src).unwrap();
        let whole = reader::read_source_whole(&src, DRAWING_LEAVES);
        let outcome = same_plan(what, &src, &whole, SplitPlan { enter: None, split }, false);
        // A fault after the split is the second half's to report, unless it
        // is an end tag of an element the second reader never saw opened.
        let found_after = !after.is_empty() && !after.starts_with("</");
        assert_eq!(
            outcome == SplitOutcome::Fault,
            found_after,
            "{what}: {outcome:?}"
        );
        every_lt(what, &src);
    }
    // Around and after the root's end tag.
    let src = format!("{HEAD}{BODY}");
    for (what, tail) in [
        ("text after the root", "tail"),
        ("a second root", "<bpmn:definitions/>"),
        ("an end tag after the root", "</bpmn:definitions>"),
    ] {
        let src = format!("{src}{tail}");
        let whole = reader::read_source_whole(&src, DRAWING_LEAVES);
        assert!(whole.is_err(), "{what}: a fault");
        assert!(!same_at(
            what,
            &src,
            reader::diagram_start(&src).unwrap(),
            false
        ));
        every_lt(what, &src);
    }
    let mismatched_root = format!(
        "{HEAD}{}",
        BODY.replace("</bpmn:definitions>", "</bpmn:definition>")
    );
    assert!(!same_at(
        "mismatched root",
        &mismatched_root,
        reader::diagram_start(&mismatched_root).unwrap(),
        false
    ));
    every_lt("mismatched root", &mismatched_root);
    // QF002 is decided at the root, before any split: the document is read
    // whole for its faults.
    for src in [
        format!(
            "{}{BODY}",
            HEAD.replace("20100524/MODEL\"", "20100524/MODEL-NOT\"")
        ),
        HEAD.replace("<bpmn:definitions", "<bpmn:process")
            + &BODY.replace("</bpmn:definitions>", "</bpmn:process>"),
    ] {
        let whole = reader::read_source_whole(&src, DRAWING_LEAVES);
        assert!(
            matches!(&whole, Ok(Err(d)) if d.code.as_str() == "QF002"),
            "{whole:?}"
        );
        assert!(!same_at(
            "QF002",
            &src,
            reader::diagram_start(&src).unwrap(),
            false
        ));
        every_lt("QF002", &src);
    }
    // An empty root, a byte order mark, U+FEFF as text after the root tag.
    let bom = format!("\u{feff}{HEAD}{BODY}");
    assert!(same_at(
        "a BOM",
        &bom,
        reader::diagram_start(&bom).unwrap(),
        true
    ));
    let feff_text = format!("{HEAD}\u{feff}{BODY}");
    every_lt("U+FEFF after the root tag", &feff_text);
    let empty = HEAD.replace("id=\"D\">", "id=\"D\"/><!-- <bpmndi:BPMNDiagram> -->");
    every_lt("an empty root", &empty);
}

/// `src` with `what` inserted at byte `at`.
fn with_at(src: &str, at: usize, what: &str) -> String {
    format!("{}{what}{}", &src[..at], &src[at..])
}

/// The split read of `src` by `read_source`'s own plan equals the whole
/// read, whose verdict is a fault exactly covering `expected` at byte
/// `at`; how the split read went.
fn forbidden_verdict(what: &str, src: &str, at: usize, expected: &str) -> SplitOutcome {
    assert!(
        src.len() >= reader::SPLIT_THRESHOLD,
        "{what}: split by read_source"
    );
    let whole = reader::read_source_whole(src, DRAWING_LEAVES);
    let Err(fault) = &whole else {
        panic!("{what}: a fault, not {whole:?}");
    };
    assert_eq!(
        (
            fault.span.start(),
            &src[fault.span.start()..fault.span.end()]
        ),
        (at, expected),
        "{what}: {}",
        fault.message
    );
    assert!(
        fault.message.contains("not allowed in XML"),
        "{what}: {}",
        fault.message
    );
    assert!(reader::read_source(src, DRAWING_LEAVES) == whole, "{what}");
    let plan = reader::split_plan(src).expect("a plan");
    same_plan(what, src, &whole, plan, false)
}

#[test]
fn a_forbidden_character_on_either_side_of_the_split_is_the_whole_reads_verdict() {
    let clean = testgen::generate(2_000);
    let plan = reader::split_plan(&clean).expect("a plan");
    assert!(plan.enter.is_some(), "{plan:?}");
    // Inside the id of the first element after `from`.
    let name_after = |from: usize| from + clean[from..].find(" id=\"").unwrap() + 5;
    let first_half = name_after(plan.enter.unwrap() + 1);
    let second_half = name_after(plan.split);
    assert!(first_half < plan.split && second_half > plan.split);
    for bad in ["\u{1}", "\u{1F}", "\u{B}", "\u{FFFE}", "\u{FFFF}"] {
        // The first half faults: read whole again, the same verdict.
        let src = with_at(&clean, first_half, bad);
        let outcome = forbidden_verdict("first half", &src, first_half, bad);
        assert_eq!(outcome, SplitOutcome::Whole, "{bad:?}");
        // The second half reads on from the whole read's state: its fault
        // is the verdict, found on the second thread.
        let src = with_at(&clean, second_half, bad);
        let outcome = forbidden_verdict("second half", &src, second_half, bad);
        assert_eq!(outcome, SplitOutcome::Fault, "{bad:?}");
        // The last byte of the first half (whitespace before the element
        // the split starts at), and the first text after the split's tag.
        let src = with_at(&clean, plan.split, bad);
        assert_eq!(
            reader::split_plan(&src).unwrap().split,
            plan.split + bad.len()
        );
        let outcome = forbidden_verdict("just before the split", &src, plan.split, bad);
        assert_eq!(outcome, SplitOutcome::Whole, "{bad:?}");
        let after_tag = plan.split + clean[plan.split..].find('>').unwrap() + 1;
        let src = with_at(&clean, after_tag, bad);
        assert_eq!(reader::split_plan(&src).unwrap().split, plan.split);
        let outcome = forbidden_verdict("just after the split", &src, after_tag, bad);
        assert_eq!(outcome, SplitOutcome::Fault, "{bad:?}");
        // One in each half: the first in document order.
        let src = with_at(&with_at(&clean, second_half, bad), first_half, "\u{2}");
        let outcome = forbidden_verdict("both halves", &src, first_half, "\u{2}");
        assert_eq!(outcome, SplitOutcome::Whole, "{bad:?}");
    }
    // A character reference to one, in either half.
    let src = with_at(&clean, second_half, "&#1;");
    let whole = reader::read_source_whole(&src, DRAWING_LEAVES);
    assert!(
        matches!(&whole, Err(e) if e.span.start() == second_half && e.message.contains("&#1;"))
    );
    let plan = reader::split_plan(&src).unwrap();
    assert_eq!(
        same_plan("a reference", &src, &whole, plan, false),
        SplitOutcome::Fault
    );
}

#[test]
fn a_forbidden_character_reads_the_same_split_anywhere_in_the_corner_document() {
    for bad in ["\u{1}", "\u{FFFF}", "&#x1F;"] {
        for (what, before, after) in [
            (
                "in a comment before the diagram",
                format!("<!-- {bad} -->"),
                String::new(),
            ),
            (
                "in text after the diagram",
                String::new(),
                format!("<bpmn:process id=\"Y\" name=\"{bad}\"/>"),
            ),
            (
                "in both",
                format!("<bpmn:process id=\"X\" name=\"{bad}\"/>"),
                format!("<!-- {bad} -->"),
            ),
        ] {
            if bad.starts_with('&') && before.starts_with("<!--") {
                // A reference is no reference in a comment.
                continue;
            }
            let src = corners(&before, &after);
            let whole = reader::read_source_whole(&src, DRAWING_LEAVES);
            assert!(whole.is_err(), "{what} {bad:?}");
            every_lt(what, &src);
        }
    }
}
