//! The configuration files (`.bpmnlintrc`, `qflow.toml`) in the editor: the
//! same severities as `qflow check`, reloaded when a file changes, and a
//! broken file reported on the file itself.

use crate::harness::Harness;
use serde_json::{json, Value};

const MODEL: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:serviceTask id="charge" name="Charge" q:task="payments.charge"/>
    <bpmn:exclusiveGateway id="gw"/>
    <bpmn:endEvent id="end" name="Paid"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="gw"/>
    <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="end"/>
  </bpmn:process>
</bpmn:definitions>
"#;

/// (code, LSP severity) of every diagnostic.
fn verdicts(diags: &[Value]) -> Vec<(String, i64)> {
    diags
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["severity"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn file_uri(path: &std::path::Path) -> String {
    format!("file://{}", path.display())
}

async fn config_changed(h: &mut Harness, rc: &std::path::Path) {
    h.notify(
        "workspace/didChangeWatchedFiles",
        json!({ "changes": [ { "uri": file_uri(rc), "type": 2 } ] }),
    )
    .await;
}

#[tokio::test]
async fn a_bpmnlintrc_switches_rules_in_the_editor_and_is_reloaded_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let rc = dir.path().join(".bpmnlintrc");
    std::fs::write(&rc, r#"{ "extends": "bpmnlint:recommended", "rules": { "label-required": "off", "no-bpmndi": "off" } }"#).unwrap();
    let model = dir.path().join("order.bpmn");
    std::fs::write(&model, MODEL).unwrap();
    let uri = file_uri(&model);

    let mut h = Harness::initialized().await;
    h.open(&uri, 1, MODEL).await;
    // bpmnlint's severities: superfluous-gateway warns; label-required is off.
    assert_eq!(
        verdicts(&h.diagnostics(&uri, 1).await),
        [("QF123".to_string(), 2)]
    );

    // The team turns the gateway rule off and wants labels as errors.
    std::fs::write(&rc, r#"{ "extends": "bpmnlint:recommended", "rules": { "superfluous-gateway": "off", "no-bpmndi": "off" } }"#).unwrap();
    config_changed(&mut h, &rc).await;
    assert_eq!(
        verdicts(&h.diagnostics(&uri, 1).await),
        [("QF107".to_string(), 1)]
    );

    // A broken file: reported on the file, and qflow's defaults apply meanwhile.
    let broken = "{ \"rules\": { \"superfluous-gateway\": off } }";
    std::fs::write(&rc, broken).unwrap();
    config_changed(&mut h, &rc).await;
    assert_eq!(
        verdicts(&h.diagnostics(&uri, 1).await),
        // Root causes first: the warning before the hint.
        [("QF123".to_string(), 2), ("QF107".to_string(), 4)]
    );
    let n = h.notification("textDocument/publishDiagnostics").await;
    assert_eq!(n["params"]["uri"], file_uri(&rc));
    let problem = &n["params"]["diagnostics"][0];
    assert_eq!(problem["code"], "QF090");
    // At the unquoted `off`.
    let at = broken.find("off").unwrap();
    assert_eq!(
        problem["range"]["start"],
        json!({ "line": 0, "character": at })
    );

    // Fixed without a notification: the next analysis notices the new file.
    std::fs::write(&rc, r#"{ "rules": { "no-implicit-end": "error" } }"#).unwrap();
    h.change(&uri, 2, MODEL).await;
    assert!(h.diagnostics(&uri, 2).await.is_empty());
    // … and the file's problem is cleared.
    loop {
        let n = h.notification("textDocument/publishDiagnostics").await;
        if n["params"]["uri"] == file_uri(&rc) {
            assert_eq!(n["params"]["diagnostics"], json!([]));
            break;
        }
    }
    h.stop().await;
}

/// bpmnlint's two rules outside its recommended set run in the editor once
/// a `.bpmnlintrc` turns them on, on the definition and on the shape.
#[tokio::test]
async fn conditional_event_and_standard_size_run_when_a_bpmnlintrc_turns_them_on() {
    const DRAWN: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:intermediateCatchEvent id="wait" name="Restocked"><bpmn:conditionalEventDefinition/></bpmn:intermediateCatchEvent>
    <bpmn:task id="t" name="Shelve"/>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="dia"><bpmndi:BPMNPlane id="pl" bpmnElement="p">
    <bpmndi:BPMNShape id="wait_di" bpmnElement="wait"><dc:Bounds x="0" y="0" width="36" height="36"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="t_di" bpmnElement="t"><dc:Bounds x="100" y="0" width="120" height="80"/></bpmndi:BPMNShape>
  </bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>
"#;
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("restock.bpmn");
    std::fs::write(&model, DRAWN).unwrap();
    let uri = file_uri(&model);
    let mut h = Harness::initialized().await;
    // Off without a configuration.
    h.open(&uri, 1, DRAWN).await;
    let codes: Vec<String> = verdicts(&h.diagnostics(&uri, 1).await)
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    assert!(
        !codes.iter().any(|c| c == "QF126" || c == "QF127"),
        "{codes:?}"
    );
    let rc = dir.path().join(".bpmnlintrc");
    std::fs::write(
        &rc,
        r#"{ "rules": { "conditional-event": "warn", "standard-size": "error" } }"#,
    )
    .unwrap();
    config_changed(&mut h, &rc).await;
    let diags = h.diagnostics(&uri, 1).await;
    let mut got: Vec<(String, i64, Value)> = diags
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["severity"].as_i64().unwrap(),
                d["range"]["start"].clone(),
            )
        })
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let line_of = |needle: &str| {
        let at = DRAWN.find(needle).unwrap();
        let line = DRAWN[..at].matches('\n').count();
        let col = at - DRAWN[..at].rfind('\n').map_or(0, |n| n + 1);
        json!({ "line": line, "character": col })
    };
    assert_eq!(
        got,
        [
            (
                "QF126".to_string(),
                2,
                line_of("bpmn:conditionalEventDefinition/>")
            ),
            (
                "QF127".to_string(),
                1,
                line_of("bpmndi:BPMNShape id=\"t_di\"")
            ),
        ]
    );
    h.stop().await;
}
