//! The process panel as a diagram: the engine's [`Diagram`] (the model's
//! own drawing, or the engine's layered layout) scaled to terminal cells,
//! with the instance's state from the engine's [`DiagramState`] on it. The
//! panel only draws: tasks and calls as boxes with their symbol, name, state
//! note (`parked until +35s`, `FAILED q.timeout`) and attempts burned;
//! events and gateways as marks with their name below; flows as lines with
//! arrows, the taken ones green, a gateway's conditions and default named
//! on them. It follows the current node; `h`/`l` and `j`/`k` pan. A panel
//! too small for it lists the nodes instead.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::Widget;
use ratatui::Frame;

use qflow_engine::diagram::{
    Diagram, DiagramFlow, DiagramNode, DiagramState, FlowMark, MarkClass, NodeMark, ShapeKind,
};

use super::{block, dim, failed_style, ok_style, Ctx};
use crate::app::{PanRoom, Panel};
use crate::fmt::clip;

/// Cells per diagram unit across: the drawing fits the panel when it can,
/// but a task (100 units) is never narrower than 15 cells (its symbol and
/// a short name) nor wider than 20.
const SX_MIN: f64 = 0.15;
const SX_MAX: f64 = 0.2;
/// Rows per diagram unit: a task (80 units) keeps 4 rows (border, name,
/// state, border), at most 6.
const SY_MIN: f64 = 0.05;
const SY_MAX: f64 = 0.075;
/// The smallest inside of the panel the diagram is drawn in; below it the
/// panel lists the nodes.
pub(super) const MIN_W: u16 = 24;
pub(super) const MIN_H: u16 = 6;

/// Whether a panel of this size (border included) can show the diagram.
pub(super) fn fits(area: Rect) -> bool {
    area.width >= MIN_W + 2 && area.height >= MIN_H + 2
}

pub(super) fn render(
    f: &mut Frame,
    area: Rect,
    ctx: &Ctx,
    diagram: &Diagram,
    state: &DiagramState,
) {
    let inner = Rect {
        x: area.x + 1,
        y: area.y + 1,
        width: area.width.saturating_sub(2),
        height: area.height.saturating_sub(2),
    };
    let sx = (inner.width as f64 / diagram.width.max(1.0)).clamp(SX_MIN, SX_MAX);
    let sy = (inner.height as f64 / diagram.height.max(1.0)).clamp(SY_MIN, SY_MAX);
    let scale = Scale { sx, sy };
    let shapes: Vec<Shape> = diagram.nodes.iter().map(|n| Shape::of(n, &scale)).collect();
    let size = (
        scale.x(diagram.width).max(1),
        scale.y(diagram.height).max(1),
    );
    let current = ctx.view.inspection.current.as_deref();
    let focus = current
        .and_then(|c| shapes.iter().find(|s| s.id == c))
        .map(|s| s.center());
    let (origin, room) = viewport(size, (inner.width, inner.height), focus, ctx.pan);
    ctx.pan_room.set(room);
    let overflows = size.0 > inner.width as i32 || size.1 > inner.height as i32;
    let title = if overflows {
        "diagram · h/l j/k pan"
    } else {
        "diagram"
    };
    block(Panel::Process, ctx, title).render(area, f.buffer_mut());
    let mut c = Canvas {
        buf: f.buffer_mut(),
        area: inner,
        ox: origin.0,
        oy: origin.1,
    };
    // Lines first, merged where flows meet (corners, junctions, crossings),
    // then each flow's arrow and label on top.
    let routes: Vec<(&DiagramFlow, Route, bool)> = diagram
        .flows
        .iter()
        .map(|fl| (fl, route(fl, &scale), state.taken.contains(&fl.id)))
        .collect();
    let mut lines = Lines::default();
    for (_, pts, taken) in &routes {
        lines.add(pts, *taken);
    }
    lines.draw(&mut c);
    for (fl, pts, taken) in &routes {
        let target = shapes.iter().find(|s| s.id == fl.target);
        arrow_and_label(&mut c, fl, pts, *taken, target);
    }
    // Boundary events last: they sit on their task's border.
    let (boundaries, plain): (Vec<_>, Vec<_>) = diagram
        .nodes
        .iter()
        .zip(&shapes)
        .partition(|(n, _)| n.kind == ShapeKind::Boundary);
    let nodes: Vec<(&DiagramNode, &Shape)> = plain.into_iter().chain(boundaries).collect();
    // Names and notes before the shapes: they may cross a line, never a box.
    for (n, s) in &nodes {
        label(&mut c, n, s, state.nodes.get(&n.id));
    }
    for (n, s) in &nodes {
        let mark = state.nodes.get(&n.id);
        node(&mut c, n, s, mark, current == Some(n.id.as_str()));
    }
}

