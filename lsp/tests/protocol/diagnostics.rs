use crate::harness::Harness;
use serde_json::{json, Value};

use crate::*;

/// A QF004 on a line where emoji and accented letters precede the error.
const UNICODE: &str = "<?xml version=\"1.0\"?>\n<bpmn:definitions xmlns:bpmn=\"http://www.omg.org/spec/BPMN/20100524/MODEL\" id=\"d\">\n  <bpmn:process id=\"p\">\n    <bpmn:startEvent id=\"start\"/>\n    <bpmn:endEvent id=\"end\"/>\n    <bpmn:sequenceFlow id=\"f\" name=\"Café 😀 naïve ünïcödé 🎉\" sourceRef=\"start\" targetRef=\"endd\"/>\n    <bpmn:sequenceFlow id=\"f\" sourceRef=\"start\" targetRef=\"end\"/>\n  </bpmn:process>\n</bpmn:definitions>\n";

#[tokio::test]
async fn utf16_ranges_after_emoji_and_accents() {
    let mut h = Harness::initialized_with(crate::harness::with_pages()).await;
    h.open(URI, 1, UNICODE).await;
    let diags = qflow_only(&h.diagnostics(URI, 1).await);
    assert_eq!(codes(&diags), ["QF004", "QF003"]);
    let qf004 = &diags[0];
    // Counted by hand: `    <bpmn:sequenceFlow id="f" name="Café 😀 naïve ünïcödé 🎉" sourceRef="start" targetRef="`
    // is 89 characters; 😀 and 🎉 take two UTF-16 units each: 91.
    assert_eq!(
        qf004["range"],
        json!({ "start": { "line": 5, "character": 91 }, "end": { "line": 5, "character": 95 } })
    );
    assert_eq!(qf004["range"], range_of(UNICODE, "endd"));
    assert_eq!(qf004["severity"], 1);
    assert_eq!(qf004["source"], "qflow");
    assert_eq!(qf004["code"], "QF004");
    // The code links its page, written where any editor opens it offline.
    let href = qf004["codeDescription"]["href"].as_str().unwrap();
    let page = crate::harness::pages().join("QF004.md");
    assert_eq!(
        href,
        qflow_lsp::Uri::from_file_path(&page).unwrap().as_str()
    );
    assert_eq!(
        std::fs::read_to_string(&page).unwrap(),
        qflow_model::Code::QF004.page()
    );
    assert!(
        qf004["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `end`?"),
        "{qf004}"
    );
    // QF003 names the first declaration as related information.
    let related = &diags[1]["relatedInformation"][0];
    assert_eq!(related["location"]["uri"], URI);
    let first = pos_at(UNICODE, "id=\"f\" name", 4);
    assert_eq!(related["location"]["range"]["start"], first);
    assert_eq!(
        related["location"]["range"]["end"]["character"],
        first["character"].as_u64().unwrap() + 1
    );
    h.stop().await;
}

/// A control character XML 1.0 forbids, after characters outside the BMP on
/// the same line (each two UTF-16 units, four UTF-8 bytes, one char).
const CONTROL: &str = "<?xml version=\"1.0\"?>\n<bpmn:definitions xmlns:bpmn=\"http://www.omg.org/spec/BPMN/20100524/MODEL\" id=\"d\">\n  <bpmn:process id=\"p\">\n    <bpmn:documentation>😀 🎉 paid\u{B}refunded</bpmn:documentation>\n  </bpmn:process>\n</bpmn:definitions>\n";

