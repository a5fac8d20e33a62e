//! The history panel: every persisted decision, oldest first, following the
//! newest (scrolling up reads back).

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{attempts_style, block, dim, failed_style, lines_panel, ok_style, Ctx};
use crate::app::Panel;
use crate::fmt;

pub fn render(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let lines: Vec<Line> = v
        .history
        .iter()
        .map(|h| {
            let kind_style = match h.kind.as_str() {
                "attempt" => attempts_style(),
                "failed" | "fatal" | "exhausted" => failed_style(),
                "completed" | "end" | "succeeded" => ok_style(),
                "park" | "backoff" | "retry" => Style::new().fg(Color::Yellow),
                "ignored" | "refused" => Style::new().fg(Color::Magenta),
                _ => Style::new().fg(Color::Cyan),
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
            if !h.detail.is_empty() {
                spans.push(Span::styled(format!("  {}", h.detail), dim()));
            }
            Line::from(spans)
        })
        .collect();
    let title = format!("{} decisions", v.history.len());
    lines_panel(
        f,
        area,
        block(Panel::History, ctx, title),
        lines,
        ctx.scroll,
        true,
    );
}
