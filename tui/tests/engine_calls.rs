//! Channel calls in the console, over the real engine: the backoff window
//! with its marker, the honest refusal of a late answer, `r` to the live and
//! to a superseded attempt, `p` poisoning the pending delivery, and a
//! response to a FAILED instance. Frames are golden; the checks read the store.

mod common;

use common::{engine, golden, history_of, snapshot, type_keys};
use qflow_engine::runtime::decide::Status;
use qflow_tui::engine_backend::EngineBackend;
use qflow_tui::ui::render_text;

const BANK: &str = "samples/bank-authorize.bpmn";

fn lines(be: &EngineBackend, kind: &str) -> Vec<serde_json::Value> {
    history_of(be, kind)
        .into_iter()
        .map(|h| h.detail_json())
        .collect()
}

#[test]
fn a_call_in_its_backoff_window_shows_the_marker_and_refuses_the_late_answer() {
    let (mut app, mut be) = engine(BANK, Some("samples/scenarios/call-late-answer.json"));
    type_keys(&mut app, &mut be, "   ");
    let f = render_text(&app, 100, 30);
    assert!(f.contains("backoff.authorize"), "{f}");
    assert!(f.contains("└ q.timeout"), "{f}");
    assert!(f.contains("authorize parked in 9s ×1"), "{f}");
    assert!(f.contains("in backoff"), "{f}");
    golden("call-1-backoff-window-marker", &f);
    // The counterpart's late answer to the dead attempt: refused, honestly.
    type_keys(&mut app, &mut be, " ");
    let r = lines(&be, "response");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["verdict"], "retry-pending");
    assert!(
        snapshot(&be).1.get("backoff.authorize").is_some(),
        "the marker stays"
    );
    golden("call-2-late-answer-refused", &render_text(&app, 100, 30));
    // The re-drive: a fresh request with a fresh idempotency key.
    type_keys(&mut app, &mut be, " ");
    let a = lines(&be, "attempt");
    assert_eq!(a.len(), 2);
    assert_ne!(a[0]["idempotencyKey"], a[1]["idempotencyKey"]);
    assert_eq!(a[1]["redrive"], true);
    assert!(
        snapshot(&be).1.get("backoff.authorize").is_none(),
        "the re-drive clears the marker"
    );
    golden("call-3-redrive", &render_text(&app, 100, 30));
}

#[test]
fn r_answers_the_live_attempt_and_the_flow_resumes() {
    let (mut app, mut be) = engine(BANK, Some("samples/scenarios/call-silent-forever.json"));
    type_keys(&mut app, &mut be, "  ");
    assert!(app.view.as_ref().unwrap().channel_calls());
    // r → the live attempt → body {"approved": true}
    type_keys(&mut app, &mut be, "r1\n");
    for _ in 0..2 {
        app.handle(&mut be, common::key('\u{8}'));
    }
    type_keys(&mut app, &mut be, "{\"approved\": true}\n");
    let r = lines(&be, "response");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["verdict"], "accepted");
    assert_eq!(r[0]["idempotencyKey"], "bank-authorize-1/authorize/1");
    let (_, snap) = snapshot(&be);
    assert_eq!(snap.variable("approved"), Some(&serde_json::json!(true)));
    type_keys(&mut app, &mut be, "   ");
    assert_eq!(snapshot(&be).0, Status::Completed);
    let f = render_text(&app, 100, 30);
    let approved = f.lines().find(|l| l.contains("◎ approved")).unwrap();
    assert!(approved.contains("done"), "{f}");
}

