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

/// The completion answer at byte `offset` of the open document.
async fn complete_at(h: &mut Harness, text: &str, offset: usize) -> Value {
    let (line, character) = lsp_pos(text, offset);
    let r = h
        .request(
            "textDocument/completion",
            at(
                URI,
                serde_json::json!({ "line": line, "character": character }),
            ),
        )
        .await;
    r["result"].clone()
}

#[tokio::test]
async fn the_ids_of_a_large_model_come_a_page_at_a_time_narrowed_by_what_is_typed() {
    let page = qflow_lsp::completion::PAGE;
    let tasks = 3 * page;
    let text = qflow_model::testgen::generate(tasks);
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let value = text.find("targetRef=\"Task_2\"").unwrap() + "targetRef=\"".len();

    // Nothing typed: the first page of the flow nodes, marked incomplete.
    let r = complete_at(&mut h, &text, value).await;
    assert_eq!(r["isIncomplete"], true, "{r}");
    let items = r["items"].as_array().unwrap();
    assert_eq!(items.len(), page);
    assert_eq!(
        names(&items[..3]),
        ["StartEvent_1", "Task_1", "Task_2"],
        "in document order"
    );

    // A prefix: what starts with it first, then what holds its characters
    // in order (still marked incomplete, so the editor asks again when the
    // author deletes a character).
    let typed = format!(
        "{}Task_12{}",
        &text[..value],
        &text[value + "Task_2".len()..]
    );
    h.change(URI, 2, &typed).await;
    let r = complete_at(&mut h, &typed, value + "Task_12".len()).await;
    assert_eq!(r["isIncomplete"], true, "{r}");
    let labels = names(r["items"].as_array().unwrap());
    let mut prefixed = vec!["Task_12".to_string()];
    prefixed.extend((120..=129).map(|i| format!("Task_{i}")));
    assert_eq!(labels[..prefixed.len()], prefixed);
    assert_eq!(
        labels[prefixed.len()..3 + prefixed.len()],
        ["Task_102", "Task_112", "Task_132"]
    );
    assert!(labels
        .iter()
        .all(|l| l.starts_with("Task_") && l[5..].contains('1')));

    // Characters in order, as an editor's fuzzy filter matches them:
    // prefixes first (none here), then every id holding `T`, `2`, `9` in
    // that order, in document order; the page is never fuller than a page.
    let typed = format!("{}T29{}", &text[..value], &text[value + "Task_2".len()..]);
    h.change(URI, 3, &typed).await;
    let r = complete_at(&mut h, &typed, value + "T29".len()).await;
    let labels = names(r["items"].as_array().unwrap());
    assert!(labels.len() <= page);
    assert_eq!(labels[..3], ["Task_29", "Task_129", "Task_209"]);
    assert!(labels.iter().all(|l| {
        let mut rest = l.chars();
        "T29".chars().all(|t| rest.any(|c| c == t))
    }));

    // Every edit of the replaced word is the typed word's range.
    let edit = &r["items"][0]["textEdit"]["range"];
    assert_eq!(
        edit["end"]["character"].as_u64().unwrap() - edit["start"]["character"].as_u64().unwrap(),
        3
    );
    h.stop().await;
}