/// Where the panel's window onto the drawing starts, and how far it can
/// pan from there: centred on the current node, inside the drawing, moved
/// by the operator's pan.
fn viewport(
    size: (i32, i32),
    window: (u16, u16),
    focus: Option<(i32, i32)>,
    pan: (i32, i32),
) -> ((i32, i32), PanRoom) {
    let max_x = (size.0 - window.0 as i32).max(0);
    let max_y = (size.1 - window.1 as i32).max(0);
    let (fx, fy) = focus.map_or((0, 0), |(x, y)| {
        (
            (x - window.0 as i32 / 2).clamp(0, max_x),
            (y - window.1 as i32 / 2).clamp(0, max_y),
        )
    });
    let room = PanRoom {
        left: fx,
        right: max_x - fx,
        up: fy,
        down: max_y - fy,
    };
    let x = fx + pan.0.clamp(-room.left, room.right);
    let y = fy + pan.1.clamp(-room.up, room.down);
    ((x, y), room)
}

struct Scale {
    sx: f64,
    sy: f64,
}

impl Scale {
    fn x(&self, v: f64) -> i32 {
        (v * self.sx).round() as i32
    }

    fn y(&self, v: f64) -> i32 {
        (v * self.sy).round() as i32
    }
}

/// Where a node lands in cells: a box (tasks, calls, sub-processes), or a
/// three-cell mark centred on the node (events, gateways).
struct Shape {
    id: String,
    boxed: bool,
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl Shape {
    fn of(n: &DiagramNode, s: &Scale) -> Shape {
        let boxed = !n.kind.is_event() && !n.kind.is_gateway();
        let (x0, y0, x1, y1) = if boxed {
            let (x0, y0) = (s.x(n.rect.x), s.y(n.rect.y));
            let x1 = (s.x(n.rect.right()) - 1).max(x0 + 6);
            let y1 = (s.y(n.rect.bottom()) - 1).max(y0 + 3);
            (x0, y0, x1, y1)
        } else {
            let c = n.rect.center();
            let (cx, mut cy) = (s.x(c.x), s.y(c.y));
            if n.kind == ShapeKind::Boundary {
                // On its task's bottom border, which is the row above the
                // task's bottom edge.
                cy -= 1;
            }
            (cx - 1, cy, cx + 1, cy)
        };
        Shape {
            id: n.id.clone(),
            boxed,
            x0,
            y0,
            x1,
            y1,
        }
    }

    fn center(&self) -> (i32, i32) {
        ((self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2)
    }

    fn contains(&self, (x, y): (i32, i32)) -> bool {
        (self.x0..=self.x1).contains(&x) && (self.y0..=self.y1).contains(&y)
    }
}

/// The panel's inside, looking at the drawing from `(ox, oy)`.
struct Canvas<'a> {
    buf: &'a mut Buffer,
    area: Rect,
    ox: i32,
    oy: i32,
}

impl Canvas<'_> {
    fn cell(&mut self, x: i32, y: i32) -> Option<&mut ratatui::buffer::Cell> {
        let (cx, cy) = (x - self.ox, y - self.oy);
        let inside =
            cx >= 0 && cy >= 0 && cx < self.area.width as i32 && cy < self.area.height as i32;
        if !inside {
            return None;
        }
        Some(&mut self.buf[(self.area.x + cx as u16, self.area.y + cy as u16)])
    }

