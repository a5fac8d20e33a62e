//! The small panels: timers, outbox rows, correlations, incidents. One row
//! per persisted row, columns cut to the panel's width.

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{attempts_style, block, dim, failed_style, lines_panel, ok_style, Ctx};
use crate::app::Panel;
use crate::fmt;
use qflow_engine::instance::OutboxState;

fn empty(text: &str) -> Vec<Line<'static>> {
    vec![Line::styled(text.to_string(), dim())]
}

pub(super) fn timers(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let timers = &v.inspection.timers;
    let lines: Vec<Line> = if timers.is_empty() {
        empty("no armed timer")
    } else {
        timers
            .iter()
            .map(|t| {
                let attempt = t.attempt.map(|a| format!(" #{a}")).unwrap_or_default();
                let due = v.since_start(t.due_ms);
                Line::from(vec![
                    Span::styled(
                        format!("{} ", t.purpose.as_str()),
                        Style::new().fg(Color::Yellow),
                    ),
                    Span::raw(format!("{}{attempt} ", t.node)),
                    Span::styled(fmt::at(due), attempts_style()),
                    Span::styled(format!(" {}", fmt::until(due, v.now_ms)), dim()),
                ])
            })
            .collect()
    };
    let n = timers.len();
    lines_panel(
        f,
        area,
        block(Panel::Timers, ctx, count(n)),
        lines,
        ctx.scroll,
        false,
    );
}

pub(super) fn outbox(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let outbox = &v.inspection.outbox;
    let lines: Vec<Line> = if outbox.is_empty() {
        empty(if v.channel_calls() {
            "no outbox row"
        } else {
            "no channel call in this model"
        })
    } else {
        outbox
            .iter()
            .flat_map(|o| {
                let st = match o.state {
                    OutboxState::Poisoned | OutboxState::Abandoned => failed_style(),
                    OutboxState::Delivered => ok_style(),
                    OutboxState::Pending => Style::new().fg(Color::Yellow),
                };
                let row = Line::from(vec![
                    Span::raw(format!("{} #{} ", o.node, o.attempt)),
                    Span::styled(o.state.as_str(), st),
                    Span::raw(format!(" ×{} ", o.deliveries)),
                    Span::styled(o.idempotency_key.clone(), dim()),
                ]);
                // Why an abandoned request will never be delivered, on a
                // line of its own (as the snapshot's marker shows its cause).
                let why = o
                    .reason
                    .as_ref()
                    .map(|r| Line::styled(format!(" └ {r}"), dim()));
                std::iter::once(row).chain(why)
            })
            .collect()
    };
    let n = outbox.len();
    lines_panel(
        f,
        area,
        block(Panel::Outbox, ctx, count(n)),
        lines,
        ctx.scroll,
        false,
    );
}

pub(super) fn correlations(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let correlations = &v.inspection.correlations;
    let lines: Vec<Line> = if correlations.is_empty() {
        empty("no correlation")
    } else {
        correlations
            .iter()
            .map(|c| {
                // A finished instance answers no response: its correlation
                // row stays for the record, closed.
                let (state, style) = if crate::view::is_terminal(v.status()) {
                    ("closed", dim())
                } else if c.in_backoff {
                    ("in backoff", Style::new().fg(Color::Cyan))
                } else {
                    ("live", Style::new().fg(Color::Cyan))
                };
                Line::from(vec![
                    Span::raw(format!("{} ", c.node)),
                    Span::styled(state, style),
                    Span::styled(format!(" {}", c.key), dim()),
                ])
            })
            .collect()
    };
    let n = correlations.len();
    lines_panel(
        f,
        area,
        block(Panel::Correlations, ctx, count(n)),
        lines,
        ctx.scroll,
        false,
    );
}

pub(super) fn incidents(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let incidents = &v.inspection.incidents;
    let lines: Vec<Line> = if incidents.is_empty() {
        empty("no incident")
    } else {
        // Focused, the panel selects one incident (`enter` reads it in full).
        let selected = ctx
            .focused
            .then(|| (ctx.scroll as usize).min(incidents.len() - 1));
        incidents
            .iter()
            .enumerate()
            .map(|(n, i)| {
                let open = i.closed_ms.is_none();
                let st = if open { failed_style() } else { dim() };
                let mut spans = Vec::new();
                if let Some(s) = selected {
                    spans.push(if s == n {
                        Span::styled("› ", Style::new().fg(Color::Cyan))
                    } else {
                        Span::raw("  ")
                    });
                }
                spans.extend([
                    Span::styled(
                        format!("{} {} ", if open { "open" } else { "closed" }, i.kind),
                        st,
                    ),
                    Span::raw(format!(
                        "{} {} ",
                        i.node,
                        fmt::at(v.since_start(i.opened_ms))
                    )),
                    Span::styled(i.message.clone(), dim()),
                ]);
                Line::from(spans)
            })
            .collect()
    };
    let open = incidents.iter().filter(|i| i.closed_ms.is_none()).count();
    let extra = if open > 0 {
        format!("{open} open")
    } else {
        String::new()
    };
    lines_panel(
        f,
        area,
        block(Panel::Incidents, ctx, extra),
        lines,
        ctx.scroll,
        false,
    );
}

fn count(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        n.to_string()
    }
}
