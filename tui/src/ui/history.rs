//! The history panel: every persisted decision, oldest first, following the
//! newest (scrolling up reads back).

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{attempts_style, block, dim, failed_style, lines_panel, ok_style, Ctx};
use crate::app::Panel;
use crate::fmt;
use crate::view::HistoryTone;

pub(super) fn render(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let lines: Vec<Line> = v
        .inspection
        .history
        .iter()
        .zip(&v.history)
        .map(|(h, note)| {
            let kind_style = match note.tone {
                HistoryTone::Attempt => attempts_style(),
                HistoryTone::Failed => failed_style(),
                HistoryTone::Ended => ok_style(),
                HistoryTone::Ignored => Style::new().fg(Color::Magenta),
                HistoryTone::Other => Style::new().fg(Color::Cyan),
            };
            let mut spans = vec![
                Span::styled(format!("{:>9} ", fmt::at(h.at_ms)), dim()),
                Span::styled(format!("{:<11}", h.kind), kind_style),
                Span::raw(format!(" {}", h.node.as_deref().unwrap_or("-"))),
            ];
            if let Some(a) = h.attempt {
                spans.push(Span::styled(format!(" #{a}"), attempts_style()));
            }
            if let Some(c) = &h.code {
                spans.push(Span::styled(format!(" {c}"), failed_style()));
            }
            if !note.detail.is_empty() {
                spans.push(Span::styled(format!("  {}", note.detail), dim()));
            }
            Line::from(spans)
        })
        .collect();
    let title = match v.inspection.history.len() {
        1 => "1 decision".to_string(),
        n => format!("{n} decisions"),
    };
    lines_panel(
        f,
        area,
        block(Panel::History, ctx, title),
        lines,
        ctx.scroll,
        true,
    );
}
