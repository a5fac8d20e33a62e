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

pub fn render(f: &mut Frame, area: Rect, app: &App) {
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
        let h = (app.deployments.len() as u16 + 2).min(area.height / 2);
        let top = Rect { height: h, ..area };
        deployments(f, top, app);
        Rect {
            y: area.y + h,
            height: area.height.saturating_sub(h),
            ..area
        }
    };
    let block = Block::bordered().title(" Instances · enter opens ");
    let inner_h = block.inner(area).height as usize;
    let mut lines: Vec<Line> = Vec::new();
    if app.list.is_empty() {
        lines.push(Line::styled("this database holds no instance", dim()));
    }
    let id_w = app
        .list
        .iter()
        .map(|r| r.id.chars().count())
        .max()
        .unwrap_or(2)
        .min(30);
    for (i, r) in app.list.iter().enumerate() {
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
    let off = app.list_selected.saturating_sub(inner_h.saturating_sub(1));
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

fn deployments(f: &mut Frame, area: Rect, app: &App) {
    let block = Block::bordered().title(" Deployments ");
    let model_w = app
        .deployments
        .iter()
        .map(|d| d.model.as_deref().unwrap_or("(by a run)").chars().count())
        .max()
        .unwrap_or(4)
        .min(40);
    let lines: Vec<Line> = app
        .deployments
        .iter()
        .map(|d| {
            let model = d.model.as_deref().unwrap_or("(by a run)");
            let retired = if d.retired {
                Span::styled("retired", dim())
            } else {
                Span::styled("active", ok_style())
            };
            Line::from(vec![
                Span::raw(format!("  {:<4}", d.id)),
                Span::raw(format!("{:<8}  ", fmt::clip(&d.process, 20))),
                Span::raw(format!("{:<model_w$}  ", fmt::clip(model, model_w))),
                Span::styled(format!("{}  ", d.hash), dim()),
                retired,
                Span::raw(format!("  {}", d.instances)),
            ])
        })
        .collect();
    let width = block.inner(area).width as usize;
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| super::clip_line(l, width))
        .collect();
    f.render_widget(Paragraph::new(lines).block(block), area);
}
