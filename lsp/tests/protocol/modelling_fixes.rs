//! The modelling rules' quick fixes, end to end as an editor uses them: the
//! diagnostic is published, its code action is requested, the workspace
//! edit is applied to the buffer and sent back as `didChange`, and the
//! diagnostics the server re-publishes for that version no longer carry the
//! code.

use serde_json::{json, Value};

use crate::harness::Harness;
use crate::*;

/// A broken sample of the repository (one model per diagnostic code).
fn sample(name: &str) -> String {
    let path = format!("{}/../samples/broken/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The edits of a workspace edit as `didChange` content changes: one per
/// edit, last position first, so each range is still valid in the text the
/// previous change left (what an editor sends after applying the edit).
fn content_changes(edits: &[Value]) -> Vec<Value> {
    let key = |e: &Value| {
        let s = &e["range"]["start"];
        (
            s["line"].as_u64().unwrap(),
            s["character"].as_u64().unwrap(),
        )
    };
    let mut edits: Vec<&Value> = edits.iter().collect();
    edits.sort_by_key(|e| std::cmp::Reverse(key(e)));
    edits
        .into_iter()
        .map(|e| json!({ "range": e["range"], "text": e["newText"] }))
        .collect()
}

async fn fix_round_trip(h: &mut Harness, code: &str, file: &str, title: &str) {
    let uri = format!("file:///work/modelling-fixes/{file}");
    let text = sample(file);
    h.open(&uri, 1, &text).await;
    let diags = h.diagnostics(&uri, 1).await;
    let offered: Vec<&Value> = diags.iter().filter(|d| d["code"] == code).collect();
    assert!(
        !offered.is_empty(),
        "{file}: {code} not published: {:?}",
        codes(&diags)
    );

    // The code action offered for such a diagnostic (QF112 also marks the
    // flows' source, which has no mechanical fix: the flow does).
    let mut found = None;
    for d in &offered {
        let r = h
            .request(
                "textDocument/codeAction",
                json!({ "textDocument": text_document(&uri), "range": d["range"], "context": { "diagnostics": [d] } }),
            )
            .await;
        let actions = r["result"].as_array().expect("code actions").clone();
        found = actions
            .into_iter()
            .find(|a| a["diagnostics"][0]["code"] == code);
        if found.is_some() {
            break;
        }
    }
    let action = found.unwrap_or_else(|| panic!("{file}: no quick fix for {code}"));
    assert_eq!(action["title"], title);
    assert_eq!(action["kind"], "quickfix");
    let edits = action["edit"]["changes"][&uri]
        .as_array()
        .expect("a workspace edit on the document");

    // Applied in the editor, sent back, re-published.
    h.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": content_changes(edits) }),
    )
    .await;
    let after = h.diagnostics(&uri, 2).await;
    assert!(
        !codes(&after).iter().any(|c| c == code),
        "{file}: {code} still published after `{title}`: {:?}",
        codes(&after)
    );
    assert!(
        after.iter().all(|d| d["severity"] != 1),
        "{file}: `{title}` left an error: {after:?}"
    );
    // The server analysed the text the edit gives: the same edit applied
    // here and checked as `qflow check` checks it has the same codes.
    let fixed = apply_edits(&text, edits);
    let expected: Vec<String> = qflow_model::analyze(&fixed)
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect();
    let mut published = codes(&after);
    let mut expected = expected;
    published.sort();
    expected.sort();
    assert_eq!(
        published, expected,
        "{file}: the editor and check disagree on the fixed text"
    );
    h.notify(
        "textDocument/didClose",
        json!({ "textDocument": text_document(&uri) }),
    )
    .await;
}

#[tokio::test]
async fn modelling_rule_fixes_remove_their_code_when_applied_in_the_editor() {
    let mut h = Harness::initialized().await;
    fix_round_trip(
        &mut h,
        "QF101",
        "QF101-unconditioned-split-flow.bpmn",
        "Make `manual` the default flow of `decide`",
    )
    .await;
    fix_round_trip(
        &mut h,
        "QF112",
        "QF112-duplicate-sequence-flow.bpmn",
        "Remove duplicate flow `f2b`",
    )
    .await;
    fix_round_trip(
        &mut h,
        "QF123",
        "QF123-superfluous-gateway.bpmn",
        "Remove gateway `gw` and reconnect its flows",
    )
    .await;
    h.stop().await;
}
