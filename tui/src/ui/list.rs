//! The operating view of an attached database: the fleet's observations
//! and attempts per minute (when the terminal is tall enough), its
//! deployments (instances by status, retired or not), then its instances,
//! FAILED first with code and reason, so the instance an operator came for
//! is on top.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

use super::{dim, failed_style, ok_style};
use crate::app::App;
use crate::fmt;
use crate::view::{status_label, Status};

/// Below this height the fleet panel gives way to the lists.
const FLEET_MIN_HEIGHT: u16 = 24;

pub(super) fn render(f: &mut Frame, area: Rect, app: &App) {
    let area = match &app.fleet {
        Some(fleet) if area.height >= FLEET_MIN_HEIGHT => {
            let h = super::fleet::height(fleet).min(area.height / 2);
            super::fleet::render(f, Rect { height: h, ..area }, fleet);
            Rect {
                y: area.y + h,
                height: area.height - h,
                ..area
            }
        }
        _ => area,
    };
    let area = if app.deployments.is_empty() {
        area
    } else {
        // Its rows and the header.
        let h = (app.deployments.len() as u16 + 3).min(area.height / 2);
        let top = Rect { height: h, ..area };
        deployments(f, top, app);
        Rect {
            y: area.y + h,
            height: area.height.saturating_sub(h),
            ..area
        }
    };
    let visible = app.visible();
    let title = if app.filtering || !app.filter.is_empty() {
        format!(
            " Instances · /{}{} · {} of {} ",
            app.filter,
            if app.filtering { "▏" } else { "" },
            visible.len(),
            app.list.len()
        )
    } else {
        format!(" Instances · {} · enter opens · / filters ", app.list.len())
    };
    let block = Block::bordered().title(title);
    let inner_h = block.inner(area).height as usize;
    app.list_page.set(inner_h.max(1));
    let mut lines: Vec<Line> = Vec::new();
    if app.list.is_empty() {
        lines.push(Line::styled("this database holds no instance", dim()));
    } else if visible.is_empty() {
        lines.push(Line::styled(
            "no instance holds every word of the filter · esc clears it",
            dim(),
        ));
    }
    let id_w = visible
        .iter()
        .map(|&i| app.list[i].id.chars().count())
        .max()
        .unwrap_or(2)
        .min(30);
    let at = visible
        .iter()
        .position(|&i| i == app.list_selected)
        .unwrap_or(0);
    for &i in &visible {
        let r = &app.list[i];
        let st = match r.status {
            Status::Failed => failed_style(),
            Status::Completed => ok_style(),
            _ => Style::new(),
        };
        let sel = i == app.list_selected;
        let row_style = if sel {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        };
        let mut detail = String::new();
        if let Some(c) = &r.code {
            detail.push_str(c);
        }
        if let Some(reason) = &r.reason {
            detail.push_str(&format!(" ({reason})"));
        }
        let mut spans = vec![
            Span::styled(if sel { "▸ " } else { "  " }, row_style),
            Span::styled(format!("{:<10}", status_label(r.status)), st),
            Span::styled(format!("{:<id_w$}  ", fmt::clip(&r.id, id_w)), row_style),
            Span::raw(format!("{:<9}", fmt::at(r.last_at_ms))),
            Span::styled(detail, st),
        ];
        // What holds it back, as `qflow instances` says it.
        if r.quarantined {
            spans.push(Span::styled(" quarantined", held_style()));
        }
        if !r.held_by.is_empty() {
            spans.push(Span::styled(
                format!(" held by paused {}", r.held_by.join(" and ")),
                held_style(),
            ));
        }
        lines.push(Line::from(spans));
    }
    let off = at.saturating_sub(inner_h.saturating_sub(1));
    let width = block.inner(area).width as usize;
    let shown: Vec<Line> = lines
        .into_iter()
        .skip(off)
        .map(|l| super::clip_line(l, width))
        .collect();
    f.render_widget(Paragraph::new(shown).block(block), area);
}

fn held_style() -> Style {
    Style::new().fg(ratatui::style::Color::Magenta)
}

/// The deployments as a table: a header, then one row each, every column
/// as wide as its widest cell (the process and the model clipped to 24
/// and 40), so the columns line up whatever the names.
fn deployments(f: &mut Frame, area: Rect, app: &App) {
    let block = Block::bordered().title(" Deployments ");
    let model_of = |d: &crate::view::DeploymentRowView| {
        d.model.clone().unwrap_or_else(|| "(by a run)".to_string())
    };
    let width_of = |header: &str, cells: Vec<usize>, most: usize| {
        cells
            .into_iter()
            .chain([header.chars().count()])
            .max()
            .unwrap_or(0)
            .min(most)
    };
    let ds = &app.deployments;
    let id_w = width_of("id", ds.iter().map(|d| d.id.to_string().len()).collect(), 8);
    let process_w = width_of(
        "process",
        ds.iter().map(|d| d.process.chars().count()).collect(),
        24,
    );
    let model_w = width_of(
        "model",
        ds.iter().map(|d| model_of(d).chars().count()).collect(),
        40,
    );
    let hash_w = width_of(
        "hash",
        ds.iter().map(|d| d.hash.chars().count()).collect(),
        12,
    );
    let mut lines: Vec<Line> = vec![Line::styled(
        format!(
            "  {:<id_w$}  {:<process_w$}  {:<model_w$}  {:<hash_w$}  {:<7}  instances",
            "id", "process", "model", "hash", "state"
        ),
        dim().add_modifier(Modifier::UNDERLINED),
    )];
    lines.extend(ds.iter().map(|d| {
        let retired = if d.retired {
            Span::styled(format!("{:<7}", "retired"), dim())
        } else {
            Span::styled(format!("{:<7}", "active"), ok_style())
        };
        Line::from(vec![
            Span::raw(format!("  {:<id_w$}  ", d.id)),
            Span::raw(format!(
                "{:<process_w$}  ",
                fmt::clip(&d.process, process_w)
            )),
            Span::raw(format!("{:<model_w$}  ", fmt::clip(&model_of(d), model_w))),
            Span::styled(format!("{:<hash_w$}  ", d.hash), dim()),
            retired,
            Span::raw(format!("  {}", d.instances)),
        ])
    }));
    let width = block.inner(area).width as usize;
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| super::clip_line(l, width))
        .collect();
    f.render_widget(Paragraph::new(lines).block(block), area);
}
