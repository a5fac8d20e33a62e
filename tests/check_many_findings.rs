//! `qflow check`'s human report of a model with tens of thousands of
//! findings: each report reads only its own lines of the model (a copy of
//! the whole model per finding, and a scan from its start, made 40,000
//! findings take 97 s; 20,000 took over 5 minutes in a debug build; now
//! seconds). The time is a benchmark's business, not this test's: it checks
//! that every finding is drawn at its own line.

mod support;

#[test]
fn twenty_thousand_findings_are_reported_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let tasks: String = (0..5000)
        .map(|i| format!("    <task id=\"t{i}\" name=\"T{i}\"/>\n"))
        .collect();
    let model = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <definitions xmlns=\"http://www.omg.org/spec/BPMN/20100524/MODEL\" id=\"defs\" targetNamespace=\"urn:test\">\n\
         <process id=\"p\" isExecutable=\"false\">\n<startEvent id=\"s\"/>\n{tasks}</process>\n</definitions>\n"
    );
    std::fs::write(dir.path().join("many.bpmn"), model).unwrap();
    let out = support::qflow(dir.path(), &["check", "-v", "many.bpmn"]);
    // Findings and the summary are on standard output (docs/cli.md).
    let err = String::from_utf8_lossy(&out.stdout);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("1 file checked:"), "{last}");
    // Every finding is drawn (the last task's too, at its own line).
    assert!(err.contains("t4999"), "the last task's finding is reported");
    assert!(err.contains("many.bpmn:5004:"), "with its own line number");
}
