//! The status line: what is inspected, the instance's status (with code and
//! reason when FAILED) and virtual now.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::{App, Screen};
use crate::fmt;
use crate::view::InstanceStatus;

pub fn render(f: &mut Frame, area: Rect, app: &App) {
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
            let st = match v.instance.status {
                InstanceStatus::Failed => Style::new().bg(Color::Red).fg(Color::White),
                InstanceStatus::Completed => Style::new().bg(Color::Green).fg(Color::Black),
                InstanceStatus::Waiting => Style::new().bg(Color::Yellow).fg(Color::Black),
                InstanceStatus::Running => Style::new().bg(Color::Cyan).fg(Color::Black),
            }
            .add_modifier(Modifier::BOLD);
            spans.push(Span::raw(format!(" {} ", v.instance.id)));
            let mut status = format!(" {} ", v.instance.status.label());
            if let Some(fl) = v
                .instance
                .failure
                .as_ref()
                .filter(|_| v.instance.status == InstanceStatus::Failed)
            {
                status = format!(
                    " FAILED {} · {} · {} attempts ",
                    fl.code, fl.reason, fl.attempts
                );
            }
            spans.push(Span::styled(status, st));
            spans.push(Span::styled(
                format!(" now {} ", fmt::at(v.now_ms)),
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ));
            if let Some(w) = &v.instance.waiting_for {
                if !v.instance.status.is_terminal() {
                    spans.push(Span::raw(format!(" for {w} ")));
                }
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
                .filter(|r| r.status == InstanceStatus::Failed)
                .count();
            spans.push(Span::raw(format!(" {n} instances, {failed} FAILED ")));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}
