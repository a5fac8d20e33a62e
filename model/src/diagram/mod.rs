//! The process as a diagram: nodes as rectangles, boundary events on their
//! tasks, sequence flows as polylines with the gateway's condition or default
//! mark. Plain data in the model's own units (BPMN diagram pixels), so every
//! face draws the same picture: `qflow render` writes it as SVG, the console
//! scales it to terminal cells. Faces only draw; where things go is decided
//! here.
//!
//! Positions come from the model's diagram section (`bpmndi`) when it draws
//! every node, so the picture is the one the author saw in the modeller.
//! Otherwise (hand-written models usually have no diagram section) the graph
//! is laid out in layers, left to right ([`layered`]).
//!
//! The loader drops the coordinate leaves (`dc:Bounds`, `di:waypoint`) from
//! its XML tree to keep large models small, so the positions are read here
//! by a separate pass over the source, only when a diagram is asked for.

use std::collections::HashMap;

use crate::model::{EventTrigger, NodeKind, Process};

mod bpmndi;
mod layered;
mod marks;
pub mod svg;

pub use marks::{DiagramState, Finding, MarkClass, NodeMark};

/// A point, in diagram units (pixels of the modeller's canvas).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// An axis-aligned rectangle: top-left corner and size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    pub fn center(&self) -> Point {
        Point {
            x: self.x + self.w / 2.0,
            y: self.y + self.h / 2.0,
        }
    }

    pub fn right(&self) -> f64 {
        self.x + self.w
    }

    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }
}

/// What a node is, as drawn: each kind has its own shape and symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShapeKind {
    Start,
    End,
    /// An end event that throws an error.
    ErrorEnd,
    ExclusiveGateway,
    ParallelGateway,
    /// A registered task (`q:task`) or any other task.
    Task,
    /// A channel call (`q:channel`).
    Call,
    /// An intermediate catch event (a timer, for qflow).
    Intermediate,
    /// A boundary event, drawn on the border of its task.
    Boundary,
    SubProcess,
    /// Any other flow node (an inclusive gateway, a user task, …).
    Other,
}

impl ShapeKind {
    /// The class an SVG shape carries and a stylesheet targets.
    pub fn class(self) -> &'static str {
        match self {
            ShapeKind::Start => "start",
            ShapeKind::End => "end",
            ShapeKind::ErrorEnd => "error-end",
            ShapeKind::ExclusiveGateway => "exclusive",
            ShapeKind::ParallelGateway => "parallel",
            ShapeKind::Task => "task",
            ShapeKind::Call => "call",
            ShapeKind::Intermediate => "intermediate",
            ShapeKind::Boundary => "boundary",
            ShapeKind::SubProcess => "subprocess",
            ShapeKind::Other => "other",
        }
    }

    /// A one-character symbol, for faces that draw text (the console).
    pub fn symbol(self) -> &'static str {
        match self {
            ShapeKind::Start => "○",
            ShapeKind::End => "◉",
            ShapeKind::ErrorEnd => "⊗",
            ShapeKind::ExclusiveGateway => "◇",
            ShapeKind::ParallelGateway => "✚",
            ShapeKind::Task => "▭",
            ShapeKind::Call => "⇄",
            ShapeKind::Intermediate => "◷",
            ShapeKind::Boundary => "◔",
            ShapeKind::SubProcess => "▣",
            ShapeKind::Other => "?",
        }
    }

    /// Events are round, gateways diamonds, everything else a box.
    pub fn is_event(self) -> bool {
        matches!(
            self,
            ShapeKind::Start
                | ShapeKind::End
                | ShapeKind::ErrorEnd
                | ShapeKind::Intermediate
                | ShapeKind::Boundary
        )
    }

    pub fn is_gateway(self) -> bool {
        matches!(
            self,
            ShapeKind::ExclusiveGateway | ShapeKind::ParallelGateway
        )
    }

    /// The size a modeller gives the shape (bpmn.io's defaults).
    fn size(self) -> (f64, f64) {
        if self.is_event() {
            (36.0, 36.0)
        } else if self.is_gateway() {
            (50.0, 50.0)
        } else {
            (100.0, 80.0)
        }
    }
}

