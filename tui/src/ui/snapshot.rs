//! The snapshot panel: every persisted key in canonical order. Retry state
//! stands out: `attempts.*` counters in yellow, the `backoff.*` marker in
//! magenta with the classification it carries spelled out.

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{attempts_style, backoff_style, block, dim, failed_style, lines_panel, Ctx};
use crate::app::Panel;
use crate::fmt;
use crate::view::KeyFamily;

pub fn render(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let width = area.width.saturating_sub(2) as usize;
    let key_w = v
        .snapshot
        .iter()
        .map(|e| e.key.chars().count())
        .max()
        .unwrap_or(0)
        .min(width * 2 / 3);
    let mut lines: Vec<Line> = Vec::new();
    for e in &v.snapshot {
        let style = match e.family {
            KeyFamily::Attempts => attempts_style(),
            KeyFamily::Backoff => backoff_style(),
            KeyFamily::Failure => failed_style(),
            KeyFamily::Variable => Style::new().fg(Color::Green),
            KeyFamily::Frontier => Style::new().fg(Color::Cyan),
            KeyFamily::Other => Style::new(),
        };
        let value_w = width.saturating_sub(key_w + 1).max(1);
        // Focused, the panel shows whole values (wrapped); else one line each.
        let chunks: Vec<String> = if ctx.focused {
            let chars: Vec<char> = e.value.chars().collect();
            chars.chunks(value_w).map(|c| c.iter().collect()).collect()
        } else {
            vec![fmt::clip(&e.value, value_w)]
        };
        for (i, chunk) in chunks.into_iter().enumerate() {
            let key = if i == 0 {
                fmt::clip(&e.key, key_w)
            } else {
                String::new()
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{key:<key_w$}"), style),
                Span::raw(" "),
                Span::raw(chunk),
            ]));
        }
        if let Some(c) = &e.classification {
            lines.push(Line::from(vec![
                Span::raw(" ".repeat(key_w.min(1))),
                Span::styled(format!("└ {c}"), backoff_style()),
            ]));
        }
    }
    if lines.is_empty() {
        lines.push(Line::styled("(empty)", dim()));
    }
    let title = format!("{} keys", v.snapshot.len());
    lines_panel(
        f,
        area,
        block(Panel::Snapshot, ctx, title),
        lines,
        ctx.scroll,
        false,
    );
}