#[tokio::test]
async fn a_forbidden_character_after_astral_ones_is_pointed_at_in_utf16() {
    let mut h = Harness::initialized().await;
    h.open(URI, 1, CONTROL).await;
    let diags = h.diagnostics(URI, 1).await;
    assert_eq!(codes(&diags), ["QF001"], "{diags:?}");
    let d = &diags[0];
    // Counted by hand: `    <bpmn:documentation>😀 🎉 paid` is 32 chars
    // (38 bytes); 😀 and 🎉 take two UTF-16 units each: 34.
    assert_eq!(
        d["range"],
        json!({ "start": { "line": 3, "character": 34 }, "end": { "line": 3, "character": 35 } })
    );
    assert_eq!(d["range"], range_of(CONTROL, "\u{B}"));
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("U+000B") && message.contains("in the text of <bpmn:documentation>"),
        "{message}"
    );
    h.stop().await;
}

#[tokio::test]
async fn crlf_documents_get_the_same_ranges_as_lf() {
    let crlf = UNICODE.replace('\n', "\r\n");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, UNICODE).await;
    let lf = h.diagnostics(URI, 1).await;
    let other = "file:///work/models/crlf.bpmn";
    h.open(other, 1, &crlf).await;
    let cr = h.diagnostics(other, 1).await;
    assert_eq!(lf.len(), cr.len());
    let cr = qflow_only(&cr);
    let ranges = |d: &[Value]| d.iter().map(|d| d["range"].clone()).collect::<Vec<_>>();
    assert_eq!(ranges(&qflow_only(&lf)), ranges(&cr));
    assert_eq!(cr[0]["range"], range_of(&crlf, "endd"));
    h.stop().await;
}

