//! The schedule chart: the attempts so far (with their outcome) and those the
//! policy still plans, on a square-root time axis (so a 1-minute retry and a
//! 10-hour one are both visible), with virtual now and the `maxElapsed` budget.

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{attempts_style, block, dim, failed_style, lines_panel, ok_style, Ctx};
use crate::app::Panel;
use crate::fmt;
use crate::view::{AttemptResult, SchedulePlan};

pub(super) fn render(f: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let width = area.width.saturating_sub(2) as usize;
    let Some(s) = v.schedule() else {
        let lines = vec![Line::styled("no task with a retry policy", dim())];
        lines_panel(
            f,
            area,
            block(Panel::Schedule, ctx, ""),
            lines,
            ctx.scroll,
            false,
        );
        return;
    };
    let mut lines: Vec<Line> = Vec::new();
    lines.push(Line::styled(s.policy.clone(), dim()));
    if let Some(fail) = v.failed() {
        lines.push(Line::styled(
            format!("FAILED {} · {}", fail.code, fail.reason),
            failed_style(),
        ));
    }
    let (axis, labels) = timeline(s, v.now_ms, width);
    lines.push(axis);
    lines.push(labels);
    for a in &s.done {
        let (mark, text, style) = match &a.result {
            AttemptResult::Failed { code, class } => (
                "✗",
                format!("{code} {class}").trim_end().to_string(),
                failed_style(),
            ),
            AttemptResult::Succeeded => ("✓", "succeeded".to_string(), ok_style()),
            AttemptResult::Pending => (
                "?",
                "outcome pending".to_string(),
                Style::new().fg(Color::Magenta),
            ),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("#{:<2}", a.n), attempts_style()),
            Span::raw(format!("{:<8}", fmt::at(a.at_ms))),
            Span::styled(format!("{mark} {text}"), style),
        ]));
    }
    for p in &s.planned {
        lines.push(Line::from(vec![
            Span::styled(format!("#{:<2}", p.n), dim()),
            Span::raw(format!("{:<8}", fmt::at(p.at_ms))),
            Span::styled(format!("· {}", fmt::until(p.at_ms, v.now_ms)), dim()),
        ]));
    }
    lines.push(Line::styled(budget(s, v.now_ms), dim()));
    // What the budget has counted, carried attempts included: the runtime
    // numbers the next attempt from it.
    let used = s.used as usize;
    let title = match s.max_attempts {
        Some(m) => format!(
            "{} · {used}/{}",
            s.node,
            fmt::count(m as usize, "attempt", "attempts")
        ),
        None => format!("{} · {}", s.node, fmt::count(used, "attempt", "attempts")),
    };
    lines_panel(
        f,
        area,
        block(Panel::Schedule, ctx, title),
        lines,
        ctx.scroll,
        false,
    );
}

/// Where the budget runs out on the time axis, if it does.
fn budget_end_ms(s: &SchedulePlan) -> Option<i64> {
    Some(s.first_at_ms.unwrap_or(0) + s.max_elapsed_ms?)
}

fn budget(s: &SchedulePlan, now_ms: i64) -> String {
    let line = budget_limit(s, now_ms);
    if s.carried > 0 {
        format!("{line} · {} burned (carried)", s.carried)
    } else {
        line
    }
}

fn budget_limit(s: &SchedulePlan, now_ms: i64) -> String {
    match (budget_end_ms(s), s.max_elapsed_ms) {
        (Some(end), Some(e)) => format!(
            "budget: maxElapsed {} → ends {} ({})",
            fmt::span(e),
            fmt::at(end),
            fmt::until(end, now_ms)
        ),
        _ => match s.max_attempts {
            Some(m) => format!(
                "budget: {}, no maxElapsed",
                fmt::count(m as usize, "attempt", "attempts")
            ),
            None => "budget: maxElapsed only".to_string(),
        },
    }
}

/// Two lines: the axis with a mark per attempt, and the labels under it
/// (origin, `▲` at now, the axis end).
fn timeline(s: &SchedulePlan, now_ms: i64, width: usize) -> (Line<'static>, Line<'static>) {
    if width < 4 {
        return (Line::default(), Line::default());
    }
    let last_attempt = s
        .done
        .iter()
        .map(|a| a.at_ms)
        .chain(s.planned.iter().map(|p| p.at_ms))
        .max()
        .unwrap_or(0);
    let mut end = last_attempt.max(now_ms).max(1);
    let budget = budget_end_ms(s);
    if let Some(b) = budget {
        // Show the budget's end when it is on the same scale as the attempts.
        if b <= end.saturating_mul(2) {
            end = end.max(b);
        }
    }
    let pos = |t: i64| -> usize {
        let frac = (t.max(0) as f64 / end as f64).sqrt().min(1.0);
        (frac * (width - 1) as f64).round() as usize
    };
    let mut cells: Vec<(char, Style)> = vec![('─', dim()); width];
    cells[0] = ('├', dim());
    cells[width - 1] = ('┤', dim());
    if let Some(b) = budget.filter(|b| *b <= end) {
        cells[pos(b)] = ('┃', Style::new().fg(Color::Red));
    }
    for p in &s.planned {
        cells[pos(p.at_ms)] = ('·', Style::new().fg(Color::White));
    }
    for a in &s.done {
        cells[pos(a.at_ms)] = match a.result {
            AttemptResult::Failed { .. } => ('✗', failed_style()),
            AttemptResult::Succeeded => ('✓', ok_style()),
            AttemptResult::Pending => ('?', Style::new().fg(Color::Magenta)),
        };
    }
    let axis = Line::from(
        cells
            .into_iter()
            .map(|(c, st)| Span::styled(c.to_string(), st))
            .collect::<Vec<_>>(),
    );
    let mut label: Vec<char> = vec![' '; width];
    let put = |label: &mut Vec<char>, at: usize, text: &str| {
        for (i, c) in text.chars().enumerate() {
            if let Some(slot) = label.get_mut(at + i) {
                *slot = c;
            }
        }
    };
    put(&mut label, 0, "0");
    let end_text = if budget.is_some_and(|b| b > end) {
        format!(
            "{} → budget {}",
            fmt::span(end),
            fmt::span(budget.unwrap_or(0))
        )
    } else if last_attempt > 0 || now_ms > 0 {
        fmt::span(end)
    } else {
        // Everything happened at the origin: no axis end to name.
        String::new()
    };
    let now_at = pos(now_ms);
    let (now_start, now_text) = if now_at + 4 <= width {
        (now_at, "▲now")
    } else {
        (now_at.saturating_sub(3), "now▲")
    };
    let end_len = end_text.chars().count();
    let mut end_at = width.saturating_sub(end_len);
    if now_start + 4 > end_at {
        // Now sits at the axis end: the end's label goes left of now's.
        end_at = now_start.saturating_sub(end_len + 1);
    }
    if end_at >= 2 {
        put(&mut label, end_at, &end_text);
    }
    put(&mut label, now_start, now_text);
    let labels: String = label.into_iter().collect();
    (axis, Line::styled(labels, Style::new().fg(Color::Cyan)))
}
