//! The process panel as a diagram (`d`), over the real engine: the samples'
//! shapes (a chain, an exclusive split with a default, a parallel split and
//! join, boundary events, a loop), the channel-call sample stepped through a
//! re-drive to its FAILED end, panning, and the fallback to the list when the
//! panel is too small. Frames are golden (`tests/golden/diagram-*.txt`).

mod common;

use common::{engine, golden, type_keys};
use qflow_tui::ui::render_text;

/// The lines of a frame that hold the process panel (the top rows).
fn process_rows(frame: &str, rows: usize) -> String {
    frame.lines().take(rows).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_samples_draw_as_diagrams() {
    let cases = [
        // A chain, placed from the model's own diagram section.
        (
            "diagram-chain",
            "samples/dbg08-charge.bpmn",
            Some("samples/scenarios/dbg08-long-outage.json"),
            "d ",
            &["(○)", "▭ Charge card", "parked until +1m ×1", "(◉)"][..],
        ),
        // An exclusive split with a default flow, from its diagram section.
        (
            "diagram-exclusive-default",
            "samples/approval-gateway.bpmn",
            None,
            "d",
            &["<◇>", "Which approval?", "otherwise", "●", "token here"][..],
        ),
        // A parallel split and join, laid out in layers.
        (
            "diagram-parallel",
            "samples/run-order.bpmn",
            Some("samples/scenarios/run-order-small.json"),
            "d   ",
            &["<✚>", "▶"][..],
        ),
        // Boundary events riding on their tasks, each with its trigger:
        // the timer's clock, the error's bolt.
        (
            "diagram-boundary",
            "samples/run-boundaries.bpmn",
            Some("samples/scenarios/run-boundaries-escalate.json"),
            "d ",
            &["(◷)", "(ϟ)"][..],
        ),
        // A loop, routed back underneath.
        (
            "diagram-loop",
            "samples/call-loop-until-approved.bpmn",
            Some("samples/scenarios/call-loop-until-approved.json"),
            "d   ",
            &["⇄ authorize", "approved == false", "└────"][..],
        ),
    ];
    for (name, model, scenario, keys, want) in cases {
        let (mut app, mut be) = engine(model, scenario);
        type_keys(&mut app, &mut be, keys);
        let frame = render_text(&app, 120, 34);
        for w in want {
            assert!(frame.contains(w), "{name}: {w:?} not drawn\n{frame}");
        }
        golden(name, &frame);
    }
}

#[test]
fn the_call_sample_shows_the_park_the_redrive_and_the_failed_end_on_the_diagram() {
    let (mut app, mut be) = engine(
        "samples/bank-authorize.bpmn",
        Some("samples/scenarios/call-silent-forever.json"),
    );
    type_keys(&mut app, &mut be, "d  ");
    let sent = render_text(&app, 100, 30);
    assert!(sent.contains("awaits response until +30s"), "{sent}");
    // The attempt times out: the call parks in its backoff window until the
    // re-drive is eligible.
    type_keys(&mut app, &mut be, " ");
    let parked = render_text(&app, 100, 30);
    assert!(parked.contains("parked until +39s ×1"), "{parked}");
    golden("diagram-call-1-parked", &parked);
    // The re-drive: a fresh request, the token back on the call.
    type_keys(&mut app, &mut be, " ");
    let redrive = render_text(&app, 100, 30);
    assert!(
        redrive.contains("awaits response until +1m 9s"),
        "{redrive}"
    );
    golden("diagram-call-2-redrive", &redrive);
    // Silent to the end: the FAILED mark where the instance ends.
    type_keys(&mut app, &mut be, "          ");
    let failed = render_text(&app, 100, 30);
    assert!(failed.contains("FAILED q.timeout"), "{failed}");
    assert!(failed.contains(" FAILED "), "the status line too: {failed}");
    golden("diagram-call-3-failed", &failed);
}

#[test]
fn pan_keys_move_the_drawing_and_a_step_follows_the_current_node_again() {
    let (mut app, mut be) = engine(
        "samples/run-order.bpmn",
        Some("samples/scenarios/run-order-small.json"),
    );
    type_keys(&mut app, &mut be, "d");
    let home = render_text(&app, 100, 30);
    assert!(
        home.contains("h/l j/k pan"),
        "the drawing is larger: {home}"
    );
    type_keys(&mut app, &mut be, "l");
    let right = render_text(&app, 100, 30);
    assert_ne!(process_rows(&home, 16), process_rows(&right, 16));
    type_keys(&mut app, &mut be, "h");
    assert_eq!(render_text(&app, 100, 30), home, "h undoes l");
    // Panning stops at the drawing's edge: as many h as l get back home.
    type_keys(&mut app, &mut be, "llllllllllllllllllll");
    let edge = render_text(&app, 100, 30);
    type_keys(&mut app, &mut be, "l");
    assert_eq!(render_text(&app, 100, 30), edge);
    assert_eq!(app.pan.1, 0);
    // A step follows the current node again.
    type_keys(&mut app, &mut be, " ");
    assert_eq!(app.pan, (0, 0));
    // j/k pan up and down while the process panel has the focus.
    let before = render_text(&app, 100, 30);
    type_keys(&mut app, &mut be, "jjjj");
    if app.pan.1 != 0 {
        assert_ne!(render_text(&app, 100, 30), before);
    }
    // d again: the list.
    type_keys(&mut app, &mut be, "d");
    let list = render_text(&app, 100, 30);
    assert!(!process_rows(&list, 2).contains("diagram"), "{list}");
    assert!(list.contains("○ start"), "{list}");
}

#[test]
fn a_panel_too_small_for_the_diagram_lists_the_nodes() {
    let (mut app, mut be) = engine(
        "samples/dbg08-charge.bpmn",
        Some("samples/scenarios/dbg08-long-outage.json"),
    );
    type_keys(&mut app, &mut be, "d ");
    // The smallest compact layout: the process panel is too short.
    let small = render_text(&app, 60, 15);
    assert!(small.contains("too small for the diagram"), "{small}");
    assert!(small.contains("charge"), "{small}");
    golden("diagram-60x15-list", &small);
    // Bigger, the same instance draws as a diagram.
    let big = render_text(&app, 80, 24);
    assert!(big.contains("diagram"), "{big}");
    assert!(!big.contains("too small"), "{big}");
    golden("diagram-80x24", &big);
    // Every size draws without panicking, with the diagram on.
    for w in (1..=140).step_by(9) {
        for h in (1..=50).step_by(5) {
            assert_eq!(render_text(&app, w, h).lines().count(), h as usize);
        }
    }
}