/// What `qflow check --format json` reports, as (code, severity, line, column
/// in characters) — to compare with what the editor shows.
fn check_verdicts(text: &str) -> Vec<(String, String, u64, u64)> {
    // The same path as `qflow check`: from the file's bytes.
    let (_, analysis) = qflow_model::analyze_bytes(text.as_bytes());
    let index = qflow_model::span::LineIndex::new(text);
    analysis
        .diagnostics
        .iter()
        .map(|d| {
            let j = d.to_json("model.bpmn", text, &index);
            (
                j["code"].as_str().unwrap().to_string(),
                j["severity"].as_str().unwrap().to_string(),
                j["line"].as_u64().unwrap(),
                j["column"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn editor_verdicts(diags: &[Value]) -> Vec<(String, String, u64, u64)> {
    diags
        .iter()
        .map(|d| {
            let sev = match d["severity"].as_u64().unwrap() {
                1 => "error",
                2 => "warning",
                3 => "info",
                _ => "hint",
            };
            (
                d["code"].as_str().unwrap().to_string(),
                sev.to_string(),
                d["range"]["start"]["line"].as_u64().unwrap() + 1,
                d["range"]["start"]["character"].as_u64().unwrap() + 1,
            )
        })
        .collect()
}

/// Every model the repository ships (samples/, including broken ones) and
/// the test fixtures: the editor shows exactly `check`'s verdicts.
#[tokio::test]
async fn every_sample_shows_exactly_checks_verdicts() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["samples", "samples/broken", "lsp/tests/fixtures"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "bpmn") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    assert!(!files.is_empty());
    // Edge cases `check` judges on bytes: empty, a NUL byte, not XML at all.
    let mut texts: Vec<(String, String)> = ["", "<bpmn:definitions>\0", "hello"]
        .iter()
        .map(|t| (format!("{t:?}"), t.to_string()))
        .collect();
    for path in &files {
        if let Ok(text) = std::fs::read_to_string(path) {
            texts.push((path.display().to_string(), text));
        }
    }
    let mut h = Harness::initialized().await;
    for (i, (path, text)) in texts.iter().enumerate() {
        let text = text.as_str();
        let uri = format!("file:///models/{i}.bpmn");
        h.open(&uri, 1, text).await;
        let diags = h.diagnostics(&uri, 1).await;
        // Severities, hints included, map one to one.
        assert_eq!(editor_verdicts(&diags), check_verdicts(text), "{path}");
        if text.is_empty() {
            assert!(
                diags[0]["message"].as_str().unwrap().contains("empty"),
                "{diags:?}"
            );
        }
        // Without pages written (the configuration's default), no link at
        // all rather than one that cannot open.
        for d in &diags {
            assert!(d.get("codeDescription").is_none(), "{d}");
        }
    }
    h.stop().await;
}

fn model_with_target(target: &str) -> String {
    fixture("dbg08.bpmn").replace("targetRef=\"end\"", &format!("targetRef=\"{target}\""))
}

/// Ten edits sent without waiting: whatever the server publishes in between,
/// each publication matches its own version's text, and the last one is the
/// latest version's verdict. Nothing older arrives afterwards.
#[tokio::test]
async fn a_burst_of_edits_never_leaves_a_stale_verdict() {
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &model_with_target("end")).await;
    assert_eq!(errors(&h.diagnostics(URI, 1).await), Vec::<String>::new());
    let texts: Vec<String> = (2..=11)
        .map(|v| model_with_target(if v % 2 == 0 { "nowhere" } else { "end" }))
        .collect();
    for (i, t) in texts.iter().enumerate() {
        h.change(URI, i as i64 + 2, t).await;
    }
    // Version 11 (odd: valid) is the latest.
    let mut seen = Vec::new();
    loop {
        let n = h.notification("textDocument/publishDiagnostics").await;
        let v = n["params"]["version"].as_i64().unwrap();
        let diags = n["params"]["diagnostics"].as_array().unwrap().clone();
        let expected = if v % 2 == 0 {
            vec!["QF004".to_string()]
        } else {
            vec![]
        };
        assert_eq!(
            errors(&diags),
            expected,
            "version {v} published another version's verdict"
        );
        seen.push(v);
        if v == 11 {
            break;
        }
    }
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "published out of order: {seen:?}"
    );
    // Nothing stale after the latest: a request round-trip later, no publication is pending.
    let r = h
        .request(
            "textDocument/documentSymbol",
            json!({ "textDocument": text_document(URI) }),
        )
        .await;
    assert!(r["result"].is_array());
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let r = h
        .request(
            "textDocument/documentSymbol",
            json!({ "textDocument": text_document(URI) }),
        )
        .await;
    assert!(r["result"].is_array());
    assert!(
        h.notifications
            .iter()
            .all(|n| n["method"] != "textDocument/publishDiagnostics"),
        "a publication after the latest version: {:?}",
        h.notifications
    );
    h.stop().await;
}

#[tokio::test]
async fn an_older_version_arriving_late_is_ignored() {
    let mut h = Harness::initialized().await;
    h.open(URI, 5, &model_with_target("end")).await;
    h.diagnostics(URI, 5).await;
    h.change(URI, 3, &model_with_target("nowhere")).await;
    let r = h
        .request(
            "textDocument/hover",
            at(URI, pos_at(&fixture("dbg08.bpmn"), "targetRef=\"end", 12)),
        )
        .await;
    // The text is still version 5's: the hover sees `end`, a valid id.
    assert!(r["result"].is_object() || r["result"].is_null());
    let defs = h
        .request(
            "textDocument/definition",
            at(URI, pos_at(&fixture("dbg08.bpmn"), "targetRef=\"end", 12)),
        )
        .await;
    assert!(defs["result"].is_object(), "{defs}");
    h.stop().await;
}

#[tokio::test]
async fn closing_a_document_clears_its_diagnostics() {
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &model_with_target("nowhere")).await;
    assert_eq!(errors(&h.diagnostics(URI, 1).await), ["QF004"]);
    h.notify(
        "textDocument/didClose",
        json!({ "textDocument": text_document(URI) }),
    )
    .await;
    let n = h.notification("textDocument/publishDiagnostics").await;
    assert_eq!(n["params"]["uri"], URI);
    assert_eq!(n["params"]["diagnostics"], json!([]));
    // A closed document is not served.
    let r = h
        .request(
            "textDocument/documentSymbol",
            json!({ "textDocument": text_document(URI) }),
        )
        .await;
    assert_eq!(r["result"], Value::Null);
    h.stop().await;
}

/// Error, warning, information and hint arrive as LSP severities 1 to 4.
#[tokio::test]
async fn severities_map_one_to_one_hints_included() {
    let text = fixture("dbg08.bpmn")
        // QF033 (hint): a retry with no jitter attribute.
        .replace(" jitter=\"none\"", "")
        // QF111 (warning): a node with no flow in or out.
        .replace(
            "    <bpmn:endEvent id=\"end\"",
            "    <bpmn:endEvent id=\"orphan\"/>\n    <bpmn:endEvent id=\"end\"",
        );
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let diags = h.diagnostics(URI, 1).await;
    let by_code = |code: &str| {
        diags
            .iter()
            .find(|d| d["code"] == code)
            .unwrap_or_else(|| panic!("{code} missing: {diags:?}"))["severity"]
            .clone()
    };
    assert_eq!(by_code("QF111"), 2);
    assert_eq!(by_code("QF040"), 3);
    assert_eq!(by_code("QF033"), 4);
    h.stop().await;
}

/// QF022 points at the retry and names the routed boundary as related information.
#[tokio::test]
async fn qf022_relates_the_routed_boundary() {
    let text = fixture("channel.bpmn")
        .replace("        <q:timeout duration=\"PT30S\"/>\n", "")
        .replace(
            "    <bpmn:exclusiveGateway",
            "    <bpmn:boundaryEvent id=\"late\" attachedToRef=\"authorize\"><bpmn:timerEventDefinition><bpmn:timeDuration>PT30S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>\n    <bpmn:sequenceFlow id=\"late-flow\" sourceRef=\"late\" targetRef=\"declined\"/>\n    <bpmn:exclusiveGateway",
        );
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let diags = h.diagnostics(URI, 1).await;
    let qf022 = diags.iter().find(|d| d["code"] == "QF022").expect("QF022");
    assert_eq!(
        qf022["range"]["start"]["line"],
        pos_at(&text, "<q:retry", 0)["line"]
    );
    let related = qf022["relatedInformation"]
        .as_array()
        .expect("related information");
    let boundary_line = pos_at(&text, "<bpmn:boundaryEvent id=\"late\"", 0)["line"].clone();
    assert!(
        related
            .iter()
            .any(|r| r["location"]["range"]["start"]["line"] == boundary_line
                && r["location"]["uri"] == URI),
        "{related:?}"
    );
    h.stop().await;
}

/// Incremental changes in UTF-16 positions, several in one notification (each
/// relative to the text the previous one produced), after emoji and accents.
#[tokio::test]
async fn incremental_changes_apply_in_utf16_and_in_order() {
    let mut h = Harness::initialized().await;
    h.open(URI, 1, UNICODE).await;
    assert_eq!(errors(&h.diagnostics(URI, 1).await), ["QF004", "QF003"]);
    // Delete one `d` of `endd` (after 😀 and 🎉), then rename the second `f` to `g`.
    let endd = range_of(UNICODE, "endd");
    let d = serde_json::json!({
        "start": { "line": endd["start"]["line"], "character": endd["start"]["character"].as_u64().unwrap() + 3 },
        "end": endd["end"],
    });
    let second_f = UNICODE.rfind("id=\"f\"").unwrap() + 4;
    // Line 6 is after line 5's edit; it is unchanged by it, so its position holds.
    let (line, col) = lsp_pos(UNICODE, second_f);
    let f = serde_json::json!({ "start": { "line": line, "character": col }, "end": { "line": line, "character": col + 1 } });
    h.notify(
        "textDocument/didChange",
        serde_json::json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [
            { "range": d, "text": "" },
            { "range": f, "text": "g" }
        ] }),
    )
    .await;
    assert_eq!(errors(&h.diagnostics(URI, 2).await), Vec::<String>::new());
    // The server's text is exactly the edited one: a symbol's selection sits where expected.
    let expected =
        UNICODE
            .replacen("endd", "end", 1)
            .replacen("id=\"f\" sourceRef", "id=\"g\" sourceRef", 1);
    let r = h
        .request(
            "textDocument/definition",
            at(URI, pos_at(&expected, "targetRef=\"end", 11)),
        )
        .await;
    assert_eq!(
        r["result"]["range"]["start"],
        pos_at(&expected, "id=\"end\"", 4)
    );
    h.stop().await;
}

