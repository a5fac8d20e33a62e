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
use qflow_engine::inspect::SnapshotKey;
use qflow_engine::instance::snapshot::{Family, FAILURE_KEY, FRONTIER_KEY};

pub(super) fn render(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let width = area.width.saturating_sub(2) as usize;
    let keys = &v.inspection.snapshot;
    let key_w = keys
        .iter()
        .map(|e| e.key.chars().count())
        .max()
        .unwrap_or(0)
        .min(width * 2 / 3);
    let mut lines: Vec<Line> = Vec::new();
    for e in keys {
        let style = key_style(e);
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
        // The backoff-window marker carries the failure that parked the call.
        if let Some(c) = classification(e) {
            lines.push(Line::from(vec![
                Span::raw(" ".repeat(key_w.min(1))),
                Span::styled(format!("└ {c}"), backoff_style()),
            ]));
        }
    }
    // Bytes that are not a snapshot are shown as stored, never hidden.
    if let Some(raw) = &v.inspection.raw_snapshot {
        lines.push(Line::styled(
            "damaged: the stored bytes are not a snapshot",
            failed_style(),
        ));
        let w = width.max(1);
        let chars: Vec<char> = raw.chars().collect();
        for c in chars.chunks(w) {
            lines.push(Line::raw(c.iter().collect::<String>()));
        }
    }
    if lines.is_empty() {
        lines.push(Line::styled("(empty)", dim()));
    }
    let title = crate::fmt::count(keys.len(), "key", "keys");
    lines_panel(
        f,
        area,
        block(Panel::Snapshot, ctx, title),
        lines,
        ctx.scroll,
        false,
    );
}

/// Retry state stands out: counters yellow, the backoff marker magenta, the
/// failure record red, variables green, the frontier cyan.
fn key_style(e: &SnapshotKey) -> Style {
    match e.family {
        Some(Family::Attempts) => attempts_style(),
        Some(Family::Backoff) => backoff_style(),
        _ if e.key == FAILURE_KEY => failed_style(),
        _ if e.key == FRONTIER_KEY => Style::new().fg(Color::Cyan),
        None if e.key.starts_with("var.") => Style::new().fg(Color::Green),
        _ => Style::new(),
    }
}

/// A backoff marker's `code (class)`.
fn classification(e: &SnapshotKey) -> Option<String> {
    if e.family != Some(Family::Backoff) {
        return None;
    }
    let (code, class) = e.marker.as_ref()?;
    Some(match class {
        Some(c) => format!("{code} ({c})"),
        None => code.clone(),
    })
}
