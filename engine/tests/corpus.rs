//! The BPMN MIWG reference models (real modellers' files) load with no loader
//! error. Their modelling findings (QF100 upward, bpmnlint's rules at
//! bpmnlint's severities) are reviewed goldens, in `tests/corpus.rs` at the
//! repository root.
//!
//! They are read from `<repo>/../shared/corpus/miwg` and never copied into the
//! repository; without that folder the tests say so and pass.

use std::path::PathBuf;

use qflow_engine::Code;

fn corpus_dir() -> Option<PathBuf> {
    let dir = std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../shared/corpus/miwg");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("skipping: ../shared/corpus/miwg not found");
        None
    }
}

fn corpus_files(dir: &PathBuf) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("corpus folder is readable")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bpmn"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_model_loads_without_error() {
    let Some(dir) = corpus_dir() else { return };
    let files = corpus_files(&dir);
    assert!(
        files.len() >= 20,
        "expected the 21 MIWG models, found {}",
        files.len()
    );
    let (mut processes, mut nodes, mut flows, mut ids) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).expect("corpus file is readable");
        let (_, analysis) = qflow_engine::analyze_bytes(&bytes);
        let errors: Vec<String> = analysis
            .errors()
            .filter(|d| !d.code.is_modelling())
            .map(|d| {
                format!(
                    "{} at {}: {}",
                    d.code.as_str(),
                    d.primary.span.start(),
                    d.message
                )
            })
            .collect();
        if !errors.is_empty() {
            failures.push(format!("{}: {errors:?}", path.display()));
            continue;
        }
        let defs = analysis
            .definitions
            .unwrap_or_else(|| panic!("{}: no model", path.display()));
        processes += defs.processes.len();
        nodes += defs.processes.iter().map(|p| p.nodes.len()).sum::<usize>();
        flows += defs.processes.iter().map(|p| p.flows.len()).sum::<usize>();
        ids += defs.ids.len();
    }
    assert!(failures.is_empty(), "{failures:#?}");
    println!(
        "{} corpus models: {processes} processes, {nodes} flow nodes, {flows} sequence flows, {ids} ids",
        files.len()
    );
    // The corpus is not trivially empty: every file is a real diagram.
    assert!(processes >= files.len(), "{processes} processes");
    assert!(nodes > 300, "{nodes} flow nodes");
    assert!(flows > 300, "{flows} sequence flows");
}

/// C.8.0 repeats the process id `VacationRequestProcess` inside an ADONIS
/// vendor extension (`<adonis:target … id="VacationRequestProcess"/>`): vendor
/// content is not BPMN, so that is no duplicate.
#[test]
fn vendor_extension_reusing_a_bpmn_id_is_not_a_duplicate() {
    let Some(dir) = corpus_dir() else { return };
    let path = dir.join("C.8.0.bpmn");
    let text = std::fs::read_to_string(&path).expect("C.8.0.bpmn is readable");
    assert_eq!(
        text.matches("id=\"VacationRequestProcess\"").count(),
        2,
        "the corpus file still has the repeated id this test is about"
    );
    let analysis = qflow_engine::analyze(&text);
    let dups: Vec<_> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::QF003)
        .collect();
    assert!(dups.is_empty(), "{dups:#?}");
    let defs = analysis.definitions.expect("a model");
    let decls: Vec<_> = defs
        .ids
        .iter()
        .filter(|d| d.id.value == "VacationRequestProcess")
        .collect();
    assert_eq!(decls.len(), 1, "only the BPMN process declares it");
    assert_eq!(decls[0].element.local, "process");
}
