//! The colours the golden text frames cannot show: retry state stands out
//! (`attempts.*` yellow, the `backoff.*` marker magenta with its
//! classification), FAILED is red, and the focused panel has the heavy border.
//! Also the frame of a call in its backoff window, drawn from a test view
//! (the engine has no channel calls yet).

mod common;

use common::{golden, rich_view, Tape};
use qflow_tui::app::App;
use qflow_tui::ui;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Color;
use ratatui::Terminal;

fn draw(app: &App, w: u16, h: u16) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::draw(f, app)).unwrap();
    t.backend().buffer().clone()
}

/// The style of the first cell of the first occurrence of `needle`.
fn fg_of(buf: &Buffer, needle: &str) -> Color {
    let text = ui::buffer_text(buf);
    for (y, line) in text.lines().enumerate() {
        if let Some(byte) = line.find(needle) {
            let x = line[..byte].chars().count() as u16;
            return buf[(x, y as u16)].fg;
        }
    }
    panic!("{needle:?} not on screen:\n{text}");
}

#[test]
fn retry_state_is_highlighted_in_the_snapshot() {
    let mut tape = Tape::new(vec![rich_view()]);
    let mut app = App::new();
    app.refresh(&mut tape);
    let buf = draw(&app, 100, 30);
    assert_eq!(fg_of(&buf, "attempts.charge"), Color::Yellow);
    assert_eq!(fg_of(&buf, "backoff.authorize"), Color::Magenta);
    assert_eq!(fg_of(&buf, "└ q.timeout (transient)"), Color::Magenta);
    assert_eq!(fg_of(&buf, "var.amount"), Color::Green);
    // The focused panel (Process) has the cyan border.
    assert_eq!(fg_of(&buf, "┏ Process"), Color::Cyan);
    golden("call-in-backoff-window-test-view", &ui::buffer_text(&buf));
}

#[test]
fn a_failed_instance_is_red_on_the_status_line_and_chart() {
    let (mut app, mut be) = common::engine(
        "samples/dbg08-charge.bpmn",
        Some("samples/scenarios/dbg08-long-outage.json"),
    );
    common::type_keys(&mut app, &mut be, "      ");
    let buf = draw(&app, 100, 30);
    let text = ui::buffer_text(&buf);
    let y = 0u16;
    let x = text.lines().next().unwrap().find("FAILED").unwrap() as u16;
    let x = text.lines().next().unwrap()[..x as usize].chars().count() as u16;
    assert_eq!(buf[(x, y)].bg, Color::Red);
    assert_eq!(fg_of(&buf, "✗ PROVIDER_DOWN"), Color::Red);
}
