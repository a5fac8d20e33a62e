//! Rules on the diagram (bpmndi): QF109 (an element not drawn) and QF118
//! (shapes overlapping, or leaving their container).

use foldhash::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{Definitions, NodeKind, Process, ShapeBounds};
use crate::span::Span;

use super::{node_diag, what, Emit};

/// Elements bpmnlint expects a diagram to draw.
const DRAWN: &[&str] = &[
    "sequenceFlow",
    "participant",
    "lane",
    "messageFlow",
    "textAnnotation",
    "association",
    "group",
    "dataObjectReference",
    "dataStoreReference",
];

/// QF109 no-bpmndi: every flow element, participant, lane, artifact and
/// message flow has a shape or an edge.
pub(super) fn no_bpmndi(defs: &Definitions, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF109) {
        return;
    }
    let drawn: foldhash::HashSet<&str> = defs
        .diagram_elements
        .iter()
        .map(|d| d.bpmn_element.as_str())
        .collect();
    let flow_nodes: foldhash::HashSet<&str> = defs
        .processes
        .iter()
        .flat_map(|p| p.nodes.iter().map(|n| n.id()))
        .collect();
    for decl in &defs.ids {
        let id = decl.id.value.as_str();
        let visual = DRAWN.contains(&&*decl.element.local) || flow_nodes.contains(id);
        if visual && !drawn.contains(id) {
            e.push(
                Diagnostic::new(Code::QF109, decl.element.name_span, format!("<{}> `{id}` is missing from the diagram", decl.element.local))
                    .element(id)
                    .label("no BPMNShape or BPMNEdge draws it")
                    .help("open the model in a graphical modeller and lay it out, or add the bpmndi shape or edge"),
            );
        }
    }
}

/// A shape QF118 judges: a flow node of a process, or a data object or data
/// store reference (flow elements too, drawn as shapes; bpmnlint compares
/// them with the nodes of their container).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    /// (process, node)
    Node(usize, usize),
    /// index into `defs.ids`
    Data(usize),
}

