//! The footer: the keys (from the one keymap) and the last command's report.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::{App, Screen};
use crate::backend::Tone;
use crate::keymap::{Action, KEYMAP};

/// The keys that fit, in keymap order; `? help` and `q quit` always stay.
pub(super) fn render(f: &mut Frame, area: Rect, app: &App) {
    let read_only = app.view.as_ref().is_some_and(|v| v.read_only) || app.screen == Screen::List;
    let keep = |a: Action| matches!(a, Action::Help | Action::Quit);
    let wanted: Vec<_> = KEYMAP
        .iter()
        .filter(|b| b.footer && !(read_only && b.acts))
        // The list of instances has no process to draw.
        .filter(|b| !(app.screen == Screen::List && b.action == Action::Diagram))
        // Migration repairs an instance of an attached database (on the
        // list: every FAILED one of the selected row's deployment).
        .filter(|b| b.action != Action::Migrate || app.attached)
        // Pausing and quarantine act on an attached database.
        .filter(|b| !matches!(b.action, Action::Pause | Action::Quarantine) || app.attached)
        .collect();
    let mut extra: Vec<(&str, &str)> = Vec::new();
    if app.screen == Screen::List {
        extra.push(("enter", "open"));
        extra.push(("j/k", "select"));
        extra.push(("/", "filter"));
        extra.push(("G", "end"));
    } else if app.attached {
        extra.push(("esc", "list"));
    }
    let item_w = |k: &str, s: &str| k.chars().count() + s.chars().count() + 3;
    let mut budget = area.width as usize;
    for b in wanted.iter().filter(|b| keep(b.action)) {
        budget = budget.saturating_sub(item_w(b.key_label, b.short));
    }
    // On an attached database the operator's keys (pause, quarantine)
    // come first, so a narrow footer cuts the stepping keys instead.
    let operating = |a: Action| app.attached && matches!(a, Action::Pause | Action::Quarantine);
    let mut items: Vec<(&str, &str)> = Vec::new();
    for (k, s) in extra.iter().copied().chain(
        wanted
            .iter()
            .filter(|b| !keep(b.action) && operating(b.action))
            .chain(
                wanted
                    .iter()
                    .filter(|b| !keep(b.action) && !operating(b.action)),
            )
            .map(|b| (b.key_label, b.short)),
    ) {
        let w = item_w(k, s);
        if w > budget {
            break;
        }
        budget -= w;
        items.push((k, s));
    }
    items.extend(
        wanted
            .iter()
            .filter(|b| keep(b.action))
            .map(|b| (b.key_label, b.short)),
    );
    let key = Style::new()
        .fg(Color::Black)
        .bg(Color::Gray)
        .add_modifier(Modifier::BOLD);
    let mut spans = Vec::new();
    for (k, s) in items {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(k.to_string(), key));
        spans.push(Span::raw(format!(" {s} ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The last command's outcome, coloured by its tone.
pub(super) fn render_report(f: &mut Frame, area: Rect, app: &App) {
    let style = match app.report.tone {
        Tone::Info => Style::new(),
        Tone::Good => Style::new().fg(Color::Green),
        Tone::Warn => Style::new().fg(Color::Yellow),
        Tone::Bad => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
    };
    let line = Line::from(vec![
        Span::styled("» ", Style::new().fg(Color::Cyan)),
        Span::styled(app.report.message.clone(), style),
    ]);
    f.render_widget(
        Paragraph::new(super::clip_line(line, area.width as usize)),
        area,
    );
}
