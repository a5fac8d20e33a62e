use crate::harness::Harness;
use serde_json::{json, Value};

use crate::*;

/// Every quick fix the server offers for the diagnostics of `text`.
async fn fixes(h: &mut Harness, uri: &str, version: i64, text: &str) -> (Vec<Value>, Vec<Value>) {
    h.open(uri, version, text).await;
    let diags = h.diagnostics(uri, version).await;
    let mut actions = Vec::new();
    for d in &diags {
        let r = h
            .request(
                "textDocument/codeAction",
                json!({ "textDocument": text_document(uri), "range": d["range"], "context": { "diagnostics": [d] } }),
            )
            .await;
        for a in r["result"].as_array().unwrap() {
            if a["diagnostics"][0]["code"] == d["code"] && !actions.contains(a) {
                actions.push(a.clone());
            }
        }
    }
    (diags, actions)
}

/// Applying a fix removes the diagnostic it was offered for, and adds no error.
fn assert_applies(uri: &str, text: &str, action: &Value) -> String {
    let edits = action["edit"]["changes"][uri].as_array().unwrap();
    let fixed = apply_edits(text, edits);
    let code = action["diagnostics"][0]["code"].as_str().unwrap();
    let before = qflow_model::analyze(text);
    let after = qflow_model::analyze(&fixed);
    let count = |a: &qflow_model::Analysis| {
        a.diagnostics
            .iter()
            .filter(|d| d.code.as_str() == code)
            .count()
    };
    assert!(
        count(&after) < count(&before),
        "`{}` left {code} in place:\n{fixed}",
        action["title"]
    );
    let errors = |a: &qflow_model::Analysis| a.diagnostics.iter().filter(|d| d.is_error()).count();
    assert!(
        errors(&after) < errors(&before) || code.starts_with("QF03"),
        "`{}` added errors",
        action["title"]
    );
    fixed
}

#[tokio::test]
async fn did_you_mean_fix_for_a_dangling_reference() {
    let text = fixture("dbg08.bpmn").replace("targetRef=\"end\"", "targetRef=\"endd\"");
    let mut h = Harness::initialized().await;
    let (_, actions) = fixes(&mut h, URI, 1, &text).await;
    let actions: Vec<Value> = actions
        .into_iter()
        .filter(|a| a["diagnostics"][0]["code"] == "QF004")
        .collect();
    assert_eq!(actions.len(), 1);
    assert_eq!(actions[0]["title"], "Change to `end`");
    assert_eq!(actions[0]["kind"], "quickfix");
    assert_eq!(actions[0]["isPreferred"], true);
    let fixed = assert_applies(URI, &text, &actions[0]);
    assert_eq!(fixed, fixture("dbg08.bpmn"));
    h.stop().await;
}

/// The rules' fixes, as far as the engine offers them: QF020 (timeout),
/// QF022 (two resolutions), QF006 (did you mean), QF012 (maxAttempts).
#[tokio::test]
async fn rule_fixes_apply_cleanly() {
    let channel = fixture("channel.bpmn");
    let cases: Vec<(&str, String, usize)> = vec![
        // QF020: a channel call without a timeout.
        ("QF020", channel.replace("        <q:timeout duration=\"PT30S\"/>\n", ""), 1),
        // QF012: unbounded retry.
        ("QF012", channel.replace("maxAttempts=\"4\" ", "").replace(" maxElapsed=\"PT15M\"", ""), 1),
        // QF006: a misspelt q: attribute.
        ("QF006", channel.replace("maxElapsed=", "maxElapsd="), 1),
        // QF022: the retry beside a routed timer boundary.
        (
            "QF022",
            channel.replace("        <q:timeout duration=\"PT30S\"/>\n", "").replace(
                "    <bpmn:exclusiveGateway",
                "    <bpmn:boundaryEvent id=\"late\" attachedToRef=\"authorize\"><bpmn:timerEventDefinition><bpmn:timeDuration>PT30S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>\n    <bpmn:sequenceFlow id=\"late-flow\" sourceRef=\"late\" targetRef=\"declined\"/>\n    <bpmn:exclusiveGateway",
            ),
            2,
        ),
    ];
    let mut h = Harness::initialized().await;
    let mut titles = Vec::new();
    for (i, (code, text, expected)) in cases.iter().enumerate() {
        let uri = format!("file:///work/fix-{i}.bpmn");
        let (diags, actions) = fixes(&mut h, &uri, 1, text).await;
        assert!(
            codes(&diags).iter().any(|c| c == code),
            "{code} not reported: {:?}",
            codes(&diags)
        );
        let mine: Vec<&Value> = actions
            .iter()
            .filter(|a| a["diagnostics"][0]["code"] == *code)
            .collect();
        assert_eq!(mine.len(), *expected, "{code}: {mine:?}");
        for a in mine {
            titles.push(format!("{code}: {}", a["title"].as_str().unwrap()));
            assert_applies(&uri, text, a);
        }
    }
    insta::assert_snapshot!("rule_fix_titles", titles.join("\n"));
    h.stop().await;
}

/// Every quick fix the server offers on every sample of the repository,
/// applied as an editor applies it, leaves no new error or warning: a fix
/// that orphans what it disconnects (QF022's "replace the boundary" used to
/// leave the boundary's target unreachable: QF111, QF116) is not a fix.
#[tokio::test]
async fn every_quick_fix_of_every_sample_leaves_no_new_error_or_warning() {
    use qflow_model::Severity;
    let root = format!("{}/../samples", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for dir in [root.clone(), format!("{root}/broken")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "bpmn") {
                files.push(p);
            }
        }
    }
    files.sort();
    let serious = |text: &str| -> Vec<String> {
        let mut c: Vec<String> = qflow_model::analyze(text)
            .diagnostics
            .iter()
            .filter(|d| matches!(d.severity, Severity::Error | Severity::Warning))
            .map(|d| d.code.as_str().to_string())
            .collect();
        c.sort();
        c.dedup();
        c
    };
    let mut h = Harness::initialized().await;
    let mut applied = 0;
    for (i, path) in files.iter().enumerate() {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue; // not UTF-8 (a sample of QF001): no fixes to apply
        };
        let uri = format!("file:///work/every-fix-{i}.bpmn");
        let (_, actions) = fixes(&mut h, &uri, 1, &text).await;
        let before = serious(&text);
        for a in &actions {
            let Some(edits) = a["edit"]["changes"][&uri].as_array() else {
                continue;
            };
            let after = serious(&apply_edits(&text, edits));
            let mut new: Vec<&String> = after.iter().filter(|c| !before.contains(c)).collect();
            // Marking a process executable (QF044's fix) turns qflow's
            // execution rules on: what they find was in the model before.
            if a["diagnostics"][0]["code"] == "QF044" {
                // (the execution rules: QF010-QF033)
                new.retain(|c| !("QF010".."QF034").contains(&c.as_str()));
            }
            assert!(
                new.is_empty(),
                "{}: `{}` adds {new:?}",
                path.display(),
                a["title"].as_str().unwrap_or("")
            );
            applied += 1;
        }
    }
    assert!(
        applied >= 10,
        "only {applied} fixes were offered on the samples"
    );
    h.stop().await;
}
