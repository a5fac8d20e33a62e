//! Drawing: one module per panel, and the layout that decides which panels
//! fit. Every panel draws from the [`View`] alone.
//!
//! Three layouts, chosen by size: *full* (every panel, from 100×26), *compact*
//! (process and schedule, plus the focused panel, from 60×15) and *tiny*
//! (only the focused panel). Anything smaller draws what fits and never
//! panics: ratatui clips to the buffer, and every rectangle here is computed
//! with saturating arithmetic. With the diagram on, the process panel gets
//! the room: the top row's larger part in *full* (the snapshot joins the
//! small panels), the whole top half in *compact*.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph};
use ratatui::Frame;

use crate::app::{App, Panel, Screen};
use crate::view::View;

mod diagram;
mod fleet;
mod footer;
mod help;
mod history;
mod incident;
mod list;
mod process;
mod prompt;
mod schedule;
mod snapshot;
mod status;
mod tables;

/// Where everything goes for one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Areas {
    pub status: Rect,
    pub body: Rect,
    pub report: Option<Rect>,
    pub footer: Option<Rect>,
    pub panels: Vec<(Panel, Rect)>,
}

/// The layout for a terminal of this size with this panel focused.
pub fn areas(area: Rect, focus: Panel) -> Areas {
    layout(area, focus, false)
}

/// The layout, with the process panel drawing the diagram or the list.
pub fn layout(area: Rect, focus: Panel, diagram: bool) -> Areas {
    let h = area.height;
    let status = Rect {
        height: h.min(1),
        ..area
    };
    let footer_rows = if h >= 12 {
        2
    } else if h >= 3 {
        1
    } else {
        0
    };
    let body = Rect {
        y: area.y + status.height,
        height: h.saturating_sub(status.height + footer_rows),
        ..area
    };
    let bottom = |row: u16| Rect {
        y: area.y + h - row,
        height: 1,
        ..area
    };
    let (report, footer) = match footer_rows {
        2 => (Some(bottom(2)), Some(bottom(1))),
        1 => (None, Some(bottom(1))),
        _ => (None, None),
    };
    let panels = if body.height == 0 || body.width == 0 {
        Vec::new()
    } else if area.width >= 100 && area.height >= 26 {
        if diagram {
            full_diagram(body)
        } else {
            full(body)
        }
    } else if area.width >= 60 && area.height >= 15 {
        if diagram {
            compact_diagram(body, focus)
        } else {
            compact(body, focus)
        }
    } else {
        vec![(focus, body)]
    };
    Areas {
        status,
        body,
        report,
        footer,
        panels,
    }
}

fn full(body: Rect) -> Vec<(Panel, Rect)> {
    let [top, mid, hist] = Layout::vertical([
        Constraint::Fill(3),
        Constraint::Length(6),
        Constraint::Fill(2),
    ])
    .areas(body);
    let [process, snapshot, schedule] = Layout::horizontal([
        Constraint::Length(32),
        Constraint::Fill(4),
        Constraint::Fill(5),
    ])
    .areas(top);
    let [timers, outbox, corr, inc] = Layout::horizontal([Constraint::Fill(1); 4]).areas(mid);
    vec![
        (Panel::Process, process),
        (Panel::Schedule, schedule),
        (Panel::Snapshot, snapshot),
        (Panel::Timers, timers),
        (Panel::Outbox, outbox),
        (Panel::Correlations, corr),
        (Panel::Incidents, inc),
        (Panel::History, hist),
    ]
}

fn full_diagram(body: Rect) -> Vec<(Panel, Rect)> {
    let [top, mid, hist] = Layout::vertical([
        Constraint::Fill(3),
        Constraint::Length(6),
        Constraint::Fill(2),
    ])
    .areas(body);
    let [process, schedule] =
        Layout::horizontal([Constraint::Fill(3), Constraint::Fill(2)]).areas(top);
    let [snapshot, timers, outbox, corr, inc] =
        Layout::horizontal([Constraint::Fill(1); 5]).areas(mid);
    vec![
        (Panel::Process, process),
        (Panel::Schedule, schedule),
        (Panel::Snapshot, snapshot),
        (Panel::Timers, timers),
        (Panel::Outbox, outbox),
        (Panel::Correlations, corr),
        (Panel::Incidents, inc),
        (Panel::History, hist),
    ]
}

