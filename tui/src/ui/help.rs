//! The `?` overlay: every binding of the keymap, with a legend of the marks.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::{centered, dim};
use crate::app::App;
use crate::keymap::KEYMAP;

/// The overlay's width, borders included, on a terminal wide enough.
const WIDTH: u16 = 92;
/// The key column: the key right-aligned in six cells, two spaces.
const KEY_COLUMN: usize = 8;

pub(super) fn render(f: &mut Frame, area: Rect, app: &App) {
    let read_only = app.view.as_ref().is_some_and(|v| v.read_only);
    // The instance list has keys of its own: its overlay lists those, in
    // the list's words, not the instance's.
    let on_list = app.screen == crate::app::Screen::List;
    let mut lines: Vec<Line> = Vec::new();
    // A help line too long for the overlay wraps under its own text (a
    // hanging indent past the key column), not back at the key column.
    let inner = WIDTH.min(area.width).saturating_sub(2) as usize;
    let text_width = inner.saturating_sub(KEY_COLUMN).max(16);
    for b in KEYMAP {
        let style = if read_only && b.acts && !on_list {
            dim()
        } else {
            Style::new()
        };
        let help = if on_list {
            match b.list {
                Some(text) => text,
                None => continue,
            }
        } else {
            b.help
        };
        for (i, part) in textwrap::wrap(help, text_width).into_iter().enumerate() {
            let key = if i == 0 {
                format!("{:>6}  ", b.key_label)
            } else {
                " ".repeat(KEY_COLUMN)
            };
            lines.push(Line::from(vec![
                Span::styled(
                    key,
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                ),
                Span::styled(part.into_owned(), style),
            ]));
        }
    }
    lines.push(Line::raw(""));
    if on_list {
        lines.push(Line::styled(
            "the list: FAILED first, then waiting, running, completed · magenta: held by a pause or quarantined",
            dim(),
        ));
        lines.push(Line::styled(
            "enter opens an instance: its own keys are listed by ? there",
            dim(),
        ));
        return show(f, area, app, lines);
    }
    lines.push(Line::styled(
        "marks: ✗ failed attempt  ✓ succeeded  ? outcome pending  · planned  ┃ maxElapsed  ▲ now",
        dim(),
    ));
    lines.push(Line::styled(
        "snapshot: attempts.* yellow · backoff.* marker magenta, └ the failure that parked it",
        dim(),
    ));
    lines.push(Line::styled(
        "diagram: ● token · heavy border the current node · green the path taken · ! open incident",
        dim(),
    ));
    if read_only {
        lines.push(Line::styled(
            "read-only: acting keys are off for a finished instance (m repairs a FAILED one)",
            dim(),
        ));
    }
    show(f, area, app, lines);
}

/// The overlay itself, scrolled by j/k.
fn show(f: &mut Frame, area: Rect, app: &App, lines: Vec<Line>) {
    let total = lines.len() as u16;
    let r = centered(area, WIDTH, total + 2);
    let title = if app.screen == crate::app::Screen::List {
        " keys of the instance list · j/k scroll · ? or esc closes "
    } else {
        " keys · j/k scroll · ? or esc closes "
    };
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::new().fg(Color::Cyan))
        .title(title);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((app.help_scroll.min(total.saturating_sub(1)), 0))
            .block(block),
        r,
    );
}
