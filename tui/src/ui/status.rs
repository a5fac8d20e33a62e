//! The status line: what is inspected, the instance's status (with code and
//! reason when FAILED) and virtual now.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use qflow_engine::store::contain::Actor;

use crate::app::{App, Screen};
use crate::fmt;
use crate::view::{status_label, Status, View, Waiting};

pub(super) fn render(f: &mut Frame, area: Rect, app: &App) {
    let bar = Style::new().bg(Color::Blue).fg(Color::White);
    // Narrow terminals keep the instance's status rather than the brand.
    let brand = if area.width >= 80 {
        " qflow console "
    } else {
        ""
    };
    let mut spans = vec![Span::styled(brand, bar.add_modifier(Modifier::BOLD))];
    match (&app.view, app.screen) {
        (Some(v), Screen::Instance) => {
            let i = &v.inspection;
            let st = match i.status {
                Status::Failed => Style::new().bg(Color::Red).fg(Color::White),
                Status::Completed => Style::new().bg(Color::Green).fg(Color::Black),
                Status::Waiting => Style::new().bg(Color::Yellow).fg(Color::Black),
                Status::Running => Style::new().bg(Color::Cyan).fg(Color::Black),
            }
            .add_modifier(Modifier::BOLD);
            spans.push(Span::raw(format!(" {} ", i.id)));
            let mut status = format!(" {} ", status_label(i.status));
            if let Some(fl) = v.failed() {
                status = format!(
                    " FAILED {} · {} · {} ",
                    fl.code,
                    fl.reason,
                    fmt::count(
                        i.failed_attempts().unwrap_or(0) as usize,
                        "attempt",
                        "attempts"
                    )
                );
            }
            spans.push(Span::styled(status, st));
            // Set aside: said beside the status, before anything is cut.
            if i.quarantined_ms.is_some() {
                spans.push(Span::styled(
                    format!(
                        " quarantined {} ",
                        Actor::words(i.quarantined_by.as_deref(), None)
                    ),
                    Style::new().bg(Color::Magenta).fg(Color::White),
                ));
            }
            // What holds it back: a pause on the park it waits for, a
            // quarantine (the engine's reading of the store).
            let held = Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD);
            let pauses: Vec<String> = i.held_wait().iter().map(|h| h.pause()).collect();
            if !pauses.is_empty() {
                spans.push(Span::styled(
                    format!(" held by paused {} ", pauses.join(" and ")),
                    held,
                ));
            }

            spans.push(Span::styled(
                format!(" now {} ", fmt::at(v.now_ms)),
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ));
            if let Some(w) = waiting_for(v) {
                spans.push(Span::raw(format!(" for {w} ")));
            }
            if v.read_only {
                spans.push(Span::styled(" read-only ", Style::new().fg(Color::Magenta)));
            }
            spans.push(Span::styled(
                format!(" {}", v.source),
                Style::new().fg(Color::DarkGray),
            ));
        }
        _ => {
            let n = app.list.len();
            let failed = app
                .list
                .iter()
                .filter(|r| r.status == Status::Failed)
                .count();
            spans.push(Span::raw(format!(
                " {}, {failed} FAILED ",
                fmt::count(n, "instance", "instances")
            )));
        }
    }
    // An open text field is visible here too (first, so a narrow terminal
    // keeps it), whatever covers the prompt.
    if let Some((label, text)) = app
        .prompt
        .as_ref()
        .and_then(|p| Some((&p.input_label, p.input.as_ref()?)))
    {
        spans.insert(
            1,
            Span::styled(
                format!(" ✎ {label}: {text}▏ "),
                Style::new().bg(Color::Yellow).fg(Color::Black),
            ),
        );
    }
    f.render_widget(
        Paragraph::new(super::clip_line(Line::from(spans), area.width as usize)),
        area,
    );
}

/// What a waiting instance waits for, in words (`retry of charge at 6m`).
fn waiting_for(v: &View) -> Option<String> {
    let i = &v.inspection;
    if i.status != Status::Waiting {
        return None;
    }
    Some(match i.waiting.as_ref()? {
        Waiting::Reconciliation { node, .. } => format!("reconciliation of {node}"),
        Waiting::Timer {
            node,
            purpose,
            due_ms,
        } => format!(
            "{} of {node} at {}",
            qflow_engine::inspect::waiting_for(*purpose),
            fmt::at(*due_ms)
        ),
        Waiting::Nothing { .. } => "nothing it can be given locally".to_string(),
    })
}
