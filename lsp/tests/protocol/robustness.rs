use crate::harness::{frame, Harness};
use qflow_lsp::Config;
use serde_json::{json, Value};

use crate::*;

/// The engine, except that it panics on texts containing `PANIC-HERE`.
fn fragile(text: &str, _: &qflow_model::config::Settings) -> qflow_model::Analysis {
    if text.contains("PANIC-HERE") {
        panic!("engine bug triggered on purpose");
    }
    qflow_model::analyze(text)
}

#[tokio::test]
async fn a_panic_in_the_engine_is_an_error_response_not_a_dead_server() {
    let mut h = Harness::initialized_with(Config {
        analyzer: fragile,
        ..Config::default()
    })
    .await;
    let bad = fixture("dbg08.bpmn").replace("Charge card", "PANIC-HERE");
    h.open(URI, 1, &bad).await;
    let r = h
        .request("textDocument/hover", at(URI, pos_at(&bad, "<q:retry", 2)))
        .await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("engine bug triggered on purpose"),
        "{r}"
    );
    // The diagnostics worker logs it and lives on.
    let log = h.notification("window/logMessage").await;
    assert!(
        log["params"]["message"]
            .as_str()
            .unwrap()
            .contains("internal error"),
        "{log}"
    );
    // The same server still serves: the next version analyses fine.
    let good = fixture("dbg08.bpmn");
    h.change(URI, 2, &good).await;
    assert_eq!(errors(&h.diagnostics(URI, 2).await), Vec::<String>::new());
    let r = h
        .request("textDocument/hover", at(URI, pos_at(&good, "<q:retry", 2)))
        .await;
    assert!(r["result"]["contents"]["value"]
        .as_str()
        .unwrap()
        .contains("13 h 1 min"));
    h.stop().await;
}

#[tokio::test]
async fn malformed_json_rpc_gets_an_error_and_the_server_goes_on() {
    let mut h = Harness::initialized().await;
    h.send_raw(&frame("{this is not json")).await;
    let r = h.read().await;
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert_eq!(r["id"], Value::Null);
    // Valid JSON, not a JSON-RPC message.
    h.send_raw(&frame("[1, 2, 3]")).await;
    let r = h.read().await;
    assert!(
        r["error"]["code"] == -32600 || r["error"]["code"] == -32700,
        "{r}"
    );
    // A frame without Content-Length.
    h.send_raw(b"Content-Type: application/json\r\n\r\n").await;
    let r = h.read().await;
    assert_eq!(r["error"]["code"], -32700, "{r}");
    // Params of the wrong shape.
    let r = h
        .request("textDocument/hover", json!({ "textDocument": 42 }))
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = h
        .request(
            "textDocument/documentSymbol",
            json!({ "textDocument": text_document(URI) }),
        )
        .await;
    assert_eq!(r["result"], Value::Null, "not open: no symbols, no error");
    h.stop().await;
}

#[tokio::test]
async fn unknown_methods() {
    let mut h = Harness::initialized().await;
    let r = h.request("qflow/doesNotExist", json!({})).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
    // Unknown notifications (including $/ ones) are ignored.
    h.notify("$/someClientThing", json!({ "x": 1 })).await;
    h.notify("qflow/unknownNotification", json!(null)).await;
    let r = h
        .request(
            "textDocument/documentSymbol",
            json!({ "textDocument": text_document(URI) }),
        )
        .await;
    assert!(r.get("error").is_none(), "{r}");
    h.stop().await;
}

#[tokio::test]
async fn untitled_documents_are_served_like_files() {
    let uri = "untitled:Untitled-1";
    let text = fixture("dbg08.bpmn").replace("targetRef=\"end\"", "targetRef=\"endd\"");
    let mut h = Harness::initialized().await;
    h.open(uri, 1, &text).await;
    assert_eq!(errors(&h.diagnostics(uri, 1).await), ["QF004"]);
    let r = h
        .request("textDocument/hover", at(uri, pos_at(&text, "<q:retry", 2)))
        .await;
    assert!(r["result"]["contents"]["value"]
        .as_str()
        .unwrap()
        .contains("13 h 1 min"));
    h.stop().await;
}

#[tokio::test]
async fn documents_over_the_limit_are_kept_but_not_analysed() {
    let mut h = Harness::initialized_with(Config {
        max_document_bytes: 1_000,
        ..Config::default()
    })
    .await;
    let text = fixture("dbg08.bpmn");
    assert!(text.len() > 1_000);
    h.open(URI, 1, &text).await;
    let msg = h.notification("window/showMessage").await;
    assert!(
        msg["params"]["message"]
            .as_str()
            .unwrap()
            .contains("not analysed"),
        "{msg}"
    );
    assert_eq!(h.diagnostics(URI, 1).await, Vec::<Value>::new());
    let r = h
        .request("textDocument/hover", at(URI, pos_at(&text, "<q:retry", 2)))
        .await;
    assert_eq!(r["result"], Value::Null);
    // Told once per document, not once per keystroke.
    h.change(URI, 2, &format!("{text} ")).await;
    assert_eq!(h.diagnostics(URI, 2).await, Vec::<Value>::new());
    assert!(h
        .notifications
        .iter()
        .all(|n| n["method"] != "window/showMessage"));
    h.stop().await;
}

