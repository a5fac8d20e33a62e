//! The model's own drawing: `bpmndi:BPMNShape/dc:Bounds` and
//! `bpmndi:BPMNEdge/di:waypoint`, read by a pass of their own because the
//! loader's tree leaves the coordinate elements out.

use std::collections::HashMap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{elbow, Diagram, Placement, Point, Rect};

/// What the diagram section draws, by the id of the BPMN element.
#[derive(Debug, Default)]
pub(super) struct Drawing {
    shapes: HashMap<String, Rect>,
    edges: HashMap<String, Vec<Point>>,
}

fn attr(e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .and_then(|a| String::from_utf8(a.value.into_owned()).ok())
}

/// A DI number as bpmn-js reads it (`100px` is 100: [`crate::xml::parse_float`]).
fn number(e: &BytesStart<'_>, name: &[u8]) -> Option<f64> {
    Some(crate::xml::parse_float(&attr(e, name)?)).filter(|v| v.is_finite())
}

/// Read the diagram section of `source`; `None` when it has none (or the
/// text is not readable XML: then the layout is computed instead).
pub(super) fn read(source: &str) -> Option<Drawing> {
    let mut reader = Reader::from_str(source);
    let mut drawing = Drawing::default();
    // The element drawn by the open shape or edge, and whether a label
    // (whose bounds place its text, not the node) is open inside it.
    let mut shape: Option<String> = None;
    let mut edge: Option<String> = None;
    let mut in_label = false;
    loop {
        let event = reader.read_event().ok()?;
        let (e, empty) = match &event {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(e) => {
                match e.local_name().as_ref() {
                    b"BPMNShape" => shape = None,
                    b"BPMNEdge" => edge = None,
                    b"BPMNLabel" => in_label = false,
                    _ => {}
                }
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        match e.local_name().as_ref() {
            b"BPMNShape" if !empty => shape = attr(e, b"bpmnElement"),
            b"BPMNEdge" if !empty => edge = attr(e, b"bpmnElement"),
            b"BPMNLabel" if !empty => in_label = true,
            b"Bounds" if !in_label => {
                if let (Some(id), Some(x), Some(y), Some(w), Some(h)) = (
                    shape.as_ref(),
                    number(e, b"x"),
                    number(e, b"y"),
                    number(e, b"width"),
                    number(e, b"height"),
                ) {
                    drawing.shapes.insert(id.clone(), Rect { x, y, w, h });
                }
            }
            b"waypoint" => {
                if let (Some(id), Some(x), Some(y)) =
                    (edge.as_ref(), number(e, b"x"), number(e, b"y"))
                {
                    drawing
                        .edges
                        .entry(id.clone())
                        .or_default()
                        .push(Point { x, y });
                }
            }
            _ => {}
        }
    }
    (!drawing.shapes.is_empty()).then_some(drawing)
}

impl Drawing {
    /// Place `diagram` as drawn; `false` (and nothing changed) when the
    /// drawing misses a node, so the whole picture is laid out instead of
    /// mixing two coordinate systems.
    pub(super) fn place(&self, diagram: &mut Diagram) -> bool {
        if diagram
            .nodes
            .iter()
            .any(|n| !self.shapes.contains_key(&n.id))
        {
            return false;
        }
        for n in &mut diagram.nodes {
            n.rect = self.shapes[&n.id];
        }
        for f in &mut diagram.flows {
            match self.edges.get(&f.id).filter(|p| p.len() >= 2) {
                Some(points) => f.points = points.clone(),
                None => {
                    // An edge without waypoints: border to border.
                    let (s, t) = (self.shapes[&f.source], self.shapes[&f.target]);
                    let a = Point {
                        x: s.right(),
                        y: s.center().y,
                    };
                    let b = Point {
                        x: t.x,
                        y: t.center().y,
                    };
                    f.points = vec![a];
                    elbow(&mut f.points, a, b);
                }
            }
            let (s, t) = (self.shapes[&f.source], self.shapes[&f.target]);
            f.back = t.center().x < s.center().x;
        }
        diagram.placement = Placement::Drawn;
        true
    }
}
