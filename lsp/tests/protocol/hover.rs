use crate::harness::Harness;

use crate::*;

async fn hover_text(h: &mut Harness, text: &str, needle: &str, delta: usize) -> String {
    let r = h
        .request("textDocument/hover", at(URI, pos_at(text, needle, delta)))
        .await;
    assert_eq!(r["result"]["contents"]["kind"], "markdown", "{r}");
    r["result"]["contents"]["value"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn retry_hover_shows_the_dbg08_schedule_worst_case_and_load() {
    let text = fixture("dbg08.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "<q:retry", 3).await;
    assert!(
        md.contains("**Worst case:** 6 attempts over 13 h 1 min at the policy's own delays; a provider's retry-after can stretch each wait to 1 d (the default cap; maxDelay sets it): at most 5 d."),
        "{md}"
    );
    assert!(
        md.contains("| 6 | 10 h 25 min | 13 h 1 min | 13 h 1 min |"),
        "{md}"
    );
    assert!(md.contains("6 attempts per failing instance"), "{md}");
    assert!(
        md.contains("capped at **1 d** by the default local maximum"),
        "{md}"
    );
    insta::assert_snapshot!("retry_dbg08", md);
    // The hover range is the element name.
    let r = h
        .request(
            "textDocument/hover",
            at(URI, pos_at(&text, "maxAttempts", 2)),
        )
        .await;
    assert_eq!(r["result"]["range"], range_of(&text, "q:retry"));
    h.stop().await;
}

#[tokio::test]
async fn channel_call_retry_hover_shows_jitter_bounds_and_deliveries() {
    let text = fixture("channel.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "<q:retry", 3).await;
    assert!(md.contains("up to 5 deliveries per attempt"), "{md}");
    // Load in remote requests beside attempts: 4 attempts x 5 deliveries.
    assert!(
        md.contains("schedule up to 200,000 attempts in their first day (1,000,000 remote requests to the dependency)"),
        "{md}"
    );
    // A call's failures are a timeout or a poisoned delivery, never a retry-after.
    assert!(!md.contains("retry-after"), "{md}");
    insta::assert_snapshot!("retry_channel", md);
    h.stop().await;
}

/// The cross-layer bound: a `<q:retry>`'s hover and its task's give the
/// worst-case remote requests one business operation costs, every layer
/// named; a counterpart that retries on its own side multiplies it.
#[tokio::test]
async fn the_hover_gives_the_worst_case_requests_per_business_operation() {
    let text = fixture("channel.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "<q:retry", 3).await;
    assert!(
        md.contains("**Per business operation:** up to 20 remote requests to the dependency at worst (4 attempts × 5 deliveries = 20)."),
        "{md}"
    );
    let layered = text.replace(
        r#"deliveryInterval="PT2S"/>"#,
        r#"deliveryInterval="PT2S" counterpartAttempts="3"/>"#,
    );
    h.change(URI, 2, &layered).await;
    for needle in ["<q:retry", "<bpmn:serviceTask"] {
        let md = hover_text(&mut h, &layered, needle, 3).await;
        assert!(
            md.contains("up to 60 remote requests to the dependency at worst (4 attempts × 5 deliveries × 3 counterpart attempts = 60)"),
            "{needle}: {md}"
        );
    }
    let md = hover_text(&mut h, &layered, "<q:channelConfig", 3).await;
    assert!(
        md.contains("up to 3 times itself (`counterpartAttempts`)"),
        "{md}"
    );
    h.stop().await;
}

/// A call whose outbox poisons its request (5 deliveries 2 s apart: at 8 s)
/// before its 30 s timeout fails each attempt at the poisoning when the
/// dependency is down: the hover's schedule is that one, as the runtime
/// runs it. Where the policy ends the task on a poisoning instead
/// (`nonRetryableCodes="q.delivery.poisoned"`), the retried attempts are
/// the timeout's.
#[tokio::test]
async fn a_call_whose_deliveries_poison_first_is_scheduled_from_its_poisoning() {
    let text = fixture("channel.bpmn").replace(r#" nonRetryableCodes="q.delivery.poisoned""#, "");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "<q:retry", 3).await;
    assert!(md.contains("| 2 | 10 s | 18 s | 26 s |"), "{md}");
    assert!(md.contains("fails 8 s after it starts"), "{md}");
    assert!(!md.contains("| 2 | 10 s | 40 s |"), "{md}");
    let md = hover_text(&mut h, &text, "<bpmn:serviceTask", 3).await;
    assert!(md.contains("Retry: 4 attempts over at most"), "{md}");
    let original = fixture("channel.bpmn");
    h.change(URI, 2, &original).await;
    let md = hover_text(&mut h, &original, "<q:retry", 3).await;
    assert!(md.contains("| 2 | 10 s | 40 s |"), "{md}");
    h.stop().await;
}

/// A retry beside a routed timer boundary can never fire (QF022): its hover
/// shows no schedule and no load, and says what happens instead (the
/// boundary's route); the task's hover agrees.
#[tokio::test]
async fn a_retry_that_can_never_fire_shows_the_boundarys_route_not_a_schedule() {
    let path = format!(
        "{}/../samples/broken/QF022-retry-beside-routed-timer.bpmn",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "<q:retry", 3).await;
    assert!(md.contains("**Never fires** (QF022)"), "{md}");
    assert!(
        md.contains("when it fires after 30 s, the call's wait ends and the flow takes its route to `timed-out`"),
        "{md}"
    );
    assert!(!md.contains("Worst case"), "{md}");
    assert!(!md.contains("attempts in their first day"), "{md}");
    assert!(!md.contains("| attempt |"), "{md}");
    let md = hover_text(&mut h, &text, "<bpmn:serviceTask", 3).await;
    assert!(md.contains("Retry: never fires (QF022)"), "{md}");
    assert!(!md.contains("attempts over"), "{md}");
    h.stop().await;
}

#[tokio::test]
async fn durations_read_in_words() {
    let text = fixture("dbg08.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "PT625M", 2).await;
    assert_eq!(md, "`PT625M` (backoff) = **10 h 25 min**");
    let r = h
        .request("textDocument/hover", at(URI, pos_at(&text, "PT625M", 2)))
        .await;
    assert_eq!(r["result"]["range"], range_of(&text, "PT625M"));
    let channel = fixture("channel.bpmn");
    h.change(URI, 2, &channel).await;
    let md = hover_text(&mut h, &channel, "PT30S", 1).await;
    assert_eq!(md, "`PT30S` (duration) = **30 s**");
    let md = hover_text(&mut h, &channel, "<q:timeout", 3).await;
    assert!(md.contains("waits at most **30 s**"), "{md}");
    let md = hover_text(&mut h, &channel, "deliveryInterval=\"PT2S", 19).await;
    assert_eq!(md, "`PT2S` (deliveryInterval) = **2 s**");
    h.stop().await;
}

#[tokio::test]
async fn task_hover_gives_its_kind_and_the_classifier_verdict() {
    let text = fixture("channel.bpmn");
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "<bpmn:serviceTask", 3).await;
    insta::assert_snapshot!("task_channel_call", md);
    let md = hover_text(&mut h, &text, "<q:channelConfig", 3).await;
    assert!(md.contains("at most 5 times, 2 s apart"), "{md}");
    assert!(md.contains("(at 8 s)"), "{md}");
    let md = hover_text(&mut h, &text, "<bpmn:startEvent", 3).await;
    assert!(md.contains("**stateful**"), "{md}");
    // Nothing to say between elements.
    let r = h
        .request("textDocument/hover", at(URI, pos_at(&text, "<?xml", 2)))
        .await;
    assert_eq!(r["result"], serde_json::Value::Null);
    h.stop().await;
}

#[tokio::test]
async fn a_channel_without_config_is_hovered_with_the_runtimes_default_curve() {
    // The outbox delivers an unconfigured channel's request every second,
    // forever: within a 30 s timeout that is up to 31 deliveries per attempt.
    let text = fixture("channel.bpmn").replace(
        r#"<q:channelConfig channel="bank" maxDeliveries="5" deliveryInterval="PT2S"/>"#,
        "",
    );
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "<q:retry", 3).await;
    assert!(
        md.contains("(no q:channelConfig: the outbox retries one delivery forever, every 1 s): up to 31 deliveries per attempt (within the 30 s timeout)"),
        "{md}"
    );
    // A config without deliveryInterval uses the same default.
    let text = fixture("channel.bpmn").replace(r#" deliveryInterval="PT2S""#, "");
    h.change(URI, 2, &text).await;
    let md = hover_text(&mut h, &text, "<q:channelConfig", 3).await;
    assert!(
        md.contains("at most 5 times, 1 s (the default) apart"),
        "{md}"
    );
    assert!(md.contains("(at 4 s)"), "{md}");
    // One that does not load says why, with the loader's own code.
    let text = fixture("channel.bpmn").replace(r#"maxDeliveries="5""#, r#"maxDeliveries="0""#);
    h.change(URI, 3, &text).await;
    let md = hover_text(&mut h, &text, "<q:channelConfig", 3).await;
    assert!(
        md.contains("- QF013 maxDeliveries `0` of channel `bank` is not a positive integer"),
        "{md}"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_long_chains_task_hover_counts_the_wait_states_it_does_not_list() {
    // A hundred tasks, every tenth with a <q:retry>: ten wait states. The
    // hover names the hovered task's own, then the first others, then a
    // count, instead of every one (20,000 tasks made a 119 KB hover).
    let text = qflow_model::testgen::generate(100);
    let mut h = Harness::initialized().await;
    h.open(URI, 1, &text).await;
    let md = hover_text(&mut h, &text, "name=\"Step 50\"", 7).await;
    let listed: Vec<&str> = md.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(listed.len(), 9, "eight wait states and the count: {md}");
    assert!(
        listed[0].contains("`Task_50`") && listed[0].ends_with("← this node"),
        "{md}"
    );
    assert!(
        listed[8].starts_with("- … and ")
            && listed[8].ends_with(" more wait states in this process"),
        "{md}"
    );
    let total: usize = listed[8]
        .trim_start_matches("- … and ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(total + 8, 10, "every wait state is shown or counted: {md}");
    h.stop().await;
}
