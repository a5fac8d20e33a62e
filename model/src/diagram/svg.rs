//! The diagram as an SVG document: one `g.node` per node, one `g.flow`
//! with one `path` per flow, and the instance's state as classes and notes
//! when a [`DiagramState`] is given. Every face that shows the diagram
//! outside a terminal (`qflow render`, an HTML report) embeds this one
//! drawing, so they cannot disagree; docs/render.md lists the classes a
//! stylesheet or a test can rely on.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{
    Diagram, DiagramFlow, DiagramNode, DiagramState, Finding, FlowMark, Point, Rect, ShapeKind,
    Trigger,
};

const STYLE: &str = "
.node .shape { fill: #fff; stroke: #333; stroke-width: 1.5; }
.node.end .shape, .node.error-end .shape { stroke-width: 3.5; }
.node.boundary.non-interrupting .shape { stroke-dasharray: 4 2; }
.node .symbol { fill: none; stroke: #333; stroke-width: 2; }
.node .marker { fill: none; stroke: #333; stroke-width: 1.5; stroke-linejoin: round; stroke-linecap: round; }
.node .marker.face { fill: #fff; }
.node.end .marker, .node.error-end .marker { fill: #333; }
.node text { font: 12px sans-serif; fill: #222; }
.node .icon { font-size: 13px; fill: #555; }
.node .note { font-size: 11px; font-weight: bold; fill: #0d47a1; }
.node .attempts { font-size: 11px; fill: #6d4c41; }
.node.done .shape { fill: #eef6ee; stroke: #2e7d32; }
.node.done .symbol { stroke: #2e7d32; }
.node.boundary.done .shape { fill: #c8e6c9; }
.node text.name.small { font-size: 10px; }
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
.finding-error .shape, .flow.finding-error path.line { stroke: #d32f2f; stroke-width: 2.5; stroke-dasharray: 6 3; }
.finding-warning .shape, .flow.finding-warning path.line { stroke: #f9a825; stroke-width: 2.5; stroke-dasharray: 6 3; }
.finding-badge circle { fill: #90a4ae; stroke: #fff; stroke-width: 1.5; }
.finding-error .finding-badge circle { fill: #d32f2f; }
.finding-warning .finding-badge circle { fill: #f9a825; }
.node .finding-badge text { font: bold 12px sans-serif; fill: #fff; }
.node.finding-info .finding-badge text, .node.finding-hint .finding-badge text { font: bold 9px serif; }
.flow text, .node .note, .node .attempts, .node.start .name, .node.end .name, .node.error-end .name, .node.intermediate .name, .node.boundary .name, .node.exclusive .name, .node.parallel .name { paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
";

/// The diagram as a standalone SVG document (its own `<style>`, no external
/// reference): one `g.node` per node (boundaries last, so they sit on their
/// task), one `g.flow` with one `path` per flow. With `state`, the
/// instance's marks (classes `token`, `parked`, `failed`, `done`, …, notes
/// and attempt counts) and the path taken.
pub fn svg(d: &Diagram, state: Option<&DiagramState>) -> String {
    draw(d, state, None)
}

/// The diagram as an editor shows it beside the text: every node or flow
/// the loader has a verdict on carries the classes `finding` and
/// `finding-SEVERITY` (`error`, `warning`, `info`, `hint`),
/// `data-findings` (how many) and a `title` with the messages; a node also
/// a `g.finding-badge` on its top-right corner (`!` for an error or a
/// warning, whose shape is outlined dashed in red or amber; a small grey
/// `i` for information and hints).
pub fn svg_with_findings(d: &Diagram, findings: &BTreeMap<String, Finding>) -> String {
    draw(d, None, Some(findings))
}

fn draw(
    d: &Diagram,
    state: Option<&DiagramState>,
    findings: Option<&BTreeMap<String, Finding>>,
) -> String {
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
    let mut labels = Labels::new(d);
    for f in &d.flows {
        flow(
            &mut s,
            f,
            state.is_some_and(|st| st.taken.contains(&f.id)),
            findings.and_then(|x| x.get(&f.id)),
            &mut labels,
        );
    }
    s.push_str("</g>\n<g class=\"nodes\">\n");
    // Boundaries last: they sit on their task, and their names find room
    // around what is already placed.
    let (plain, boundaries): (Vec<&DiagramNode>, Vec<&DiagramNode>) =
        d.nodes.iter().partition(|n| n.kind != ShapeKind::Boundary);
    for n in plain.into_iter().chain(boundaries) {
        let finding = findings.and_then(|x| x.get(&n.id));
        node(&mut s, n, state, finding, &mut labels);
    }
    s.push_str("</g>\n</svg>\n");
    s
}

fn flow(
    s: &mut String,
    f: &DiagramFlow,
    taken: bool,
    finding: Option<&Finding>,
    labels: &mut Labels,
) {
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
    if let Some(x) = finding {
        let _ = write!(class, " finding finding-{}", x.severity);
    }
    let _ = write!(
        s,
        r#"<g class="{class}" data-id="{}" data-source="{}" data-target="{}""#,
        esc(&f.id),
        esc(&f.source),
        esc(&f.target)
    );
    finding_title(s, finding);
    s.push_str(r#"<path class="line" d=""#);
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
        let text = clip(&label, 32);
        let mut spots = vec![Spot {
            anchor: Anchor::Start,
            x: (p.x + q.x) / 2.0 + 4.0,
            y: (p.y + q.y) / 2.0 - 5.0,
        }];
        // Else along any of its segments, the branch's own run first.
        let segments: Vec<(Point, Point)> = f.points.windows(2).map(|w| (w[0], w[1])).collect();
        let order = (1..segments.len()).chain(std::iter::once(0));
        for (a, b) in order.filter_map(|i| segments.get(i).copied()) {
            let m = Point {
                x: (a.x + b.x) / 2.0,
                y: (a.y + b.y) / 2.0,
            };
            if (a.y - b.y).abs() < 0.5 {
                spots.push(Spot::middle(m.x, m.y - 5.0));
                spots.push(Spot::middle(m.x, m.y + 13.0));
            } else if (a.x - b.x).abs() < 0.5 {
                spots.push(Spot::start(m.x + 5.0, m.y + 4.0));
                spots.push(Spot::end(m.x - 5.0, m.y + 4.0));
            } else {
                spots.push(Spot::start(m.x + 4.0, m.y - 5.0));
            }
        }
        // A long condition where nothing fits is shortened until it does
        // (its full text is in the model), else it goes where it covers least.
        let mut text = text;
        let fitting = [32, 20, 12].into_iter().find_map(|n| {
            let t = clip(&label, n);
            let spot = labels.clear(&spots, t.chars().count(), 1, FLOW_FONT)?;
            Some((t, spot))
        });
        let at = match fitting {
            Some((t, spot)) => {
                text = t;
                labels.take(spot, text.chars().count(), 1, FLOW_FONT)
            }
            None => labels.place(&spots, text.chars().count(), 1, FLOW_FONT),
        };
        let _ = write!(
            s,
            r#"<text class="label" x="{}" y="{}"{}>{}</text>"#,
            num(at.x),
            num(at.y),
            at.anchor.attribute(),
            esc(&text)
        );
    }
    s.push_str("</g>\n");
}

fn node(
    s: &mut String,
    n: &DiagramNode,
    state: Option<&DiagramState>,
    finding: Option<&Finding>,
    labels: &mut Labels,
) {
    let mark = state.and_then(|st| st.nodes.get(&n.id));
    let mut class = format!("node {}", n.kind.class());
    if n.non_interrupting {
        class.push_str(" non-interrupting");
    }
    if let Some(m) = mark {
        class.push(' ');
        class.push_str(m.class.as_str());
        if m.incident {
            class.push_str(" incident");
        }
    }
    if let Some(x) = finding {
        let _ = write!(class, " finding finding-{}", x.severity);
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
    if n.trigger != Trigger::None {
        let _ = write!(s, r#" data-trigger="{}""#, n.trigger.name());
    }
    finding_title(s, finding);
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
        trigger_marker(s, n.trigger, r);
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
    let name_bottom = names(s, n, labels);
    if let Some(m) = mark {
        let mut notes: Vec<(&str, String)> = Vec::new();
        if let Some(a) = m.attempts {
            notes.push(("attempts", format!("attempts: {a}")));
        }
        if let Some(note) = &m.note {
            notes.push(("note", note.clone()));
        }
        for (i, (class, text)) in notes.iter().enumerate() {
            // Notes go above the shape, so boundaries and flows below stay
            // clear (the attempts nearest the shape, the note above them); a
            // boundary's above is its task, so its notes go under its name.
            let spot = if n.kind == ShapeKind::Boundary {
                let y = name_bottom + 13.0;
                let c = r.center().x;
                let spots: Vec<Spot> = (0..3)
                    .flat_map(|k| {
                        let y = y + 13.0 * k as f64;
                        [
                            Spot::middle(c, y),
                            Spot::start(c + 6.0, y),
                            Spot::end(c - 6.0, y),
                        ]
                    })
                    .collect();
                labels.place(&spots, text.chars().count(), 1, NOTE_FONT)
            } else {
                let y = r.y - 6.0 - 13.0 * i as f64;
                let chars = text.chars().count();
                let start = Spot::start(r.x, y);
                // A note that would run off the drawing's right edge ends
                // at the shape's right edge instead.
                let end = Spot::end(r.right(), y);
                let spot = if labels.on_canvas(&start, chars, 1, NOTE_FONT) {
                    start
                } else {
                    end
                };
                labels.place(&[spot], chars, 1, NOTE_FONT)
            };
            let _ = write!(
                s,
                r#"<text class="{class}" x="{}" y="{}"{}>{}</text>"#,
                num(spot.x),
                num(spot.y),
                spot.anchor.attribute(),
                esc(text)
            );
        }
    }
    if let Some(found) = finding {
        // `!` on the top-right corner (a diamond's: its right point's top);
        // information and hints a small grey `i`, so they never drown an
        // error.
        let r = n.rect;
        let (x, y) = if n.kind.is_event() {
            let c = r.center();
            let k = r.w.min(r.h) / 2.0 * std::f64::consts::FRAC_1_SQRT_2;
            (c.x + k, c.y - k)
        } else if n.kind.is_gateway() {
            (r.x + r.w * 0.75, r.y + r.h * 0.25)
        } else {
            (r.right(), r.y)
        };
        let loud = matches!(found.severity, "error" | "warning");
        let (r, mark, dy) = if loud {
            (8.0, "!", 4.0)
        } else {
            (5.5, "i", 3.0)
        };
        let _ = write!(
            s,
            r#"<g class="finding-badge"><circle cx="{}" cy="{}" r="{}"/><text x="{}" y="{}" text-anchor="middle">{mark}</text></g>"#,
            num(x),
            num(y),
            num(r),
            num(x),
            num(y + dy)
        );
    }
    s.push_str("</g>\n");
}

/// Close a group's opening tag: with a finding, its count and its
/// messages as the group's `title` (an editor's tooltip).
fn finding_title(s: &mut String, finding: Option<&Finding>) {
    match finding {
        Some(x) => {
            let _ = write!(
                s,
                r#" data-findings="{}"><title>{}</title>"#,
                x.messages.len(),
                esc(&x.messages.join("\n"))
            );
        }
        None => s.push('>'),
    }
}

/// An event's BPMN marker inside its circle: a clock face with its hands
/// for a timer, a lightning bolt for an error (filled when thrown, by the
/// style of an end event). A blank event (or another trigger) has none.
fn trigger_marker(s: &mut String, trigger: Trigger, r: Rect) {
    let c = r.center();
    let radius = r.w.min(r.h) / 2.0;
    match trigger {
        Trigger::Timer => {
            let face = radius - 7.0;
            let _ = write!(
                s,
                r#"<g class="marker clock"><circle class="marker face" cx="{}" cy="{}" r="{}"/>"#,
                num(c.x),
                num(c.y),
                num(face)
            );
            // Twelve hour ticks, then the hands at ten past two.
            let mut d = String::new();
            for k in 0..12 {
                let a = std::f64::consts::TAU * k as f64 / 12.0;
                let (sin, cos) = a.sin_cos();
                let _ = write!(
                    d,
                    "M{},{} L{},{} ",
                    num(c.x + sin * (face - 2.5)),
                    num(c.y - cos * (face - 2.5)),
                    num(c.x + sin * face),
                    num(c.y - cos * face)
                );
            }
            let _ = write!(
                d,
                "M{},{} L{},{} L{},{}",
                num(c.x + face * 0.45),
                num(c.y - face * 0.6),
                num(c.x),
                num(c.y),
                num(c.x + face * 0.6),
                num(c.y - face * 0.2)
            );
            let _ = write!(
                s,
                r#"<path class="marker hands" d="{}"/></g>"#,
                d.trim_end()
            );
        }
        Trigger::Error => {
            // BPMN's zigzag bolt (bpmn.io's outline: 9.5 wide, 13.5
            // high), centred and scaled to the circle.
            let k = (radius - 7.0) * 1.55 / 13.5;
            let pts = [
                (0.0, 0.0),
                (2.5, -11.5),
                (6.0, -2.5),
                (9.5, -13.5),
                (7.0, -1.5),
                (3.5, -10.5),
            ];
            let pts = pts.map(|(x, y)| (x - 4.75, y + 6.75));
            let points: Vec<String> = pts
                .iter()
                .map(|(x, y)| format!("{},{}", num(c.x + x * k), num(c.y + y * k)))
                .collect();
            let _ = write!(
                s,
                r#"<polygon class="marker bolt" points="{}"/>"#,
                points.join(" ")
            );
        }
        Trigger::None | Trigger::Other => {}
    }
}

/// The node's name: inside a box, wrapped; an event's or a gateway's below
/// it, else beside the line leaving it downwards, else above it, else
/// lower down. Returns the baseline of its last line.
fn names(s: &mut String, n: &DiagramNode, labels: &mut Labels) -> f64 {
    let name = n.name.as_deref().unwrap_or(n.id.as_str());
    if !n.kind.is_event() && !n.kind.is_gateway() {
        return boxed_name(s, n, name);
    }
    let r = n.rect;
    let c = r.center();
    let lines = wrap(name, 18);
    let lines = &lines[..lines.len().min(4)];
    let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let extra = 14.0 * (lines.len().max(1) as f64 - 1.0);
    let below = r.bottom() + 14.0;
    let mut spots = vec![
        Spot::middle(c.x, below),
        Spot::start(c.x + 6.0, below),
        Spot::end(c.x - 6.0, below),
    ];
    if n.kind != ShapeKind::Boundary {
        spots.push(Spot::middle(c.x, r.y - 6.0 - extra));
    }
    for k in 1..4 {
        let y = below + 14.0 * k as f64;
        spots.extend([
            Spot::middle(c.x, y),
            Spot::start(c.x + 6.0, y),
            Spot::end(c.x - 6.0, y),
        ]);
    }
    let at = labels.place(&spots, widest, lines.len(), NAME_FONT);
    name_text(s, at, lines, "name", 14.0);
    at.y + extra
}

/// A box's name, wrapped inside it and centred, clear of the kind icon in
/// its top-left corner: a name that would reach the icon's row moves down
/// below it; one too long for the room under the icon is set smaller, and
/// if it still does not fit, its last line ends in `…` (the full name is
/// the group's `title`). Returns the baseline of its last line.
fn boxed_name(s: &mut String, n: &DiagramNode, name: &str) -> f64 {
    let r = n.rect;
    let c = r.center();
    // The room under the icon (its baseline 16 below the top, a descent).
    let (top, bottom) = (r.y + ICON_ROW, r.bottom() - 3.0);
    // (font, line step, class): the name's size, then the small one.
    let sizes = [
        (NAME_FONT, 14.0, "name"),
        (SMALL_NAME_FONT, 12.0, "name small"),
    ];
    let height = |font: f64, step: f64, lines: usize| font * 1.05 + step * (lines as f64 - 1.0);
    let mut chosen = None;
    for (k, &(font, step, class)) in sizes.iter().enumerate() {
        let width = ((r.w - 8.0) / (6.5 * font / NAME_FONT)).max(4.0) as usize;
        let mut lines = wrap(name, width);
        lines.truncate(4);
        let n_lines = lines.len().max(1);
        // Centred in the box, as long as it keeps clear of the icon.
        let centred = c.y - step * (n_lines as f64 - 1.0) / 2.0 + 4.0;
        if k == 0 && centred - font * 0.8 >= top {
            chosen = Some((lines, centred, step, class, false));
            break;
        }
        let room = bottom - top;
        let fits = |l: usize| height(font, step, l) <= room;
        if fits(n_lines) {
            let first = top + (room - height(font, step, n_lines)) / 2.0 + font * 0.8;
            chosen = Some((lines, first, step, class, false));
            break;
        }
        if k + 1 < sizes.len() {
            continue;
        }
        // The smallest size and still too long: as many lines as fit, the
        // last one shortened.
        let keep = (1..=n_lines).rev().find(|&l| fits(l)).unwrap_or(1);
        let clipped = lines.len() > keep;
        lines.truncate(keep);
        if clipped {
            if let Some(last) = lines.last_mut() {
                *last = clip(&format!("{last} …"), width);
                if !last.ends_with('…') {
                    last.push('…');
                }
            }
        }
        let first = top + (room - height(font, step, keep)).max(0.0) / 2.0 + font * 0.8;
        chosen = Some((lines, first, step, class, clipped));
    }
    let (lines, first, step, class, clipped) = chosen.expect("the last size always chooses");
    if clipped {
        let _ = write!(s, "<title>{}</title>", esc(name));
    }
    let at = Spot::middle(c.x, first);
    name_text(s, at, &lines, class, step);
    at.y + step * (lines.len().max(1) as f64 - 1.0)
}

/// A `text` of one `tspan` per line, `step` apart.
fn name_text(s: &mut String, at: Spot, lines: &[String], class: &str, step: f64) {
    let _ = write!(
        s,
        r#"<text class="{class}" x="{}" y="{}" text-anchor="{}">"#,
        num(at.x),
        num(at.y),
        at.anchor.name()
    );
    for (i, l) in lines.iter().enumerate() {
        let _ = write!(
            s,
            r#"<tspan x="{}" dy="{}">{}</tspan>"#,
            num(at.x),
            num(if i == 0 { 0.0 } else { step }),
            esc(l)
        );
    }
    s.push_str("</text>");
}

/// Font sizes of the texts placed around shapes (the style above).
const NAME_FONT: f64 = 12.0;
const FLOW_FONT: f64 = 11.0;
const NOTE_FONT: f64 = 11.0;
/// A box's name too long for the room under the icon at the name's size.
const SMALL_NAME_FONT: f64 = 10.0;
/// How far below a box's top its kind icon reaches.
const ICON_ROW: f64 = 20.0;

/// How a text is anchored at its point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }

    /// The attribute, omitted for SVG's default (start).
    fn attribute(self) -> &'static str {
        match self {
            Anchor::Start => "",
            Anchor::Middle => r#" text-anchor="middle""#,
            Anchor::End => r#" text-anchor="end""#,
        }
    }
}

/// Where a text may go: its anchor and its first baseline.
#[derive(Debug, Clone, Copy)]
struct Spot {
    anchor: Anchor,
    x: f64,
    y: f64,
}

impl Spot {
    fn start(x: f64, y: f64) -> Spot {
        Spot {
            anchor: Anchor::Start,
            x,
            y,
        }
    }
    fn middle(x: f64, y: f64) -> Spot {
        Spot {
            anchor: Anchor::Middle,
            x,
            y,
        }
    }
    fn end(x: f64, y: f64) -> Spot {
        Spot {
            anchor: Anchor::End,
            x,
            y,
        }
    }
}

/// A box in diagram units.
#[derive(Debug, Clone, Copy)]
struct Area {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Area {
    fn meets(&self, o: &Area) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn within(&self, o: &Area) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

/// Room for texts: the canvas minus every shape, every flow's segments and
/// every text placed so far. Each text takes the first of its candidate
/// spots that is clear (else its first): a name never sits on the line
/// leaving its own event or gateway, a boundary's name never on its task,
/// a condition never on the box its branch enters.
struct Labels {
    canvas: Area,
    taken: Vec<Area>,
}

impl Labels {
    fn new(d: &Diagram) -> Labels {
        let mut taken = Vec::with_capacity(d.nodes.len() * 2 + d.flows.len() * 4);
        for n in &d.nodes {
            let r = n.rect;
            taken.push(Area {
                x0: r.x,
                y0: r.y,
                x1: r.right(),
                y1: r.bottom(),
            });
        }
        for f in &d.flows {
            for w in f.points.windows(2) {
                let (a, b) = (w[0], w[1]);
                taken.push(Area {
                    x0: a.x.min(b.x) - 1.5,
                    y0: a.y.min(b.y) - 1.5,
                    x1: a.x.max(b.x) + 1.5,
                    y1: a.y.max(b.y) + 1.5,
                });
            }
        }
        Labels {
            canvas: Area {
                x0: 0.0,
                y0: 0.0,
                x1: d.width,
                y1: d.height,
            },
            taken,
        }
    }

    /// The box a text of `lines` lines, the widest `chars` characters, in
    /// `font` px, covers at `spot` (an average glyph is 0.54 em wide).
    fn area(spot: &Spot, chars: usize, lines: usize, font: f64) -> Area {
        let w = chars as f64 * font * 0.54;
        let x0 = match spot.anchor {
            Anchor::Start => spot.x,
            Anchor::Middle => spot.x - w / 2.0,
            Anchor::End => spot.x - w,
        };
        let line = font + 2.0;
        Area {
            x0,
            y0: spot.y - font * 0.8,
            x1: x0 + w,
            y1: spot.y + line * (lines.max(1) as f64 - 1.0) + font * 0.25,
        }
    }

    /// How much of what is already there a text at `spot` would cover
    /// (0: the spot is clear; off the canvas counts as covering a lot).
    fn covered(&self, spot: &Spot, chars: usize, lines: usize, font: f64) -> f64 {
        let a = Labels::area(spot, chars, lines, font);
        let outside = if a.within(&self.canvas) { 0.0 } else { 1e12 };
        outside
            + self
                .taken
                .iter()
                .filter(|t| t.meets(&a))
                .map(|t| (a.x1.min(t.x1) - a.x0.max(t.x0)) * (a.y1.min(t.y1) - a.y0.max(t.y0)))
                .sum::<f64>()
    }

    /// Whether a text at `spot` stays on the drawing.
    fn on_canvas(&self, spot: &Spot, chars: usize, lines: usize, font: f64) -> bool {
        Labels::area(spot, chars, lines, font).within(&self.canvas)
    }

    /// The first clear spot of `spots`, if any.
    fn clear(&self, spots: &[Spot], chars: usize, lines: usize, font: f64) -> Option<Spot> {
        spots
            .iter()
            .find(|s| self.covered(s, chars, lines, font) == 0.0)
            .copied()
    }

    /// Take a spot: later texts keep clear of it.
    fn take(&mut self, spot: Spot, chars: usize, lines: usize, font: f64) -> Spot {
        self.taken.push(Labels::area(&spot, chars, lines, font));
        spot
    }

    /// The first clear spot of `spots`, else the one that covers least of
    /// what is there (its text keeps a white halo, so it stays legible),
    /// now taken.
    fn place(&mut self, spots: &[Spot], chars: usize, lines: usize, font: f64) -> Spot {
        let chosen = self.clear(spots, chars, lines, font).unwrap_or_else(|| {
            spots
                .iter()
                .min_by(|a, b| {
                    self.covered(a, chars, lines, font)
                        .total_cmp(&self.covered(b, chars, lines, font))
                })
                .copied()
                .unwrap_or(Spot::start(0.0, 0.0))
        });
        self.taken.push(Labels::area(&chosen, chars, lines, font));
        chosen
    }
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