#[tokio::test]
async fn a_large_generated_model_is_analysed() {
    let text = qflow_model::testgen::generate(2_000);
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let diags = h.diagnostics(URI, 1).await;
    assert!(diags.iter().all(|d| d["severity"] != 1), "{diags:?}");
    let r = h
        .request(
            "textDocument/documentSymbol",
            json!({ "textDocument": text_document(URI) }),
        )
        .await;
    assert!(r["result"][0]["children"].as_array().unwrap().len() > 4_000);
    h.stop().await;
}

#[tokio::test]
async fn requests_before_initialize_are_refused() {
    let mut h = Harness::start(Config::default());
    let r = h
        .request(
            "textDocument/documentSymbol",
            json!({ "textDocument": text_document(URI) }),
        )
        .await;
    assert_eq!(r["error"]["code"], -32002, "{r}");
    let r = h.request("initialize", json!({ "capabilities": {} })).await;
    assert!(r["result"]["capabilities"]["hoverProvider"] == true, "{r}");
    insta::assert_json_snapshot!("capabilities", r["result"]);
}

static ANALYSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn counting(text: &str, _: &qflow_model::config::Settings) -> qflow_model::Analysis {
    ANALYSES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    std::thread::sleep(std::time::Duration::from_millis(50));
    qflow_model::analyze(text)
}

/// Requests that arrive while a version is being analysed wait for that
/// analysis instead of starting their own: one analysis per version.
#[tokio::test]
async fn concurrent_requests_share_one_analysis_per_version() {
    let mut h = Harness::initialized_with(Config {
        analyzer: counting,
        ..Config::default()
    })
    .await;
    let text = fixture("dbg08.bpmn");
    h.open(URI, 1, &text).await;
    let ids = [100, 101, 102];
    h.send(&json!({ "jsonrpc": "2.0", "id": ids[0], "method": "textDocument/hover", "params": at(URI, pos_at(&text, "<q:retry", 2)) })).await;
    h.send(&json!({ "jsonrpc": "2.0", "id": ids[1], "method": "textDocument/documentSymbol", "params": { "textDocument": text_document(URI) } })).await;
    h.send(&json!({ "jsonrpc": "2.0", "id": ids[2], "method": "textDocument/definition", "params": at(URI, pos_at(&text, "targetRef=\"charge", 12)) })).await;
    let mut answered = Vec::new();
    while answered.len() < ids.len() {
        let m = h.read().await;
        if m.get("method").is_some() {
            h.notifications.push_back(m);
        } else {
            assert!(m.get("result").is_some(), "{m}");
            answered.push(m["id"].as_i64().unwrap());
        }
    }
    h.diagnostics(URI, 1).await;
    assert_eq!(ANALYSES.load(std::sync::atomic::Ordering::SeqCst), 1);
    h.stop().await;
}

/// A header claiming an absurd length is answered at once, never allocated;
/// the bytes that follow are that frame's and are skipped as they stream.
#[tokio::test]
async fn an_absurd_content_length_is_refused_without_allocating_it() {
    let mut h = Harness::initialized().await;
    let header = format!(
        "Content-Length: {}\r\n\r\n",
        qflow_lsp::transport::MAX_FRAME + 1
    );
    h.send_raw(header.as_bytes()).await;
    let r = h.read().await;
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("over the limit"),
        "{r}"
    );
}

/// An editor set up for XML (or for everything) opens documents that are
/// not models: they get no diagnostics, and the model opened next does.
#[tokio::test]
async fn documents_that_are_not_models_are_left_alone() {
    let mut h = Harness::initialized().await;
    for (uri, language, text) in [
        ("file:///w/README.md", "markdown", "# Notes\n\nnot XML at all\n"),
        (
            "file:///w/pom.xml",
            "xml",
            "<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion></project>",
        ),
    ] {
        h.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": language, "version": 1, "text": text } }),
        )
        .await;
    }
    // A model the client calls xml, found by its namespace.
    let model = fixture("dbg08.bpmn");
    h.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": "file:///w/process.xml", "languageId": "xml", "version": 1, "text": model } }),
    )
    .await;
    // Every publication up to the model's: none is for the other two.
    let mut seen = Vec::new();
    for (uri, open) in [("file:///w/process.xml", false), (URI, true)] {
        if open {
            h.open(URI, 1, &model).await;
        }
        loop {
            let n = h.notification("textDocument/publishDiagnostics").await;
            let got = n["params"]["uri"].as_str().unwrap().to_string();
            seen.push(got.clone());
            if got == uri {
                break;
            }
        }
    }
    let others: Vec<&String> = seen
        .iter()
        .filter(|u| u.ends_with("README.md") || u.ends_with("pom.xml"))
        .collect();
    assert!(others.is_empty(), "{others:?}");
    h.stop().await;
}

/// A file named as a model is one even before its text says so: a new
/// `order.bpmn20.xml` (the suffix Activiti and Flowable name models with)
/// that an editor set up for XML opens, its namespace not yet typed, gets
/// its verdict as a `.bpmn` would.
#[tokio::test]
async fn a_bpmn20_xml_file_is_a_model_by_its_name() {
    let mut h = Harness::initialized().await;
    let uri = "file:///w/order.bpmn20.xml";
    h.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "xml", "version": 1, "text": "<definitions>" } }),
    )
    .await;
    let n = h.notification("textDocument/publishDiagnostics").await;
    assert_eq!(n["params"]["uri"], uri, "{n}");
    let codes: Vec<&str> = n["params"]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(!codes.is_empty(), "{n}");
    h.stop().await;
}
