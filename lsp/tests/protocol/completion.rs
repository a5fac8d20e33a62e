use crate::harness::Harness;
use serde_json::Value;

use crate::*;

/// Labels offered at the end of `text` (the document is `text` + `rest`).
async fn labels(h: &mut Harness, version: i64, text: &str, rest: &str) -> Vec<Value> {
    let doc = format!("{text}{rest}");
    h.change(URI, version, &doc).await;
    let (line, character) = lsp_pos(&doc, text.len());
    let r = h
        .request(
            "textDocument/completion",
            at(
                URI,
                serde_json::json!({ "line": line, "character": character }),
            ),
        )
        .await;
    r["result"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{r}"))
}

fn names(items: &[Value]) -> Vec<&str> {
    items.iter().map(|i| i["label"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn q_elements_complete_as_snippets_inside_extension_elements() {
    let full = fixture("channel.bpmn");
    let cut = full.find("<q:timeout").unwrap() + 1;
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &full).await;
    let items = labels(&mut h, 2, &full[..cut], &full[cut..]).await;
    assert_eq!(names(&items), ["q:retry", "q:timeout", "q:channelConfig"]);
    let retry = &items[0];
    assert_eq!(retry["insertTextFormat"], 2, "a snippet");
    assert!(retry["textEdit"]["newText"]
        .as_str()
        .unwrap()
        .starts_with("q:retry maxAttempts=\"${1:6}\""));
    // The edit replaces what was typed after `<`.
    let typed = format!("{}q:ret", &full[..cut]);
    let items = labels(&mut h, 3, &typed, &full[cut + 9..]).await;
    let edit = &items[0]["textEdit"]["range"];
    assert_eq!(
        edit["end"]["character"].as_u64().unwrap() - edit["start"]["character"].as_u64().unwrap(),
        5
    );
    h.stop().await;
}

#[tokio::test]
async fn attributes_of_q_elements_and_tasks() {
    let full = fixture("channel.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &full).await;
    // On <q:retry> after maxAttempts: the attributes not written yet
    // (before the cursor or after it: jitter follows).
    let cut = full.find("maxAttempts=\"4\" ").unwrap() + 16;
    let items = labels(&mut h, 2, &full[..cut], &full[cut..]).await;
    let n = names(&items);
    assert!(
        n.contains(&"backoff")
            && n.contains(&"maxDelay")
            && !n.contains(&"maxAttempts")
            && !n.contains(&"jitter"),
        "{n:?}"
    );
    // Without jitter written, it is offered as a snippet of its values.
    let without = full.replace("jitter=\"equal\" ", "");
    let items = labels(&mut h, 3, &without[..cut], &without[cut..]).await;
    let jitter = items.iter().find(|i| i["label"] == "jitter").unwrap();
    assert_eq!(
        jitter["textEdit"]["newText"],
        "jitter=\"${1|none,full,equal|}\"$0"
    );
    // On a serviceTask: the q: task attributes, minus those present, after
    // the cursor too (q:operation follows; q:channel is where the cursor is).
    let cut = full.find("q:channel=\"bank\"").unwrap();
    let items = labels(&mut h, 4, &full[..cut], &full[cut..]).await;
    assert_eq!(names(&items), ["q:task", "q:channel"]);
    // In the middle of <q:retry>, before attributes already written.
    let cut = full.find("<q:retry ").unwrap() + 9;
    let doc = format!("{} {}", &full[..cut], &full[cut..]);
    let items = labels(&mut h, 5, &doc[..cut], &doc[cut..]).await;
    let n = names(&items);
    assert!(
        !n.contains(&"maxAttempts") && n.contains(&"maxDelay"),
        "maxAttempts is written after the cursor: {n:?}"
    );
    h.stop().await;
}

#[tokio::test]
async fn failure_codes_jitter_modes_and_ids() {
    let full = fixture("channel.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &full).await;
    // nonRetryableCodes: the engine's codes (minus the one written) and the model's errorCodes.
    let cut = full.find("q.delivery.poisoned\"").unwrap() + "q.delivery.poisoned".len();
    let items = labels(&mut h, 2, &format!("{} ", &full[..cut]), &full[cut..]).await;
    assert_eq!(names(&items), ["q.timeout", "INVALID_INPUT"]);
    let items = labels(
        &mut h,
        3,
        &full[..cut - "delivery.poisoned".len()],
        &full[cut..],
    )
    .await;
    assert_eq!(
        names(&items),
        ["q.timeout", "q.delivery.poisoned", "INVALID_INPUT"]
    );
    // jitter values.
    let cut = full.find("jitter=\"equal").unwrap() + 8;
    let items = labels(&mut h, 4, &full[..cut], &full[cut..]).await;
    assert_eq!(names(&items), ["none", "full", "equal"]);
    // Ids in references: sourceRef offers flow nodes, default the gateway's outgoing flows.
    let cut = full.find("sourceRef=\"start").unwrap() + 11;
    let items = labels(&mut h, 5, &full[..cut], &full[cut..]).await;
    assert_eq!(
        names(&items),
        ["start", "authorize", "decide", "approved", "declined"]
    );
    let cut = full.find("default=\"").unwrap() + 9;
    let items = labels(&mut h, 6, &full[..cut], &full[cut..]).await;
    assert_eq!(names(&items), ["approved-flow", "declined-flow"]);
    // Mid-edit, unclosed quote: ids still come from the last model that loaded.
    let cut = full.find("targetRef=\"decide\"").unwrap() + 11;
    let items = labels(&mut h, 7, &full[..cut], "").await;
    assert!(names(&items).contains(&"decide"), "{:?}", names(&items));
    h.stop().await;
}
