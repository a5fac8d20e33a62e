//! The console draws at every size from 1×1 to 200×60, through resizes, with
//! every panel focused and with overlays open, without panicking; panels
//! collapse as the terminal shrinks.

mod common;

use common::{rich_view, type_keys, Tape};
use qflow_tui::app::{App, Panel};
use qflow_tui::ui::{self, areas};
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;

fn app_with(view: qflow_tui::View) -> (App, Tape) {
    let mut tape = Tape::new(vec![view]);
    let mut app = App::new();
    app.refresh(&mut tape);
    (app, tape)
}

#[test]
fn every_size_from_1x1_to_200x60_draws_without_panicking() {
    let (mut app, mut tape) = app_with(rich_view());
    let mut sizes = Vec::new();
    for w in (1..=200).step_by(7).chain([59, 60, 99, 100, 200]) {
        for h in (1..=60).step_by(4).chain([14, 15, 25, 26, 60]) {
            sizes.push((w, h));
        }
    }
    for (i, (w, h)) in sizes.iter().enumerate() {
        app.focus = Panel::ALL[i % Panel::ALL.len()];
        let text = ui::render_text(&app, *w, *h);
        assert_eq!(text.lines().count(), *h as usize);
    }
    // Overlays too.
    type_keys(&mut app, &mut tape, "?");
    for (w, h) in &sizes {
        ui::render_text(&app, *w, *h);
    }
    type_keys(&mut app, &mut tape, "\x1bf");
    assert!(app.prompt.is_some());
    for (w, h) in &sizes {
        ui::render_text(&app, *w, *h);
    }
}

#[test]
fn resizes_on_one_terminal_redraw_at_the_new_size() {
    let (app, _tape) = app_with(rich_view());
    let mut term = Terminal::new(TestBackend::new(100, 30)).unwrap();
    for (w, h) in [
        (100, 30),
        (1, 1),
        (60, 15),
        (200, 60),
        (0, 0),
        (59, 14),
        (120, 40),
        (3, 2),
        (100, 30),
    ] {
        term.backend_mut().resize(w, h);
        term.autoresize().unwrap();
        term.draw(|f| ui::draw(f, &app)).unwrap();
        assert_eq!(term.backend().buffer().area, Rect::new(0, 0, w, h));
    }
}

#[test]
fn panels_collapse_as_the_terminal_shrinks() {
    let full = areas(Rect::new(0, 0, 100, 30), Panel::Process);
    assert_eq!(full.panels.len(), 8, "every panel at 100x30");
    let compact = areas(Rect::new(0, 0, 60, 15), Panel::Timers);
    let shown: Vec<Panel> = compact.panels.iter().map(|p| p.0).collect();
    assert_eq!(shown, vec![Panel::Process, Panel::Schedule, Panel::Timers]);
    let compact_default = areas(Rect::new(0, 0, 60, 15), Panel::Process);
    assert_eq!(compact_default.panels[2].0, Panel::History);
    let tiny = areas(Rect::new(0, 0, 40, 10), Panel::Snapshot);
    assert_eq!(
        tiny.panels.iter().map(|p| p.0).collect::<Vec<_>>(),
        vec![Panel::Snapshot]
    );
    for a in [full, compact, tiny] {
        for (_, r) in &a.panels {
            assert!(r.width > 0 && r.height > 0);
        }
    }
}

#[test]
fn at_60x15_the_process_schedule_and_keys_stay_readable() {
    let (app, _tape) = app_with(rich_view());
    let text = ui::render_text(&app, 60, 15);
    println!("{text}");
    assert!(text.contains("charge"), "{text}");
    assert!(text.contains("parked 4m59s ×2"), "{text}");
    assert!(text.contains("q quit"), "{text}");
    assert!(text.contains("? help"), "{text}");
}

#[test]
#[ignore = "prints frames for review: cargo test -p qflow-tui --test layout show -- --ignored --nocapture"]
fn show() {
    let (mut app, mut tape) = app_with(rich_view());
    println!("{}", ui::render_text(&app, 100, 30));
    println!("{}", ui::render_text(&app, 60, 15));
    type_keys(&mut app, &mut tape, "?");
    println!("{}", ui::render_text(&app, 100, 30));
    type_keys(&mut app, &mut tape, "\x1bf");
    println!("{}", ui::render_text(&app, 100, 30));
}