/// What an event reacts to or throws, as BPMN marks it inside the circle:
/// a clock for a timer, a lightning bolt for an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A blank event, or anything that is not an event.
    None,
    Timer,
    Error,
    /// Message, signal, escalation, …: loaded, not executed, drawn blank.
    Other,
}

impl Trigger {
    /// The value of the SVG's `data-trigger` (absent for `None`).
    pub fn name(self) -> &'static str {
        match self {
            Trigger::None => "none",
            Trigger::Timer => "timer",
            Trigger::Error => "error",
            Trigger::Other => "other",
        }
    }

    fn of(t: &EventTrigger) -> Trigger {
        match t {
            EventTrigger::None => Trigger::None,
            EventTrigger::Timer(_) => Trigger::Timer,
            EventTrigger::Error { .. } => Trigger::Error,
            EventTrigger::Other(_) => Trigger::Other,
        }
    }
}

/// One node, placed.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagramNode {
    pub id: String,
    pub kind: ShapeKind,
    pub name: Option<String>,
    pub rect: Rect,
    /// A boundary event's task.
    pub attached_to: Option<String>,
    /// A boundary event that does not interrupt its task
    /// (`cancelActivity="false"`): BPMN draws it dashed.
    pub non_interrupting: bool,
    /// An event's trigger (its marker); `None` for every other node.
    pub trigger: Trigger,
}

impl DiagramNode {
    /// A one-character symbol, for faces that draw text (the console): the
    /// kind's, but a boundary or intermediate event shows its trigger.
    pub fn symbol(&self) -> &'static str {
        match (self.kind, self.trigger) {
            (ShapeKind::Boundary | ShapeKind::Intermediate, Trigger::Timer) => "◷",
            (ShapeKind::Boundary | ShapeKind::Intermediate, Trigger::Error) => "ϟ",
            (k, _) => k.symbol(),
        }
    }
}

/// What a sequence flow says about when it is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowMark {
    Plain,
    /// Its condition, as written.
    Condition(String),
    /// The gateway's default flow.
    Default,
}

/// One sequence flow, routed.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagramFlow {
    pub id: String,
    pub source: String,
    pub target: String,
    pub name: Option<String>,
    pub mark: FlowMark,
    /// At least two points, from the source's border to the target's.
    pub points: Vec<Point>,
    /// It goes back against the layering (a loop): routed below the rest.
    pub back: bool,
}

/// Where the positions came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The model's diagram section drew every node.
    Drawn,
    /// Laid out in layers, left to right.
    Layered,
}

/// A process, drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagram {
    pub process: String,
    pub nodes: Vec<DiagramNode>,
    pub flows: Vec<DiagramFlow>,
    /// The extent of everything drawn, margins included (from the origin).
    pub width: f64,
    pub height: f64,
    pub placement: Placement,
}

/// The margin around a diagram.
const MARGIN: f64 = 36.0;