fn compact_diagram(body: Rect, focus: Panel) -> Vec<(Panel, Rect)> {
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Fill(1)]).areas(body);
    let lower = match focus {
        Panel::Process => Panel::Schedule,
        other => other,
    };
    vec![(Panel::Process, top), (lower, bottom)]
}

fn compact(body: Rect, focus: Panel) -> Vec<(Panel, Rect)> {
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Fill(1)]).areas(body);
    let [process, schedule] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Fill(1)]).areas(top);
    let lower = match focus {
        Panel::Process | Panel::Schedule => Panel::History,
        other => other,
    };
    vec![
        (Panel::Process, process),
        (Panel::Schedule, schedule),
        (lower, bottom),
    ]
}

/// Draw one frame.
pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let a = layout(area, app.focus, app.diagram);
    status::render(f, a.status, app);
    if let Some(r) = a.report {
        footer::render_report(f, r, app);
    }
    if let Some(r) = a.footer {
        footer::render(f, r, app);
    }
    match (app.screen, &app.view) {
        (Screen::List, _) => list::render(f, a.body, app),
        (Screen::Instance, Some(view)) => {
            let collapsed = a.panels.len() < Panel::ALL.len();
            // The panels that always show in a collapsed layout.
            let fixed = |p: Panel| p == Panel::Process || (!app.diagram && p == Panel::Schedule);
            for (panel, rect) in &a.panels {
                let ctx = Ctx {
                    view,
                    focused: *panel == app.focus,
                    scroll: app.scroll(*panel),
                    tabs: collapsed && !fixed(*panel) || a.panels.len() == 1,
                    diagram: app.diagram,
                    pan: app.pan,
                    pan_room: &app.pan_room,
                };
                render_panel(f, *rect, *panel, &ctx);
            }
        }
        (Screen::Instance, None) => {
            let p = Paragraph::new("no instance loaded").style(dim());
            f.render_widget(p, a.body);
        }
    }
    if let Some(p) = &app.prompt {
        prompt::render(f, area, p);
    }
    if app.incident && app.screen == Screen::Instance {
        incident::render(f, area, app);
    }
    if app.help {
        help::render(f, area, app);
    }
}

/// What a panel draws from.
pub struct Ctx<'a> {
    pub view: &'a View,
    pub focused: bool,
    pub scroll: u16,
    /// The panel stands in for hidden ones: its title says `tab` shows more.
    pub tabs: bool,
    /// The process panel draws the diagram, panned this far.
    pub diagram: bool,
    pub pan: (i32, i32),
    /// Where the diagram records how far it can pan.
    pub pan_room: &'a std::cell::Cell<crate::app::PanRoom>,
}

fn render_panel(f: &mut Frame, area: Rect, panel: Panel, ctx: &Ctx) {
    match panel {
        Panel::Process => process_panel(f, area, ctx),
        Panel::Schedule => schedule::render(f, area, ctx),
        Panel::Snapshot => snapshot::render(f, area, ctx),
        Panel::Timers => tables::timers(f, area, ctx),
        Panel::Outbox => tables::outbox(f, area, ctx),
        Panel::Correlations => tables::correlations(f, area, ctx),
        Panel::Incidents => tables::incidents(f, area, ctx),
        Panel::History => history::render(f, area, ctx),
    }
}

/// The process panel: the diagram when it is on and fits, else the list
/// (saying why when the diagram was asked for).
fn process_panel(f: &mut Frame, area: Rect, ctx: &Ctx) {
    if !ctx.diagram {
        return process::render(f, area, ctx, "");
    }
    ctx.pan_room.set(crate::app::PanRoom::default());
    match &ctx.view.diagram {
        Some((d, state)) if diagram::fits(area) => diagram::render(f, area, ctx, d, state),
        Some(_) => process::render(f, area, ctx, "too small for the diagram"),
        None => process::render(f, area, ctx, "no diagram"),
    }
}

