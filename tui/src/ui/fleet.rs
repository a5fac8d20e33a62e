//! The operating view of an attached database: the fleet's observations on
//! the left, attempts per minute of the store's time on the right (one
//! column per minute, the latest minutes that saw an attempt).

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Sparkline};
use ratatui::Frame;

use super::dim;
use crate::fmt;
use crate::view::FleetView;

/// The panel's height for these observations (borders included).
pub(super) fn height(fleet: &FleetView) -> u16 {
    fleet.observations.len() as u16 + 2
}

pub(super) fn render(f: &mut Frame, area: Rect, fleet: &FleetView) {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(65), Constraint::Percentage(35)]).areas(area);
    let block = Block::bordered().title(" Fleet ");
    let width = block.inner(left).width as usize;
    let label_w = fleet
        .observations
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let lines: Vec<Line> = fleet
        .observations
        .iter()
        .map(|(k, v)| {
            super::clip_line(
                Line::from(vec![
                    Span::styled(format!("{k:<label_w$}  "), dim()),
                    Span::raw(v.clone()),
                ]),
                width,
            )
        })
        .collect();
    f.render_widget(Paragraph::new(lines).block(block), left);

    let block = Block::bordered();
    let fit = block.inner(right).width.max(1) as i64;
    let (Some(&(first, _)), Some(&(last, _))) = (fleet.per_minute.first(), fleet.per_minute.last())
    else {
        f.render_widget(
            Paragraph::new(Line::styled("no attempts yet", dim()))
                .block(block.title(" Attempts/min ")),
            right,
        );
        return;
    };
    // From the first minute to the last, one column per span of minutes
    // (its busiest minute), so gaps in time are gaps in the chart.
    let span = last - first + 1;
    let per = (span + fit - 1) / fit;
    let mut data = vec![0u64; ((span + per - 1) / per) as usize];
    for (m, n) in &fleet.per_minute {
        let i = ((m - first) / per) as usize;
        data[i] = data[i].max(*n);
    }
    let peak = data.iter().copied().max().unwrap_or(0);
    let each = if per > 1 {
        format!(" · {per}m/col")
    } else {
        String::new()
    };
    let title = format!(" Attempts/min · peak {} ", qflow_engine::text::group(peak));
    let range = format!(
        " {}..{}{each} ",
        fmt::at(first * 60_000),
        fmt::at(last * 60_000)
    );
    f.render_widget(
        Sparkline::default()
            .block(block.title(title).title_bottom(range))
            .data(&data)
            .style(Style::new()),
        right,
    );
}