impl Diagram {
    /// Draw `process`. `source` is the model's text: its diagram section,
    /// when it places every node, gives the positions; without it (or
    /// with a diagram section that misses a node) the graph is laid out.
    pub fn of(process: &Process, source: Option<&str>) -> Diagram {
        let nodes: Vec<DiagramNode> = process
            .nodes
            .iter()
            .map(|n| {
                let kind = shape_kind(n);
                let (w, h) = kind.size();
                DiagramNode {
                    id: n.id.value.to_string(),
                    kind,
                    name: n.name.as_ref().map(|a| a.value.to_string()),
                    rect: Rect {
                        x: 0.0,
                        y: 0.0,
                        w,
                        h,
                    },
                    attached_to: match &n.kind {
                        NodeKind::BoundaryEvent { attached_to, .. } => {
                            attached_to.as_ref().map(|a| a.value.to_string())
                        }
                        _ => None,
                    },
                    non_interrupting: matches!(
                        &n.kind,
                        NodeKind::BoundaryEvent {
                            interrupting: false,
                            ..
                        }
                    ),
                    trigger: match &n.kind {
                        NodeKind::BoundaryEvent { trigger, .. }
                        | NodeKind::IntermediateCatchEvent { trigger }
                        | NodeKind::EndEvent { trigger }
                        | NodeKind::StartEvent { trigger } => Trigger::of(trigger),
                        _ => Trigger::None,
                    },
                }
            })
            .collect();
        // Looked up by id once per flow end: a linear search here made
        // placing a large model quadratic.
        let mut by_id: HashMap<&str, &crate::model::Node> = HashMap::new();
        for n in &process.nodes {
            // The first of duplicate ids, as everywhere else.
            by_id.entry(n.id.value.as_str()).or_insert(n);
        }
        let flows: Vec<DiagramFlow> = process
            .flows
            .iter()
            .filter_map(|f| {
                let source = f.source.as_ref()?.value.to_string();
                let target = f.target.as_ref()?.value.to_string();
                let source_node = by_id.get(source.as_str())?;
                by_id.get(target.as_str())?;
                let is_default = matches!(
                    &source_node.kind,
                    NodeKind::ExclusiveGateway { default: Some(d) } if d.value == f.id.value
                );
                let mark = match (&f.condition, is_default) {
                    (_, true) => FlowMark::Default,
                    (Some(c), false) => FlowMark::Condition(c.value.to_string()),
                    (None, false) => FlowMark::Plain,
                };
                Some(DiagramFlow {
                    id: f.id.value.to_string(),
                    source,
                    target,
                    name: f.name.as_ref().map(|a| a.value.to_string()),
                    mark,
                    points: Vec::new(),
                    back: false,
                })
            })
            .collect();
        let mut diagram = Diagram {
            process: process
                .id
                .as_ref()
                .map(|a| a.value.to_string())
                .unwrap_or_default(),
            nodes,
            flows,
            width: 0.0,
            height: 0.0,
            placement: Placement::Layered,
        };
        let drawn = source
            .and_then(bpmndi::read)
            .is_some_and(|d| d.place(&mut diagram));
        if !drawn {
            layered::place(&mut diagram);
        }
        diagram.normalize();
        diagram
    }

    pub fn node(&self, id: &str) -> Option<&DiagramNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    pub fn flow(&self, id: &str) -> Option<&DiagramFlow> {
        self.flows.iter().find(|f| f.id == id)
    }

    /// Pairs of flows (by index) that run along one stretch of line
    /// although they share neither their source nor their target: drawn
    /// like that, the line reads as one flow between the wrong nodes
    /// ("Charge → Tell the customer"). Flows out of one node may leave
    /// together, flows into one node may arrive together; no other pair
    /// may share a segment. The layered layout leaves none; a diagram
    /// section is the author's drawing and is kept as it is.
    pub fn shared_segments(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for i in 0..self.flows.len() {
            for j in i + 1..self.flows.len() {
                if may_share(&self.flows[i], &self.flows[j]) {
                    continue;
                }
                if shares(&self.flows[i].points, &self.flows[j].points) {
                    out.push((i, j));
                }
            }
        }
        out
    }

    /// Shift everything so the drawing starts one margin from the origin,
    /// and measure it.
    fn normalize(&mut self) {
        // An event's or gateway's name is written below it, centred, up to
        // about 18 characters wide: keep it inside the drawing.
        let half_label = |n: &DiagramNode| {
            let boxed = !n.kind.is_event() && !n.kind.is_gateway();
            let chars = n.name.as_ref().unwrap_or(&n.id).chars().count().min(18);
            if boxed {
                0.0
            } else {
                (chars as f64 * 3.4 - n.rect.w / 2.0).max(0.0)
            }
        };
        let xs = self
            .nodes
            .iter()
            .flat_map(|n| [n.rect.x - half_label(n), n.rect.right() + half_label(n)])
            .chain(self.flows.iter().flat_map(|f| f.points.iter().map(|p| p.x)));
        let ys = self
            .nodes
            .iter()
            .flat_map(|n| {
                let label = if n.kind.is_event() || n.kind.is_gateway() {
                    20.0
                } else {
                    0.0
                };
                [n.rect.y, n.rect.bottom() + label]
            })
            .chain(self.flows.iter().flat_map(|f| f.points.iter().map(|p| p.y)));
        let (min_x, max_x) = bounds(xs);
        let (min_y, max_y) = bounds(ys);
        let (dx, dy) = (MARGIN - min_x, MARGIN - min_y);
        for n in &mut self.nodes {
            n.rect.x += dx;
            n.rect.y += dy;
        }
        for p in self.flows.iter_mut().flat_map(|f| f.points.iter_mut()) {
            p.x += dx;
            p.y += dy;
        }
        self.width = (max_x - min_x).max(0.0) + 2.0 * MARGIN;
        self.height = (max_y - min_y).max(0.0) + 2.0 * MARGIN;
    }
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo.is_finite() {
        (lo, hi)
    } else {
        (0.0, 0.0)
    }
}

