//! The small panels: timers, outbox rows, correlations, incidents. One row
//! per persisted row, columns cut to the panel's width.

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{attempts_style, block, dim, failed_style, lines_panel, ok_style, Ctx};
use crate::app::Panel;
use crate::fmt;

fn empty(text: &str) -> Vec<Line<'static>> {
    vec![Line::styled(text.to_string(), dim())]
}

pub fn timers(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let lines: Vec<Line> = if v.timers.is_empty() {
        empty("no armed timer")
    } else {
        v.timers
            .iter()
            .map(|t| {
                let attempt = t.attempt.map(|a| format!(" #{a}")).unwrap_or_default();
                Line::from(vec![
                    Span::styled(format!("{} ", t.kind), Style::new().fg(Color::Yellow)),
                    Span::raw(format!("{}{attempt} ", t.node)),
                    Span::styled(fmt::at(t.due_at_ms), attempts_style()),
                    Span::styled(format!(" {}", fmt::until(t.due_at_ms, v.now_ms)), dim()),
                ])
            })
            .collect()
    };
    let n = v.timers.len();
    lines_panel(
        f,
        area,
        block(Panel::Timers, ctx, count(n)),
        lines,
        ctx.scroll,
        false,
    );
}

pub fn outbox(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let lines: Vec<Line> = if v.outbox.is_empty() {
        empty(if v.channel_calls {
            "no outbox row"
        } else {
            "no channel call in this model"
        })
    } else {
        v.outbox
            .iter()
            .map(|o| {
                let st = match o.status.as_str() {
                    "poisoned" => failed_style(),
                    "delivered" => ok_style(),
                    _ => Style::new().fg(Color::Yellow),
                };
                Line::from(vec![
                    Span::raw(format!("{} #{} ", o.node, o.attempt)),
                    Span::styled(o.status.clone(), st),
                    Span::raw(format!(" ×{} ", o.deliveries)),
                    Span::styled(o.idempotency_key.clone(), dim()),
                ])
            })
            .collect()
    };
    let n = v.outbox.len();
    lines_panel(
        f,
        area,
        block(Panel::Outbox, ctx, count(n)),
        lines,
        ctx.scroll,
        false,
    );
}

pub fn correlations(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let lines: Vec<Line> = if v.correlations.is_empty() {
        empty("no correlation")
    } else {
        v.correlations
            .iter()
            .map(|c| {
                Line::from(vec![
                    Span::raw(format!("{} ", c.node)),
                    Span::styled(c.state.clone(), Style::new().fg(Color::Cyan)),
                    Span::styled(format!(" {}", c.key), dim()),
                ])
            })
            .collect()
    };
    let n = v.correlations.len();
    lines_panel(
        f,
        area,
        block(Panel::Correlations, ctx, count(n)),
        lines,
        ctx.scroll,
        false,
    );
}

pub fn incidents(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let lines: Vec<Line> = if v.incidents.is_empty() {
        empty("no incident")
    } else {
        v.incidents
            .iter()
            .map(|i| {
                let st = if i.open { failed_style() } else { dim() };
                Line::from(vec![
                    Span::styled(
                        format!("{} {} ", if i.open { "open" } else { "closed" }, i.kind),
                        st,
                    ),
                    Span::raw(format!("{} {} ", i.node, fmt::at(i.opened_at_ms))),
                    Span::styled(i.message.clone(), dim()),
                ])
            })
            .collect()
    };
    let open = v.incidents.iter().filter(|i| i.open).count();
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
