//! A prompt: numbered choices, and a text field when `custom…` is picked.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};
use ratatui::Frame;

use super::{centered, dim, failed_style};
use crate::app::Prompt;

pub(super) fn render(f: &mut Frame, area: Rect, p: &Prompt) {
    let mut lines: Vec<Line> = Vec::new();
    for n in &p.notes {
        lines.push(Line::raw(n.clone()));
    }
    if !p.notes.is_empty() {
        lines.push(Line::raw(""));
    }
    for (i, c) in p.choices.iter().enumerate() {
        let sel = i == p.selected && p.input.is_none();
        let style = if sel {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
        };
        let mut spans = vec![Span::styled(
            format!("{} {} {}", if sel { "▸" } else { " " }, i + 1, c.label),
            style,
        )];
        if !c.hint.is_empty() {
            spans.push(Span::styled(format!("  {}", c.hint), dim()));
        }
        lines.push(Line::from(spans));
    }
    if let Some(text) = &p.input {
        lines.push(Line::from(vec![
            Span::styled(format!("{}: ", p.input_label), dim()),
            Span::styled(format!("{text}▏"), Style::new().fg(Color::Yellow)),
        ]));
    }
    if let Some(e) = &p.error {
        lines.push(Line::styled(e.clone(), failed_style()));
    }
    let hint = if p.input.is_some() {
        "type · enter ok · esc back"
    } else {
        "↑↓ or 1-9 select · enter ok · esc cancel"
    };
    lines.push(Line::styled(hint, dim()));
    let w = lines
        .iter()
        .map(|l| l.width())
        .max()
        .unwrap_or(20)
        .max(p.title.chars().count() + 4) as u16
        + 4;
    let r = centered(area, w, lines.len() as u16 + 2);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(Style::new().fg(Color::Yellow))
        .title(format!(" {} ", p.title));
    f.render_widget(Clear, r);
    f.render_widget(Paragraph::new(lines).block(block), r);
}