fn shape_kind(n: &crate::model::Node) -> ShapeKind {
    match &n.kind {
        NodeKind::StartEvent { .. } => ShapeKind::Start,
        NodeKind::EndEvent {
            trigger: EventTrigger::Error { .. },
        } => ShapeKind::ErrorEnd,
        NodeKind::EndEvent { .. } => ShapeKind::End,
        NodeKind::ExclusiveGateway { .. } => ShapeKind::ExclusiveGateway,
        NodeKind::ParallelGateway => ShapeKind::ParallelGateway,
        NodeKind::ServiceTask(_) if n.channel_call().is_some() => ShapeKind::Call,
        NodeKind::ServiceTask(_) => ShapeKind::Task,
        NodeKind::BoundaryEvent { .. } => ShapeKind::Boundary,
        NodeKind::IntermediateCatchEvent { .. } => ShapeKind::Intermediate,
        NodeKind::SubProcess { .. } => ShapeKind::SubProcess,
        NodeKind::Other if n.element.ends_with("Task") || n.element == "task" => ShapeKind::Task,
        NodeKind::Other => ShapeKind::Other,
    }
}

/// Whether two flows may run along one line: they leave one node or enter
/// one node.
fn may_share(a: &DiagramFlow, b: &DiagramFlow) -> bool {
    a.source == b.source || a.target == b.target
}

/// Whether two polylines run together along a stretch longer than a
/// point (both horizontal or both vertical on the same line, overlapping).
fn shares(a: &[Point], b: &[Point]) -> bool {
    a.windows(2)
        .any(|s| b.windows(2).any(|t| overlap(s[0], s[1], t[0], t[1]) > 1.0))
}

/// How long two axis-parallel segments run together (0 when they do not).
fn overlap(a0: Point, a1: Point, b0: Point, b1: Point) -> f64 {
    let close = |x: f64, y: f64| (x - y).abs() < 0.5;
    let run = |lo0: f64, hi0: f64, lo1: f64, hi1: f64| {
        (hi0.max(lo0).min(hi1.max(lo1)) - lo0.min(hi0).max(lo1.min(hi1))).max(0.0)
    };
    let horizontal = |p: Point, q: Point| close(p.y, q.y) && !close(p.x, q.x);
    let vertical = |p: Point, q: Point| close(p.x, q.x) && !close(p.y, q.y);
    if horizontal(a0, a1) && horizontal(b0, b1) && close(a0.y, b0.y) {
        run(a0.x, a1.x, b0.x, b1.x)
    } else if vertical(a0, a1) && vertical(b0, b1) && close(a0.x, b0.x) {
        run(a0.y, a1.y, b0.y, b1.y)
    } else {
        0.0
    }
}

/// Orthogonal route from `a` to `b`: across at `a`'s height to the middle,
/// then to `b`'s height, then across.
fn elbow(out: &mut Vec<Point>, a: Point, b: Point) {
    if (a.y - b.y).abs() > 0.5 && (a.x - b.x).abs() > 0.5 {
        let mx = (a.x + b.x) / 2.0;
        out.push(Point { x: mx, y: a.y });
        out.push(Point { x: mx, y: b.y });
    }
    out.push(b);
}

#[cfg(test)]
mod tests;
