//! The process panel: nodes in flow order, each with its persisted state;
//! the current node marked with `▸`.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{attempts_style, block, dim, failed_style, lines_panel, ok_style, Ctx};
use crate::app::Panel;
use crate::fmt;
use crate::view::{NodeInspection, NodeKind, NodeState};

/// The list; `note` goes in the title (why the diagram is not drawn).
pub(super) fn render(f: &mut Frame, area: Rect, ctx: &Ctx, note: &str) {
    let v = ctx.view;
    let width = area.width.saturating_sub(2) as usize;
    let nodes = &v.inspection.nodes;
    let current = v.inspection.current.as_deref();
    let id_w = nodes
        .iter()
        .map(|n| n.id.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(4, (width / 2).max(4));
    let lines: Vec<Line> = nodes
        .iter()
        .map(|n| node_line(n, current == Some(n.id.as_str()), id_w, width, v.now_ms))
        .collect();
    lines_panel(
        f,
        area,
        block(Panel::Process, ctx, note),
        lines,
        ctx.scroll,
        false,
    );
}

/// A node kind's symbol, in the list and on the diagram.
pub(super) fn glyph(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Start => "○",
        NodeKind::End => "◎",
        NodeKind::ErrorEnd => "⊗",
        NodeKind::Gateway => "◇",
        NodeKind::Task => "▭",
        NodeKind::Call => "⇄",
        NodeKind::Timer => "◷",
        NodeKind::Boundary => "↳",
    }
}

fn node_line(
    n: &NodeInspection,
    current: bool,
    id_w: usize,
    width: usize,
    now_ms: i64,
) -> Line<'static> {
    let attempts_w = n.attempts.map_or(0, |a| format!(" ×{a}").chars().count());
    let room = width.saturating_sub(3 + id_w + 1 + attempts_w);
    let (mut state, style) = state_text(&n.state, now_ms, false);
    if state.chars().count() > room {
        state = state_text(&n.state, now_ms, true).0;
    }
    let marker = if current { "▸" } else { " " };
    let id_style = if current {
        Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)
    } else if n.state == NodeState::Idle {
        dim()
    } else {
        Style::new()
    };
    let mut spans = vec![
        Span::styled(marker, Style::new().fg(Color::Cyan)),
        Span::raw(format!("{} ", glyph(n.kind))),
        Span::styled(format!("{:<id_w$}", fmt::clip(&n.id, id_w)), id_style),
        Span::raw(" "),
        Span::styled(state, style),
    ];
    if let Some(a) = n.attempts {
        spans.push(Span::styled(format!(" ×{a}"), attempts_style()));
    }
    Line::from(spans)
}

/// The words for a node's state, and their colour; `short` for narrow panels.
pub(super) fn state_text(s: &NodeState, now_ms: i64, short: bool) -> (String, Style) {
    match s {
        NodeState::Parked { eligible_at_ms } if short => (
            format!(
                "parked {}",
                fmt::span(eligible_at_ms - now_ms).replace(' ', "")
            ),
            Style::new().fg(Color::Yellow),
        ),
        NodeState::WaitingResponse { timeout_at_ms } if short => (
            match timeout_at_ms {
                Some(t) => format!("reply in {}", fmt::span(t - now_ms).replace(' ', "")),
                None => "awaits reply".into(),
            },
            Style::new().fg(Color::Blue),
        ),
        NodeState::WaitingReconciliation if short => {
            ("reconcile".into(), Style::new().fg(Color::Magenta))
        }
        NodeState::Idle => (String::new(), dim()),
        NodeState::Active => ("ready".into(), Style::new().fg(Color::Cyan)),
        NodeState::Parked { eligible_at_ms } => (
            format!("parked {}", fmt::until(*eligible_at_ms, now_ms)),
            Style::new().fg(Color::Yellow),
        ),
        NodeState::Timer { due_at_ms } => (
            format!("timer {}", fmt::until(*due_at_ms, now_ms)),
            Style::new().fg(Color::Blue),
        ),
        NodeState::WaitingResponse { timeout_at_ms } => (
            match timeout_at_ms {
                Some(t) => format!("awaits reply, timeout {}", fmt::until(*t, now_ms)),
                None => "awaits reply".into(),
            },
            Style::new().fg(Color::Blue),
        ),
        NodeState::WaitingReconciliation => {
            ("awaits reconcile".into(), Style::new().fg(Color::Magenta))
        }
        NodeState::Joined => ("joined".into(), Style::new().fg(Color::Blue)),
        NodeState::Failed => ("FAILED".into(), failed_style()),
        NodeState::Completed => ("done".into(), ok_style()),
        NodeState::Unknown => ("unknown: snapshot damaged".into(), failed_style()),
    }
}