#[test]
fn r_to_a_superseded_attempt_in_the_backoff_window_gets_the_honest_refusal() {
    let (mut app, mut be) = engine(BANK, Some("samples/scenarios/call-silent-forever.json"));
    // emission, silent delivery, timeout at +30s: backoff window, attempt 1 dead.
    type_keys(&mut app, &mut be, "   ");
    assert!(snapshot(&be).1.get("backoff.authorize").is_some());
    type_keys(&mut app, &mut be, "r1\n\n");
    let r = lines(&be, "response");
    assert_eq!(r[0]["verdict"], "retry-pending", "{r:?}");
    assert!(
        app.report
            .message
            .contains("that attempt is gone, a retry is pending"),
        "{}",
        app.report.message
    );
    assert_eq!(snapshot(&be).0, Status::Waiting);
    // After the re-drive, attempt 1 is superseded: the picker offers it.
    type_keys(&mut app, &mut be, " ");
    type_keys(&mut app, &mut be, "r");
    let p = app.prompt.as_ref().unwrap();
    assert!(
        p.choices.iter().any(|c| c.label == "superseded attempt 1"),
        "{:?}",
        p.choices
    );
    golden("call-respond-picker", &render_text(&app, 100, 30));
    type_keys(&mut app, &mut be, "2\n\n");
    let r = lines(&be, "response");
    assert_eq!(r.len(), 2);
    assert_eq!(
        r[1]["idempotencyKey"], "bank-authorize-1/authorize/1",
        "answers the superseded request"
    );
    // Whatever the engine decided is what the console shows.
    assert!(
        app.report
            .message
            .contains(r[1]["verdict"].as_str().unwrap()),
        "{}",
        app.report.message
    );
}

#[test]
fn p_poisons_the_pending_delivery_on_the_channel_curve_and_the_wake_fails_the_attempt() {
    let (mut app, mut be) = engine(BANK, Some("samples/scenarios/call-silent-forever.json"));
    type_keys(&mut app, &mut be, " ");
    let id = be.instance_id().unwrap().to_string();
    assert_eq!(be.store().pending_requests(&id).unwrap().len(), 1);
    type_keys(&mut app, &mut be, "p");
    let d = lines(&be, "delivery");
    assert_eq!(d.len(), 5, "maxDeliveries=5 on the bank channel");
    assert_eq!(
        d.iter()
            .map(|l| l["at_s"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        vec![0, 2, 4, 6, 8]
    );
    assert_eq!(d[4]["poisoned"], true);
    let f = lines(&be, "call-failed");
    assert_eq!(f[0]["code"], "q.delivery.poisoned");
    let (_, snap) = snapshot(&be);
    assert_eq!(
        snap.get("backoff.authorize").unwrap()["code"],
        "q.delivery.poisoned"
    );
    assert!(
        be.store().pending_requests(&id).unwrap().is_empty(),
        "the dead attempt's rows are withdrawn"
    );
    assert!(be
        .store()
        .incidents(&id)
        .unwrap()
        .iter()
        .any(|i| i.kind.as_str() == "poisoned"));
    golden("call-poisoned-backoff", &render_text(&app, 100, 30));
    // Nothing pending now: p says so.
    type_keys(&mut app, &mut be, "p");
    assert!(
        app.report.message.contains("nothing to poison"),
        "{}",
        app.report.message
    );
}

#[test]
fn f_on_a_call_explains_its_failure_set() {
    let (mut app, mut be) = engine(BANK, Some("samples/scenarios/call-silent-forever.json"));
    type_keys(&mut app, &mut be, " f1\n1\n");
    assert!(
        app.report.message.contains("fails only by q.timeout"),
        "{}",
        app.report.message
    );
    assert!(lines(&be, "call-failed").is_empty());
}

#[test]
fn a_response_to_a_failed_instance_gets_the_failed_verdict() {
    let (mut app, mut be) = engine(
        "samples/call-bank-strict.bpmn",
        Some("samples/scenarios/call-bank-strict.json"),
    );
    for _ in 0..10 {
        type_keys(&mut app, &mut be, " ");
    }
    assert_eq!(
        snapshot(&be).0,
        Status::Failed,
        "{}",
        render_text(&app, 100, 30)
    );
    type_keys(&mut app, &mut be, "r1\n\n");
    let r = lines(&be, "response");
    assert_eq!(r.last().unwrap()["verdict"], "failed", "{r:?}");
    assert_eq!(snapshot(&be).0, Status::Failed);
}
