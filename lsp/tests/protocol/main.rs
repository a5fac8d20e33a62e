//! The language server driven over the wire protocol, one module per feature.
//!
//! Every test talks to a real `tower_lsp_server::Server` through framed
//! messages ([`harness::Harness`], which lives with the tests); expectations are computed
//! independently (positions counted in the test, edits applied by the test)
//! or pinned as insta snapshots where the output is the contract.

mod code_actions;
mod completion;
mod configuration;
mod diagnostics;
pub mod harness;
mod hover;
mod modelling_fixes;
mod navigation;
mod robustness;
mod symbols;

use serde_json::{json, Value};

pub const URI: &str = "file:///work/models/model.bpmn";

pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The LSP position (line, UTF-16 column) of byte `offset`, counted here
/// rather than with the engine's LineIndex so the two can disagree.
pub fn lsp_pos(text: &str, offset: usize) -> (u64, u64) {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u64;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..]
        .trim_end_matches('\r')
        .encode_utf16()
        .count() as u64;
    (line, col)
}

/// The position `delta` bytes into the first occurrence of `needle`.
pub fn pos_at(text: &str, needle: &str, delta: usize) -> Value {
    let off = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in the text"))
        + delta;
    let (line, character) = lsp_pos(text, off);
    json!({ "line": line, "character": character })
}

pub fn range_of(text: &str, needle: &str) -> Value {
    let start = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in the text"));
    let (l1, c1) = lsp_pos(text, start);
    let (l2, c2) = lsp_pos(text, start + needle.len());
    json!({ "start": { "line": l1, "character": c1 }, "end": { "line": l2, "character": c2 } })
}

/// Byte offset of an LSP position (UTF-16 columns), counted here.
fn offset_of(text: &str, pos: &Value) -> usize {
    let line = pos["line"].as_u64().unwrap() as usize;
    let col = pos["character"].as_u64().unwrap() as usize;
    let mut start = 0;
    for _ in 0..line {
        start += text[start..].find('\n').expect("line exists") + 1;
    }
    let mut units = 0;
    for (i, ch) in text[start..].char_indices() {
        if units >= col || ch == '\n' || ch == '\r' {
            return start + i;
        }
        units += ch.len_utf16();
    }
    text.len()
}

/// Apply LSP TextEdits (non-overlapping) to a text, as an editor does.
pub fn apply_edits(text: &str, edits: &[Value]) -> String {
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset_of(text, &e["range"]["start"]),
                offset_of(text, &e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (s, e, t) in spans {
        out.replace_range(s..e, &t);
    }
    out
}

pub fn text_document(uri: &str) -> Value {
    json!({ "uri": uri })
}

pub fn at(uri: &str, position: Value) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": position })
}

pub fn codes(diags: &[Value]) -> Vec<String> {
    diags
        .iter()
        .map(|d| d["code"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The diagnostics of qflow's own rules: the modelling rules (QF100 upward,
/// bpmnlint's, which judge every plain BPMN document these tests use) have
/// their own tests.
pub fn qflow_only(diags: &[Value]) -> Vec<Value> {
    diags
        .iter()
        .filter(|d| d["code"].as_str().is_some_and(|c| c < "QF100"))
        .cloned()
        .collect()
}

/// The codes of the error-severity diagnostics of qflow's own rules (the
/// advice a rule adds beside them, like QF040's stateful notice, and the
/// modelling rules are not what these tests are about).
pub fn errors(diags: &[Value]) -> Vec<String> {
    qflow_only(diags)
        .iter()
        .filter(|d| d["severity"] == 1)
        .map(|d| d["code"].as_str().unwrap_or("").to_string())
        .collect()
}
