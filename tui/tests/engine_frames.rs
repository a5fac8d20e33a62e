//! Golden frames of the key moments, over the real engine and store: the
//! DBG-08 charge with an always-failing scenario (first attempt, parked with
//! its countdown, the re-drive, exhaustion), a transient outage that
//! recovers, an unknown outcome waiting for reconciliation, the compact
//! layout, the help overlay, and the instance list of an attached database.
//! Frames are plain text in tests/golden/ (colours are checked separately).

mod common;

use common::{engine, golden, type_keys};
use qflow_tui::ui::render_text;

const DBG08: &str = "samples/dbg08-charge.bpmn";
const ALWAYS_FAILING: &str = "samples/scenarios/dbg08-long-outage.json";

#[test]
fn dbg08_first_attempt_parks_with_a_countdown_then_redrives_and_exhausts() {
    let (mut app, mut be) = engine(DBG08, Some(ALWAYS_FAILING));
    golden("dbg08-0-ready", &render_text(&app, 100, 30));

    type_keys(&mut app, &mut be, " ");
    let f = render_text(&app, 100, 30);
    assert!(f.contains("parked in 1m ×1"), "{f}");
    golden("dbg08-1-first-attempt", &f);

    // Advance 30 s: the countdown shows 30 s left; nothing ran.
    type_keys(&mut app, &mut be, "t1\n");
    let f = render_text(&app, 100, 30);
    assert!(f.contains("parked in 30s ×1"), "{f}");
    assert!(f.contains("now +30s"), "{f}");
    golden("dbg08-2-parked-countdown", &f);

    // The re-drive: the retry timer fires at +1m and attempt 2 runs.
    type_keys(&mut app, &mut be, " ");
    let f = render_text(&app, 100, 30);
    assert!(f.contains("+1m attempt     charge #2 PROVIDER_DOWN"), "{f}");
    golden("dbg08-3-redrive", &f);

    for _ in 0..4 {
        type_keys(&mut app, &mut be, " ");
    }
    let f = render_text(&app, 100, 30);
    assert!(
        f.contains("FAILED PROVIDER_DOWN · exhausted · 6 attempts"),
        "{f}"
    );
    assert_eq!(
        f.matches("✗ PROVIDER_DOWN transient").count(),
        6,
        "six attempts on the chart:\n{f}"
    );
    golden("dbg08-4-exhausted", &f);

    // A step on a FAILED instance decides nothing, and says why.
    type_keys(&mut app, &mut be, " ");
    assert!(
        app.report
            .message
            .contains("FAILED (PROVIDER_DOWN, exhausted)"),
        "{}",
        app.report.message
    );
    golden("dbg08-4-exhausted-60x15", &render_text(&app, 60, 15));
}

#[test]
fn transient_outage_recovers_on_the_fourth_attempt() {
    let (mut app, mut be) = engine(DBG08, Some("samples/scenarios/dbg08-transient-outage.json"));
    type_keys(&mut app, &mut be, "     ");
    let f = render_text(&app, 100, 30);
    assert!(f.contains("COMPLETED"), "{f}");
    assert!(f.contains("✓ succeeded"), "{f}");
    golden("transient-outage-completed", &f);
}

#[test]
fn unknown_outcome_waits_for_reconciliation_with_an_open_incident() {
    let (mut app, mut be) = engine(
        "samples/dbg08-unknown-outcome.bpmn",
        Some("samples/scenarios/dbg08-unknown-outcome.json"),
    );
    type_keys(&mut app, &mut be, " ");
    let f = render_text(&app, 100, 30);
    assert!(f.contains("? outcome pending"), "{f}");
    golden("unknown-outcome-reconcile", &f);
    // R → succeeded: the attempt's outcome is what the operator said.
    type_keys(&mut app, &mut be, "R1\n ");
    let f = render_text(&app, 100, 30);
    assert!(f.contains("COMPLETED"), "{f}");
    assert!(f.contains("#1 +0s     ✓ succeeded"), "{f}");
    golden("unknown-outcome-reconciled", &f);
}

#[test]
fn help_overlay_and_fail_picker_over_the_engine() {
    let (mut app, mut be) = engine(DBG08, Some(ALWAYS_FAILING));
    type_keys(&mut app, &mut be, "?");
    golden("help-overlay", &render_text(&app, 100, 30));
    // On an 80-column terminal a long help line wraps under its own text,
    // past the key column, not back at the border.
    let f = render_text(&app, 80, 24);
    assert!(f.contains("║        due timer)"), "{f}");
    golden("help-overlay-80x24", &f);
    type_keys(&mut app, &mut be, "?f1\n");
    golden("fail-class-picker", &render_text(&app, 100, 30));
}

/// The incidents panel cuts a long message with `…`; focused, it selects an
/// incident, and `enter` shows the selected one in full until `esc`.
#[test]
fn the_selected_incident_reads_in_full() {
    let (mut app, mut be) = engine(
        "samples/dbg08-unknown-outcome.bpmn",
        Some("samples/scenarios/dbg08-unknown-outcome.json"),
    );
    type_keys(&mut app, &mut be, " ");
    let message = app.view.as_ref().unwrap().inspection.incidents[0]
        .message
        .clone();
    let f = render_text(&app, 100, 30);
    assert!(
        !f.contains(&message),
        "the panel is narrower than the message:\n{f}"
    );
    assert!(f.contains("open reconciliation ch…"), "{f}");
    // Six tabs from the process panel reach the incidents.
    type_keys(&mut app, &mut be, "\t\t\t\t\t\t");
    let f = render_text(&app, 100, 30);
    assert!(f.contains("enter shows the selected one in full"), "{f}");
    assert!(f.contains("› open reconciliation"), "{f}");
    type_keys(&mut app, &mut be, "\n");
    let f = render_text(&app, 100, 30);
    // The overlay's rows, between its double borders, joined as read.
    let flat: String = f
        .lines()
        .filter_map(|l| {
            let (a, b) = (l.find('║')?, l.rfind('║')?);
            (a < b).then(|| l[a + '║'.len_utf8()..b].trim())
        })
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains(&message),
        "the overlay shows the whole message `{message}`:\n{f}"
    );
    golden("incident-detail", &f);
    // esc closes it; the instance is as it was.
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Esc,
    ));
    assert!(!app.incident);
    assert!(!render_text(&app, 100, 30).contains("incident 1 of 1"));
}
