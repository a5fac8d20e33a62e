//! The selected incident in full, over the panels: the incidents panel
//! has one line per incident and cuts a long message with `…`; `enter`
//! shows this, wrapped to the overlay's width.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::{centered, dim, failed_style};
use crate::app::App;
use crate::fmt;

pub(super) fn render(f: &mut Frame, area: Rect, app: &App) {
    let (Some(view), Some(at)) = (&app.view, app.selected_incident()) else {
        return;
    };
    let incidents = &view.inspection.incidents;
    let i = &incidents[at];
    let label = |s: &str| {
        Span::styled(
            format!("{s:<9}"),
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        )
    };
    let (state, state_style) = match i.closed_ms {
        None => ("open".to_string(), failed_style()),
        Some(c) => (format!("closed at {}", fmt::at(view.since_start(c))), dim()),
    };
    let fields = [
        ("state", Span::styled(state, state_style)),
        ("kind", Span::raw(i.kind.to_string())),
        ("node", Span::raw(i.node.clone())),
        ("opened", Span::raw(fmt::at(view.since_start(i.opened_ms)))),
    ];
    let mut lines: Vec<Line> = fields
        .into_iter()
        .map(|(name, value)| Line::from(vec![label(name), value]))
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::raw(i.message.clone()));
    let w = area.width.saturating_sub(4).min(96);
    let inner_w = w.saturating_sub(2).max(1) as usize;
    // Rows the wrapped message needs (a word never splits mid-way unless it
    // is longer than a row), plus the fixed rows and the border.
    let message_rows: usize = i
        .message
        .lines()
        .map(|l| l.chars().count().div_ceil(inner_w).max(1) + 1)
        .sum::<usize>()
        .max(1);
    let h = (5 + message_rows + 2) as u16;
    let r = centered(area, w, h);
    let title = format!(
        " incident {} of {} · j/k previous/next · enter or esc closes ",
        at + 1,
        incidents.len()
    );
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::new().fg(Color::Cyan))
        .title(title);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block),
        r,
    );
}