    fn symbol(&mut self, x: i32, y: i32) -> Option<String> {
        self.cell(x, y).map(|c| c.symbol().to_string())
    }

    fn put(&mut self, x: i32, y: i32, ch: char, style: Style) {
        if let Some(c) = self.cell(x, y) {
            c.set_char(ch);
            c.set_style(style);
        }
    }

    /// `text` centred on `cx`, cut as far as needed (to 4 characters) to
    /// fit between what is drawn already; left out when even that collides.
    /// (Outside the panel counts as room: the label is clipped there.)
    fn centred(&mut self, cx: i32, y: i32, text: &str, max: usize, style: Style) {
        let free = |s: String| matches!(s.as_str(), " " | "─" | "│" | "┼");
        for width in [max, 12, 8, 4] {
            let t = clip(text, width);
            let w = t.chars().count() as i32;
            let x = cx - w / 2;
            // A cell of room on each side keeps two labels apart.
            if (x - 1..=x + w).all(|x| self.symbol(x, y).is_none_or(free)) {
                self.text(x, y, &t, width, style, false);
                return;
            }
        }
    }

    /// `text` from `(x, y)` on, at most `max` characters; `over`: write over
    /// what is drawn there, else only into empty cells and across straight
    /// lines (never over a corner, an arrow or another label).
    fn text(&mut self, x: i32, y: i32, text: &str, max: usize, style: Style, over: bool) {
        for (i, ch) in text.chars().take(max).enumerate() {
            let x = x + i as i32;
            let free = |s: String| matches!(s.as_str(), " " | "─" | "│" | "┼");
            if over || self.symbol(x, y).is_some_and(free) {
                self.put(x, y, ch, style);
            }
        }
    }
}

/// A flow in cells: its end and bend points, from the source to the target.
type Route = Vec<(i32, i32)>;

/// A flow's route in cells: orthogonal runs through its points (a slanted
/// one goes across, then down).
fn route(f: &DiagramFlow, s: &Scale) -> Route {
    let mut pts: Vec<(i32, i32)> = Vec::new();
    for p in &f.points {
        let q = (s.x(p.x), s.y(p.y));
        if let Some(&last) = pts.last() {
            if last.0 != q.0 && last.1 != q.1 {
                pts.push((q.0, last.1));
            }
        }
        if pts.last() != Some(&q) {
            pts.push(q);
        }
    }
    pts
}

/// Which ways a line leaves a cell.
const N: u8 = 1;
const E: u8 = 2;
const S: u8 = 4;
const W: u8 = 8;

/// Every line cell with the ways lines leave it, and whether a taken flow
/// passes it: drawn at the end, so where flows meet the cell shows a
/// corner, a junction or a crossing.
#[derive(Default)]
struct Lines {
    cells: std::collections::BTreeMap<(i32, i32), (u8, bool)>,
}

impl Lines {
    fn arm(&mut self, at: (i32, i32), ways: u8, taken: bool) {
        let e = self.cells.entry(at).or_insert((0, false));
        e.0 |= ways;
        e.1 |= taken;
    }

    fn add(&mut self, pts: &[(i32, i32)], taken: bool) {
        for w in pts.windows(2) {
            let (a, b) = (w[0], w[1]);
            let d = dir(a, b);
            let (out, back) = match d {
                (1, _) => (E, W),
                (-1, _) => (W, E),
                (_, 1) => (S, N),
                _ => (N, S),
            };
            let mut p = a;
            while p != b {
                self.arm(p, out, taken);
                p = (p.0 + d.0, p.1 + d.1);
                self.arm(p, back, taken);
            }
        }
    }

