use crate::harness::Harness;
use serde_json::{json, Value};

use crate::*;

fn lines_of(text: &str, locations: &Value) -> Vec<String> {
    locations
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let r = &l["range"];
            let line = r["start"]["line"].as_u64().unwrap() as usize;
            let a = r["start"]["character"].as_u64().unwrap() as usize;
            let b = r["end"]["character"].as_u64().unwrap() as usize;
            let src = text.lines().nth(line).unwrap();
            format!("{}:{} {}", line + 1, a, &src[a..b])
        })
        .collect()
}

#[tokio::test]
async fn definition_from_every_kind_of_reference() {
    let text = fixture("dbg08.bpmn");
    let channel = fixture("channel.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let charge_decl = range_of(&text, "charge\" name");
    let charge_decl = json!({ "start": charge_decl["start"], "end": { "line": charge_decl["start"]["line"], "character": charge_decl["start"]["character"].as_u64().unwrap() + 6 } });
    for (needle, delta) in [
        ("targetRef=\"charge", 12),   // targetRef
        ("sourceRef=\"charge", 11),   // sourceRef, cursor at the start
        ("bpmnElement=\"charge", 19), // bpmndi bpmnElement, cursor at the end
    ] {
        let r = h
            .request(
                "textDocument/definition",
                at(URI, pos_at(&text, needle, delta)),
            )
            .await;
        assert_eq!(r["result"]["uri"], URI, "{needle}");
        assert_eq!(r["result"]["range"], charge_decl, "{needle}");
    }
    // default and attachedToRef/errorRef-like references in another document.
    let other = "file:///work/channel.bpmn";
    h.open(other, 1, &channel).await;
    let r = h
        .request(
            "textDocument/definition",
            at(other, pos_at(&channel, "default=\"declined-flow", 10)),
        )
        .await;
    assert_eq!(
        r["result"]["range"]["start"],
        pos_at(&channel, "declined-flow\" sourceRef", 0)
    );
    // Not on an id: nothing.
    let r = h
        .request(
            "textDocument/definition",
            at(URI, pos_at(&text, "isExecutable", 2)),
        )
        .await;
    assert_eq!(r["result"], Value::Null);
    h.stop().await;
}

#[tokio::test]
async fn references_include_diagram_and_flow_texts() {
    let text = fixture("dbg08.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let r = h
        .request(
            "textDocument/references",
            json!({ "textDocument": text_document(URI), "position": pos_at(&text, "id=\"to-charge", 6), "context": { "includeDeclaration": true } }),
        )
        .await;
    assert_eq!(
        lines_of(&text, &r["result"]),
        [
            "21:27 to-charge", // the declaration first
            "9:21 to-charge",  // <bpmn:outgoing>
            "15:21 to-charge", // <bpmn:incoming>
            "29:56 to-charge", // bpmnElement
        ]
    );
    let r = h
        .request(
            "textDocument/references",
            json!({ "textDocument": text_document(URI), "position": pos_at(&text, "targetRef=\"charge", 12), "context": { "includeDeclaration": false } }),
        )
        .await;
    assert_eq!(
        lines_of(&text, &r["result"]),
        ["21:67 charge", "22:46 charge", "26:55 charge"]
    );
    h.stop().await;
}

#[tokio::test]
async fn rename_changes_every_occurrence_and_keeps_the_model_valid() {
    let text = fixture("dbg08.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let pos = pos_at(&text, "targetRef=\"charge", 13);
    let prep = h
        .request("textDocument/prepareRename", at(URI, pos.clone()))
        .await;
    assert_eq!(prep["result"]["placeholder"], "charge");
    let start = pos_at(&text, "targetRef=\"charge", 11);
    let end = pos_at(&text, "targetRef=\"charge", 17);
    assert_eq!(
        prep["result"]["range"],
        json!({ "start": start, "end": end })
    );
    let r = h
        .request("textDocument/rename", json!({ "textDocument": text_document(URI), "position": pos, "newName": "charge-card" }))
        .await;
    let edits = r["result"]["changes"][URI].as_array().unwrap().clone();
    assert_eq!(edits.len(), 4);
    let renamed = apply_edits(&text, &edits);
    assert_eq!(renamed.matches("\"charge\"").count(), 0);
    assert_eq!(renamed.matches("\"charge-card\"").count(), 4);
    let analysis = qflow_model::analyze(&renamed);
    assert!(!analysis.has_errors(), "{:?}", analysis.diagnostics);
    // Refused names say why.
    for (name, why) in [
        ("9lives", "start with a letter"),
        ("end", "already exists"),
        ("two words", "not allowed"),
    ] {
        let r = h
            .request("textDocument/rename", json!({ "textDocument": text_document(URI), "position": pos_at(&text, "targetRef=\"charge", 13), "newName": name }))
            .await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(why), "{r}");
    }
    h.stop().await;
}
