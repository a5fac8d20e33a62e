//! The diagram as an SVG document: one `g.node` per node, one `g.flow`
//! with one `path` per flow, and the instance's state as classes and notes
//! when a [`DiagramState`] is given. Every face that shows the diagram
//! outside a terminal (`qflow render`, an HTML report) embeds this one
//! drawing, so they cannot disagree; docs/render.md lists the classes a
//! stylesheet or a test can rely on.

use std::fmt::Write as _;

use super::{Diagram, DiagramFlow, DiagramNode, DiagramState, FlowMark, Point, ShapeKind};

const STYLE: &str = "
.node .shape { fill: #fff; stroke: #333; stroke-width: 1.5; }
.node.end .shape, .node.error-end .shape { stroke-width: 3.5; }
.node.boundary .shape { stroke-dasharray: 4 2; }
.node .symbol { fill: none; stroke: #333; stroke-width: 2; }
.node text { font: 12px sans-serif; fill: #222; }
.node .icon { font-size: 13px; fill: #555; }
.node .note { font-size: 11px; font-weight: bold; fill: #0d47a1; }
.node .attempts { font-size: 11px; fill: #6d4c41; }
.node.done .shape { fill: #eef6ee; stroke: #2e7d32; }
.node.token .shape { fill: #e3f2fd; stroke: #1565c0; stroke-width: 3; }
.node.parked .shape, .node.timer .shape, .node.waiting .shape, .node.joined .shape { fill: #fff8e1; stroke: #ef6c00; stroke-width: 3; }
.node.reconcile .shape { fill: #f3e5f5; stroke: #6a1b9a; stroke-width: 3; }
.node.failed .shape { fill: #ffebee; stroke: #c62828; stroke-width: 3.5; }
.node.failed .note { fill: #c62828; }
.node.incident .shape { stroke: #c62828; }
.flow path.line { fill: none; stroke: #555; stroke-width: 1.5; }
.flow.taken path.line { stroke: #2e7d32; stroke-width: 3; }
.flow .default-mark { stroke: #555; stroke-width: 1.5; }
.flow text { font: 11px sans-serif; fill: #444; }
";

/// The diagram as a standalone SVG document (its own `<style>`, no external
/// reference): one `g.node` per node (boundaries last, so they sit on their
/// task), one `g.flow` with one `path` per flow. With `state`, the
/// instance's marks (classes `token`, `parked`, `failed`, `done`, …, notes
/// and attempt counts) and the path taken.
pub fn svg(d: &Diagram, state: Option<&DiagramState>) -> String {
    let mut s = String::with_capacity(1024 + 400 * (d.nodes.len() + d.flows.len()));
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" class="qflow-diagram" data-process="{p}""#,
        w = num(d.width),
        h = num(d.height),
        p = esc(&d.process)
    );
    if let Some(st) = state {
        let _ = write!(
            s,
            r#" data-instance="{}" data-status="{}""#,
            esc(&st.instance),
            st.status
        );
    }
    s.push_str(">\n");
    let _ = writeln!(s, "<title>{}</title>", esc(&d.process));
    let _ = writeln!(s, "<style>{STYLE}</style>");
    s.push_str(concat!(
        "<defs>\n",
        r##"<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>"##,
        "\n",
        r##"<marker id="arrow-taken" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#2e7d32"/></marker>"##,
        "\n</defs>\n<g class=\"flows\">\n"
    ));
    for f in &d.flows {
        flow(&mut s, f, state.is_some_and(|st| st.taken.contains(&f.id)));
    }
    s.push_str("</g>\n<g class=\"nodes\">\n");
    let (plain, boundaries): (Vec<&DiagramNode>, Vec<&DiagramNode>) =
        d.nodes.iter().partition(|n| n.kind != ShapeKind::Boundary);
    for n in plain {
        node(&mut s, n, state, 0);
    }
    // Boundaries on one task write their names on successive lines.
    let mut rows: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for n in boundaries {
        let row = rows
            .entry(n.attached_to.as_deref().unwrap_or(""))
            .or_default();
        node(&mut s, n, state, *row);
        *row += 1;
    }
    s.push_str("</g>\n</svg>\n");
    s
}

fn flow(s: &mut String, f: &DiagramFlow, taken: bool) {
    let mut class = String::from("flow");
    match f.mark {
        FlowMark::Default => class.push_str(" default"),
        FlowMark::Condition(_) => class.push_str(" conditional"),
        FlowMark::Plain => {}
    }
    if f.back {
        class.push_str(" back");
    }
    if taken {
        class.push_str(" taken");
    }
    let _ = write!(
        s,
        r#"<g class="{class}" data-id="{}" data-source="{}" data-target="{}"><path class="line" d=""#,
        esc(&f.id),
        esc(&f.source),
        esc(&f.target)
    );
    for (i, p) in f.points.iter().enumerate() {
        let _ = write!(
            s,
            "{}{},{}",
            if i == 0 { "M" } else { " L" },
            num(p.x),
            num(p.y)
        );
    }
    let marker = if taken { "arrow-taken" } else { "arrow" };
    let _ = write!(s, r#"" marker-end="url(#{marker})"/>"#);
    if let (FlowMark::Default, [a, b, ..]) = (&f.mark, f.points.as_slice()) {
        // The default mark: a short slash across the flow near its source.
        let (dx, dy) = unit(*a, *b);
        let c = Point {
            x: a.x + dx * 12.0,
            y: a.y + dy * 12.0,
        };
        let _ = write!(
            s,
            r#"<line class="default-mark" x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
            num(c.x - dx * 4.0 - dy * 6.0),
            num(c.y - dy * 4.0 + dx * 6.0),
            num(c.x + dx * 4.0 + dy * 6.0),
            num(c.y + dy * 4.0 - dx * 6.0)
        );
    }
    let label = match (&f.name, &f.mark) {
        (Some(n), _) => Some(n.clone()),
        (None, FlowMark::Condition(c)) => Some(c.clone()),
        (None, FlowMark::Default) => Some("default".to_string()),
        (None, FlowMark::Plain) => None,
    };
    if let (Some(label), [a, b, ..]) = (label, f.points.as_slice()) {
        // Beside the first segment (the gateway's way out), or the second
        // when the first is a short stub.
        let (p, q) = match f.points.as_slice() {
            // A loop: on its run back under the diagram.
            [_, _, l1, l2, ..] if f.back && (l1.y - l2.y).abs() < 0.5 => (*l1, *l2),
            // Out of a gateway the first run is shared by every branch: the
            // label goes where its branch turns away, at its start.
            [_, _, c2, ..] => (*c2, *c2),
            _ => (*a, *b),
        };
        let _ = write!(
            s,
            r#"<text class="label" x="{}" y="{}">{}</text>"#,
            num((p.x + q.x) / 2.0 + 4.0),
            num((p.y + q.y) / 2.0 - 5.0),
            esc(&clip(&label, 32))
        );
    }
    s.push_str("</g>\n");
}

fn node(s: &mut String, n: &DiagramNode, state: Option<&DiagramState>, row: usize) {
    let mark = state.and_then(|st| st.nodes.get(&n.id));
    let mut class = format!("node {}", n.kind.class());
    if let Some(m) = mark {
        class.push(' ');
        class.push_str(m.class);
        if m.incident {
            class.push_str(" incident");
        }
    }
    let _ = write!(
        s,
        r#"<g class="{class}" data-id="{}" data-kind="{}""#,
        esc(&n.id),
        n.kind.class()
    );
    if let Some(a) = &n.attached_to {
        let _ = write!(s, r#" data-attached-to="{}""#, esc(a));
    }
    s.push('>');
    let r = n.rect;
    let c = r.center();
    if n.kind.is_event() {
        let _ = write!(
            s,
            r#"<circle class="shape" cx="{}" cy="{}" r="{}"/>"#,
            num(c.x),
            num(c.y),
            num(r.w.min(r.h) / 2.0)
        );
        if matches!(n.kind, ShapeKind::Intermediate | ShapeKind::Boundary) {
            let _ = write!(
                s,
                r#"<circle class="symbol" cx="{}" cy="{}" r="{}"/>"#,
                num(c.x),
                num(c.y),
                num(r.w.min(r.h) / 2.0 - 4.0)
            );
        }
    } else if n.kind.is_gateway() {
        let _ = write!(
            s,
            r#"<polygon class="shape" points="{},{} {},{} {},{} {},{}"/>"#,
            num(c.x),
            num(r.y),
            num(r.right()),
            num(c.y),
            num(c.x),
            num(r.bottom()),
            num(r.x),
            num(c.y)
        );
        let k = r.w.min(r.h) / 5.0;
        let d = if n.kind == ShapeKind::ExclusiveGateway {
            format!(
                "M{},{} L{},{} M{},{} L{},{}",
                num(c.x - k),
                num(c.y - k),
                num(c.x + k),
                num(c.y + k),
                num(c.x + k),
                num(c.y - k),
                num(c.x - k),
                num(c.y + k)
            )
        } else {
            let k = k * 1.3;
            format!(
                "M{},{} L{},{} M{},{} L{},{}",
                num(c.x),
                num(c.y - k),
                num(c.x),
                num(c.y + k),
                num(c.x - k),
                num(c.y),
                num(c.x + k),
                num(c.y)
            )
        };
        let _ = write!(s, r#"<path class="symbol" d="{d}"/>"#);
    } else {
        let _ = write!(
            s,
            r#"<rect class="shape" x="{}" y="{}" width="{}" height="{}" rx="10"/>"#,
            num(r.x),
            num(r.y),
            num(r.w),
            num(r.h)
        );
        let _ = write!(
            s,
            r#"<text class="icon" x="{}" y="{}">{}</text>"#,
            num(r.x + 6.0),
            num(r.y + 16.0),
            n.kind.symbol()
        );
    }
    names(s, n, row);
    if let Some(m) = mark {
        // Notes go above the shape, so boundaries and flows below stay clear.
        let mut y = r.y - 6.0;
        if let Some(a) = m.attempts {
            let _ = write!(
                s,
                r#"<text class="attempts" x="{}" y="{}">attempts: {a}</text>"#,
                num(r.x),
                num(y)
            );
            y -= 13.0;
        }
        if let Some(note) = &m.note {
            let _ = write!(
                s,
                r#"<text class="note" x="{}" y="{}">{}</text>"#,
                num(r.x),
                num(y),
                esc(note)
            );
        }
    }
    s.push_str("</g>\n");
}

/// The node's name: inside a box, wrapped; below an event or a gateway.
fn names(s: &mut String, n: &DiagramNode, row: usize) {
    let Some(name) = n.name.as_deref().or(Some(n.id.as_str())) else {
        return;
    };
    let r = n.rect;
    let boxed = !n.kind.is_event() && !n.kind.is_gateway();
    let width = if boxed {
        ((r.w - 8.0) / 6.5).max(4.0) as usize
    } else {
        18
    };
    let lines = wrap(name, width);
    let lines = &lines[..lines.len().min(4)];
    let first_y = if boxed {
        r.center().y - (lines.len() as f64 - 1.0) * 7.0 + 4.0
    } else {
        r.bottom() + 14.0 + 14.0 * row as f64
    };
    let _ = write!(
        s,
        r#"<text class="name" x="{}" y="{}" text-anchor="middle">"#,
        num(r.center().x),
        num(first_y)
    );
    for (i, l) in lines.iter().enumerate() {
        let _ = write!(
            s,
            r#"<tspan x="{}" dy="{}">{}</tspan>"#,
            num(r.center().x),
            if i == 0 { 0 } else { 14 },
            esc(l)
        );
    }
    s.push_str("</text>");
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

fn unit(a: Point, b: Point) -> (f64, f64) {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let len = (dx * dx + dy * dy).sqrt();
    if len < f64::EPSILON {
        (1.0, 0.0)
    } else {
        (dx / len, dy / len)
    }
}

/// A coordinate with at most one decimal, so goldens are stable.
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}
