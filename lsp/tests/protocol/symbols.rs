use crate::harness::Harness;
use serde_json::{json, Value};

use crate::*;

/// One line per symbol: indentation, kind number, name, detail, selection.
fn outline(symbols: &[Value], depth: usize, out: &mut String) {
    for s in symbols {
        let sel = &s["selectionRange"]["start"];
        out.push_str(&format!(
            "{}[{}] {} ({}) @{}:{}\n",
            "  ".repeat(depth),
            s["kind"],
            s["name"].as_str().unwrap(),
            s["detail"].as_str().unwrap_or(""),
            sel["line"],
            sel["character"]
        ));
        if let Some(children) = s["children"].as_array() {
            outline(children, depth + 1, out);
        }
    }
}

#[tokio::test]
async fn document_symbols_outline_processes_with_their_elements() {
    let mut h = Harness::initialized().await;
    let mut out = String::new();
    for name in ["dbg08.bpmn", "channel.bpmn"] {
        let text = fixture(name);
        let uri = format!("file:///work/{name}");
        h.open(&uri, 1, &text).await;
        let r = h
            .request(
                "textDocument/documentSymbol",
                json!({ "textDocument": text_document(&uri) }),
            )
            .await;
        out.push_str(&format!("# {name}\n"));
        outline(r["result"].as_array().unwrap(), 0, &mut out);
    }
    insta::assert_snapshot!("outline", out);
    h.stop().await;
}