    fn draw(&self, c: &mut Canvas) {
        for (&(x, y), &(ways, taken)) in &self.cells {
            let style = if taken {
                ok_style()
            } else {
                Style::new().fg(Color::DarkGray)
            };
            let ch = match ways {
                w if w == E | W || w == E || w == W => '─',
                w if w == N | S || w == N || w == S => '│',
                w if w == S | E => '┌',
                w if w == S | W => '┐',
                w if w == N | E => '└',
                w if w == N | W => '┘',
                w if w == N | S | E => '├',
                w if w == N | S | W => '┤',
                w if w == E | W | S => '┬',
                w if w == E | W | N => '┴',
                _ => '┼',
            };
            c.put(x, y, ch, style);
        }
    }
}

/// A flow's arrow, on the last cell of its line outside its target; a
/// default flow's slash near its source; its name, else its condition (or
/// `default`), above its first run across.
fn arrow_and_label(
    c: &mut Canvas,
    f: &DiagramFlow,
    pts: &[(i32, i32)],
    taken: bool,
    target: Option<&Shape>,
) {
    let style = if taken {
        ok_style()
    } else {
        Style::new().fg(Color::DarkGray)
    };
    let n = pts.len();
    if n < 2 {
        return;
    }
    let d = dir(pts[n - 2], pts[n - 1]);
    let mut tip = pts[n - 1];
    while target.is_some_and(|t| t.contains(tip)) && tip != pts[n - 2] {
        tip = (tip.0 - d.0, tip.1 - d.1);
    }
    let arrow = match d {
        (1, _) => '▶',
        (-1, _) => '◀',
        (_, 1) => '▼',
        _ => '▲',
    };
    c.put(tip.0, tip.1, arrow, style);
    if f.mark == FlowMark::Default {
        // BPMN's default mark: a slash across the flow near its source.
        let d = dir(pts[0], pts[1]);
        let len = (pts[1].0 - pts[0].0).abs() + (pts[1].1 - pts[0].1).abs();
        if len >= 3 {
            c.put(pts[0].0 + 2 * d.0, pts[0].1 + 2 * d.1, '/', style);
        }
    }
    let label = match (&f.name, &f.mark) {
        (Some(name), _) => name.clone(),
        (None, FlowMark::Condition(cond)) => cond.clone(),
        (None, FlowMark::Default) => "default".to_string(),
        (None, FlowMark::Plain) => return,
    };
    if let Some(w) = pts
        .windows(2)
        .find(|w| w[0].1 == w[1].1 && (w[0].0 - w[1].0).abs() >= 5)
    {
        let (x, len) = (w[0].0.min(w[1].0) + 2, (w[0].0 - w[1].0).abs() - 3);
        c.text(x, w[0].1 - 1, &label, len.max(0) as usize, style, false);
    }
}

fn dir(a: (i32, i32), b: (i32, i32)) -> (i32, i32) {
    ((b.0 - a.0).signum(), (b.1 - a.1).signum())
}

/// A state class's colour (the classes are the engine's, as in the SVG).
fn state_style(class: MarkClass) -> Style {
    match class {
        MarkClass::Token => Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        MarkClass::Parked => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        MarkClass::Timer | MarkClass::Waiting | MarkClass::Joined => Style::new().fg(Color::Blue),
        MarkClass::Reconcile => Style::new().fg(Color::Magenta),
        MarkClass::Failed => failed_style(),
        MarkClass::Done => ok_style(),
        MarkClass::Idle | MarkClass::Unknown => dim(),
    }
}

/// What is written around a node: an event's or gateway's name and note
/// below it (flow labels go above the lines); a box's note below it when
/// the box is too narrow for it, above it (boundary events sit below).
fn label(c: &mut Canvas, n: &DiagramNode, s: &Shape, mark: Option<&NodeMark>) {
    let style = state_style(mark.map_or(MarkClass::Idle, |m| m.class));
    let note = note(mark);
    if s.boxed {
        let inner = (s.x1 - s.x0 - 1).max(0) as usize;
        if note.chars().count() > inner {
            c.text(s.x0, s.y0 - 1, &note, 32, style, false);
        }
        return;
    }
    let (cx, cy) = s.center();
    c.centred(cx, cy + 1, n.name.as_deref().unwrap_or(&n.id), 16, dim());
    if !note.is_empty() {
        c.centred(cx, cy + 2, &note, 32, style);
    }
}