/// QF118 no-overlapping-elements, as bpmnlint judges it: the participants of
/// one collaboration overlap; the shapes of one process or sub-process (its
/// flow nodes and data references) overlap, a boundary event and its host
/// aside; or a shape leaves its expanded sub-process or the pool drawing its
/// process (a data store reference may). Where an element is drawn twice,
/// the last drawing counts.
pub(super) fn overlapping(defs: &Definitions, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF118) || defs.shape_bounds.is_empty() {
        return;
    }
    // Bounds by drawn id (the last shape drawing it, as bpmnlint keeps it).
    let mut by_id: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(defs.shape_bounds.len(), Default::default());
    for (k, b) in defs.shape_bounds.iter().enumerate() {
        by_id.insert(
            defs.diagram_elements[b.diagram as usize]
                .bpmn_element
                .as_str(),
            k,
        );
    }
    let bounds = |id: &str| by_id.get(id).map(|&b| &defs.shape_bounds[b]);
    let mut overlaps: Vec<Item> = Vec::new();
    let mut outside: Vec<Item> = Vec::new();
    // Participants overlap within their collaboration.
    let collaborations: Vec<Span> = defs
        .ids
        .iter()
        .filter(|d| d.element.local == "collaboration")
        .map(|d| d.element.span)
        .collect();
    let collaboration_of = |at: usize| {
        collaborations
            .iter()
            .position(|c| c.start <= at && at < c.end)
    };
    let parts: Vec<(usize, Option<usize>, &ShapeBounds)> = defs
        .participants
        .iter()
        .enumerate()
        .filter_map(|(k, pa)| bounds(pa.id()).map(|b| (k, collaboration_of(pa.name_span.start), b)))
        .collect();
    let mut part_hits = vec![false; defs.participants.len()];
    for (a, (ka, ca, ba)) in parts.iter().enumerate() {
        for (kb, cb, bb) in &parts[a + 1..] {
            if ca == cb && collide(ba, bb) {
                part_hits[*ka] = true;
                part_hits[*kb] = true;
            }
        }
    }
    for (k, hit) in part_hits.iter().enumerate() {
        if *hit {
            let pa = &defs.participants[k];
            e.push(
                Diagnostic::new(
                    Code::QF118,
                    pa.name_span,
                    format!(
                        "<participant> `{}` overlaps another element in the diagram",
                        pa.id()
                    ),
                )
                .element(pa.id())
                .label("overlaps")
                .help("move the shapes apart in the diagram"),
            );
        }
    }
    // Data object and data store references: their process and sub-process,
    // found by where they are written.
    let mut data: Vec<(usize, Option<usize>, usize)> = Vec::new(); // (process, scope, id)
    for (k, d) in defs.ids.iter().enumerate() {
        if !matches!(
            &*d.element.local,
            "dataObjectReference" | "dataStoreReference"
        ) {
            continue;
        }
        let at = d.element.span.start;
        let Some(pi) = defs
            .processes
            .iter()
            .position(|p| p.span.start <= at && at < p.span.end)
        else {
            continue;
        };
        let scope = defs.processes[pi]
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.span.start < at && at < n.span.end)
            .max_by_key(|(_, n)| n.span.start)
            .map(|(i, _)| i);
        data.push((pi, scope, k));
    }
    for (pi, p) in defs.processes.iter().enumerate() {
        // The pool drawing this process, if any (the last participant naming it).
        let pool = p.id.as_ref().and_then(|pid| {
            let part = defs.participants.iter().rev().find(|pa| {
                pa.process_ref
                    .as_ref()
                    .is_some_and(|r| r.value == pid.value)
            })?;
            bounds(part.id())
        });
        // Group the process's drawn shapes by scope.
        let mut groups: HashMap<Option<usize>, Vec<(Item, &ShapeBounds)>> = HashMap::default();
        for (i, n) in p.nodes.iter().enumerate() {
            if let Some(b) = bounds(n.id()) {
                groups
                    .entry(n.scope)
                    .or_default()
                    .push((Item::Node(pi, i), b));
            }
        }
        for &(dp, scope, k) in &data {
            if dp == pi {
                if let Some(b) = bounds(&defs.ids[k].id.value) {
                    groups.entry(scope).or_default().push((Item::Data(k), b));
                }
            }
        }
        for (scope, mut shapes) in groups {
            let parent = match scope {
                None => pool,
                Some(s) => bounds(p.nodes[s].id()).filter(|b| b.expanded),
            };
            if let Some(parent) = parent {
                for (item, b) in &shapes {
                    let store = matches!(item, Item::Data(k) if defs.ids[*k].element.local == "dataStoreReference");
                    if !store && !inside(b, parent) {
                        outside.push(*item);
                    }
                }
            }
            // Sweep along x: only shapes whose x-ranges meet are compared.
            shapes.sort_by(|a, b| a.1.x.total_cmp(&b.1.x));
            for a in 0..shapes.len() {
                let (ia, ba) = shapes[a];
                for &(ib, bb) in &shapes[a + 1..] {
                    if bb.x > ba.x + ba.width {
                        break;
                    }
                    if let (Item::Node(_, na), Item::Node(_, nb)) = (ia, ib) {
                        if attached(p, na, nb) || attached(p, nb, na) {
                            continue;
                        }
                    }
                    if collide(ba, bb) {
                        overlaps.push(ia);
                        overlaps.push(ib);
                    }
                }
            }
        }
    }
    overlaps.sort_unstable();
    overlaps.dedup();
    outside.sort_unstable();
    outside.dedup();
    let diag = |item: Item, message: &str| match item {
        Item::Node(pi, i) => {
            let n = &defs.processes[pi].nodes[i];
            node_diag(Code::QF118, n, format!("{} {message}", what(n)))
        }
        Item::Data(k) => {
            let d = &defs.ids[k];
            Diagnostic::new(
                Code::QF118,
                d.element.name_span,
                format!("<{}> `{}` {message}", d.element.local, d.id.value),
            )
            .element(d.id.value.as_str())
        }
    };
    for item in overlaps {
        e.push(
            diag(item, "overlaps another element in the diagram")
                .label("overlaps")
                .help("move the shapes apart in the diagram"),
        );
    }
    for item in outside {
        e.push(
            diag(item, "lies outside its parent's boundary in the diagram")
                .label("outside its parent")
                .help("move the shape inside its pool or expanded sub-process"),
        );
    }
}

fn attached(p: &Process, boundary: usize, host: usize) -> bool {
    matches!(&p.nodes[boundary].kind, NodeKind::BoundaryEvent { attached_to: Some(a), .. } if a.value == p.nodes[host].id())
}

fn collide(a: &ShapeBounds, b: &ShapeBounds) -> bool {
    a.x + a.width >= b.x && b.x + b.width >= a.x && a.y + a.height >= b.y && b.y + b.height >= a.y
}

fn inside(child: &ShapeBounds, parent: &ShapeBounds) -> bool {
    child.x >= parent.x
        && child.y >= parent.y
        && child.x + child.width <= parent.x + parent.width
        && child.y + child.height <= parent.y + parent.height
}