/// A plain BPMN process of unnamed, unconnected tasks and inclusive
/// gateways, none drawn: every element breaks bpmnlint's recommended rules
/// (errors for each, and a warning for each gateway).
fn many_findings(elements: usize) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<bpmn:definitions xmlns:bpmn=\"http://www.omg.org/spec/BPMN/20100524/MODEL\" id=\"d\">\n  <bpmn:process id=\"p\">\n",
    );
    for i in 0..elements {
        if i % 3 == 0 {
            s.push_str(&format!("    <bpmn:inclusiveGateway id=\"g{i}\"/>\n"));
        } else {
            s.push_str(&format!("    <bpmn:task id=\"t{i}\"/>\n"));
        }
    }
    s.push_str("  </bpmn:process>\n</bpmn:definitions>\n");
    s
}

/// The diagnostics a server with `config` publishes for `text`.
async fn published(config: qflow_lsp::Config, text: &str) -> Vec<Value> {
    let mut h = Harness::initialized_with(config).await;
    h.open(URI, 1, text).await;
    let out = h.diagnostics(URI, 1).await;
    h.stop().await;
    out
}

#[tokio::test]
async fn past_the_cap_the_most_severe_findings_are_published_and_the_rest_counted() {
    let cap = 5;
    let capped = qflow_lsp::Config {
        max_diagnostics: cap,
        ..qflow_lsp::Config::default()
    };
    let text = many_findings(12);
    let all = published(qflow_lsp::Config::default(), &text).await;
    assert!(all.len() > cap + 2, "{all:?}");
    assert!(
        all.iter().any(|d| d["severity"] == 2),
        "warnings too: {all:?}"
    );

    let out = published(capped, &text).await;
    assert_eq!(out.len(), cap + 1, "{out:?}");
    // The most severe first, each severity's earliest: the whole list
    // ordered by severity (stable) and cut at the cap, published in the
    // engine's order.
    let mut expected: Vec<&Value> = all.iter().collect();
    expected.sort_by_key(|d| d["severity"].as_u64());
    expected.truncate(cap);
    expected.sort_by_key(|d| all.iter().position(|a| a == *d));
    assert_eq!(out[..cap].iter().collect::<Vec<_>>(), expected);

    // Then one summary: how many were left out, of which severities, with
    // the severity of the worst of them, at the start of the document.
    let summary = &out[cap];
    let left: Vec<&Value> = all.iter().filter(|d| !expected.contains(d)).collect();
    let errors = left.iter().filter(|d| d["severity"] == 1).count();
    let warnings = left.iter().filter(|d| d["severity"] == 2).count();
    assert_eq!(errors + warnings, left.len());
    assert_eq!(
        summary["message"],
        format!(
            "{} more findings are not shown ({errors} errors, {warnings} warnings): the language server publishes at most {cap} per document\nhelp: `qflow check` on the file lists them all",
            left.len()
        )
    );
    assert_eq!(summary["severity"], 1);
    assert_eq!(summary["source"], "qflow");
    assert!(summary.get("code").is_none(), "{summary}");
    assert_eq!(
        summary["range"],
        json!({ "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } })
    );

    // Under the cap nothing changes: the same list, no summary.
    let few = fixture("dbg08.bpmn");
    let all = published(qflow_lsp::Config::default(), &few).await;
    assert!(all.len() <= cap);
    assert_eq!(published(capped, &few).await, all);
}