/// A state in a word, for a box too narrow for its note.
fn short_note(mark: Option<&NodeMark>) -> String {
    let Some(m) = mark else {
        return String::new();
    };
    let word = m.class.word();
    match m.attempts {
        Some(a) => format!("{word} ×{a}"),
        None => word.to_string(),
    }
}

/// What goes under a node's name: the engine's note and the attempts.
fn note(mark: Option<&NodeMark>) -> String {
    let Some(m) = mark else {
        return String::new();
    };
    let mut text = m.note.clone().unwrap_or_default();
    if let Some(a) = m.attempts {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&format!("×{a}"));
    }
    text
}

fn node(c: &mut Canvas, n: &DiagramNode, s: &Shape, mark: Option<&NodeMark>, current: bool) {
    let class = mark.map_or(MarkClass::Idle, |m| m.class);
    let mut style = state_style(class);
    if current {
        style = style.add_modifier(Modifier::BOLD);
    }
    let name = n.name.as_deref().unwrap_or(&n.id);
    if s.boxed {
        let inner = (s.x1 - s.x0 - 1).max(0) as usize;
        let mut note = note(mark);
        if note.chars().count() > inner {
            // The whole note is written under the box.
            note = short_note(mark);
        }
        boxed(
            c,
            n,
            s,
            style,
            current,
            class == MarkClass::Token,
            name,
            &note,
        );
    } else {
        let (cx, cy) = s.center();
        let (open, close) = if n.kind.is_gateway() {
            ('<', '>')
        } else {
            ('(', ')')
        };
        let sym = n.symbol().chars().next().unwrap_or('?');
        c.put(cx - 1, cy, open, style);
        c.put(cx, cy, sym, style);
        c.put(cx + 1, cy, close, style);
    }
    if mark.is_some_and(|m| m.incident) {
        c.put(s.x1, s.y0, '!', failed_style());
    }
}

/// A box with its border (heavy for the current node), the kind's symbol
/// and the name, the state note; a token's dot on the top border.
#[allow(clippy::too_many_arguments)]
fn boxed(
    c: &mut Canvas,
    n: &DiagramNode,
    s: &Shape,
    style: Style,
    current: bool,
    token: bool,
    name: &str,
    note: &str,
) {
    let [tl, tr, bl, br, h, v] = if current {
        ['┏', '┓', '┗', '┛', '━', '┃']
    } else {
        ['╭', '╮', '╰', '╯', '─', '│']
    };
    for x in s.x0 + 1..s.x1 {
        c.put(x, s.y0, h, style);
        c.put(x, s.y1, h, style);
    }
    for y in s.y0 + 1..s.y1 {
        c.put(s.x0, y, v, style);
        c.put(s.x1, y, v, style);
        for x in s.x0 + 1..s.x1 {
            c.put(x, y, ' ', Style::new());
        }
    }
    c.put(s.x0, s.y0, tl, style);
    c.put(s.x1, s.y0, tr, style);
    c.put(s.x0, s.y1, bl, style);
    c.put(s.x1, s.y1, br, style);
    let inner = (s.x1 - s.x0 - 1).max(0) as usize;
    let title = format!("{} {name}", n.symbol());
    let name_style = if current {
        Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)
    } else {
        Style::new()
    };
    c.text(
        s.x0 + 1,
        s.y0 + 1,
        &clip(&title, inner),
        inner,
        name_style,
        true,
    );
    c.text(s.x0 + 1, s.y0 + 2, &clip(note, inner), inner, style, true);
    if token {
        c.put(s.x0 + 1, s.y0, '●', style);
    }
}
