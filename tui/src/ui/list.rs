//! The instance list of an attached database: FAILED first, with code and
//! reason, so the instance an operator came for is on top.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

use super::{dim, failed_style, ok_style};
use crate::app::App;
use crate::fmt;
use crate::view::{status_label, Status};

pub fn render(f: &mut Frame, area: Rect, app: &App) {
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
        lines.push(Line::from(vec![
            Span::styled(if sel { "▸ " } else { "  " }, row_style),
            Span::styled(format!("{:<10}", status_label(r.status)), st),
            Span::styled(format!("{:<id_w$}  ", fmt::clip(&r.id, id_w)), row_style),
            Span::raw(format!("{:<9}", fmt::at(r.last_at_ms))),
            Span::styled(detail, st),
        ]));
    }
    let off = app.list_selected.saturating_sub(inner_h.saturating_sub(1));
    let shown: Vec<Line> = lines.into_iter().skip(off).collect();
    f.render_widget(Paragraph::new(shown).block(block), area);
}