/// A panel's frame: the title (with a count), a heavier border when focused.
pub fn block<'a>(panel: Panel, ctx: &Ctx, extra: impl Into<String>) -> Block<'a> {
    let extra = extra.into();
    let mut title = format!(" {} ", panel.title());
    if !extra.is_empty() {
        title = format!(" {} · {extra} ", panel.title());
    }
    if ctx.tabs {
        title.push_str("‹tab› ");
    }
    let (style, kind) = if ctx.focused {
        (Style::new().fg(Color::Cyan), BorderType::Thick)
    } else {
        (Style::new().fg(Color::DarkGray), BorderType::Plain)
    };
    Block::bordered()
        .border_type(kind)
        .border_style(style)
        .title(Span::styled(
            title,
            Style::new().add_modifier(Modifier::BOLD),
        ))
}

/// Draw lines in a bordered panel, scrolled by `scroll` (clamped so the last
/// line stays in view). `tail`: offset counts from the end (history follows
/// the newest decision).
pub fn lines_panel(
    f: &mut Frame,
    area: Rect,
    block: Block,
    lines: Vec<Line>,
    scroll: u16,
    tail: bool,
) {
    let inner = block.inner(area);
    let visible = inner.height as usize;
    let max_off = lines.len().saturating_sub(visible);
    let off = if tail {
        max_off.saturating_sub(scroll as usize)
    } else {
        (scroll as usize).min(max_off)
    };
    let width = inner.width as usize;
    let shown: Vec<Line> = lines
        .into_iter()
        .skip(off)
        .take(visible.max(1))
        .map(|l| clip_line(l, width))
        .collect();
    f.render_widget(Paragraph::new(shown).block(block), area);
}

/// A line cut to `width` cells, the cut marked with `…` in the style of the
/// span it falls in: a reader sees that there is more (and where to read it:
/// the incident detail, `qflow show`), never a silently shortened word.
pub fn clip_line(line: Line<'_>, width: usize) -> Line<'_> {
    if line.width() <= width {
        return line;
    }
    let Line {
        spans,
        style,
        alignment,
    } = line;
    let mut out = Vec::with_capacity(spans.len());
    let mut room = width.saturating_sub(1); // the ellipsis takes one cell
    for span in spans {
        let w = span.width();
        if w <= room {
            room -= w;
            out.push(span);
            continue;
        }
        let mut cut = String::new();
        for ch in span.content.chars() {
            let cw = unicode_width(ch.encode_utf8(&mut [0; 4]));
            if cw > room {
                break;
            }
            room -= cw;
            cut.push(ch);
        }
        cut.push('…');
        out.push(Span::styled(cut, span.style));
        break;
    }
    if width == 0 {
        out.clear();
    }
    Line {
        spans: out,
        style,
        alignment,
    }
}

pub fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// The style that marks retry state: `attempts.*` counters and schedule.
pub fn attempts_style() -> Style {
    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
}

/// The style of the backoff-window marker.
pub fn backoff_style() -> Style {
    Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD)
}

pub fn failed_style() -> Style {
    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
}

pub fn ok_style() -> Style {
    Style::new().fg(Color::Green)
}

/// A centered rectangle of at most `w`×`h` inside `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// Draw one frame off-screen and return it as text, one line per row with
/// trailing spaces cut: what golden frames and `--frame` print.
pub fn render_text(app: &App, width: u16, height: u16) -> String {
    use ratatui::backend::TestBackend;
    let mut term = ratatui::Terminal::new(TestBackend::new(width, height))
        .expect("a TestBackend terminal cannot fail to start");
    term.draw(|f| draw(f, app))
        .expect("drawing to a TestBackend cannot fail");
    buffer_text(term.backend().buffer())
}

/// A buffer's symbols as lines of text (trailing spaces cut).
pub fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.y..area.y + area.height {
        let mut line = String::new();
        let mut skip = 0usize;
        for x in area.x..area.x + area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            line.push_str(sym);
            // A wide symbol covers the next cell(s).
            let w = unicode_width(sym);
            skip = w.saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn unicode_width(s: &str) -> usize {
    ratatui::text::Span::raw(s).width().max(1)
}
