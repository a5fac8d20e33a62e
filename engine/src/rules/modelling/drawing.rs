//! Rules on the diagram (bpmndi): QF109 (an element not drawn) and QF118
//! (shapes overlapping, or leaving their container).

use foldhash::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{Definitions, NodeKind, Process};

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

/// QF118 no-overlapping-elements: shapes of one container overlap (a
/// boundary event and its host aside), or a shape leaves its expanded
/// sub-process or pool.
pub(super) fn overlapping(defs: &Definitions, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF118) || defs.shape_bounds.is_empty() {
        return;
    }
    // Bounds by drawn id.
    let mut by_id: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(defs.shape_bounds.len(), Default::default());
    for (k, b) in defs.shape_bounds.iter().enumerate() {
        by_id
            .entry(
                defs.diagram_elements[b.diagram as usize]
                    .bpmn_element
                    .as_str(),
            )
            .or_insert(k);
    }
    let mut overlaps: Vec<(usize, usize)> = Vec::new(); // (process, node) reported
    let mut outside: Vec<(usize, usize)> = Vec::new();
    // Participant overlaps.
    let parts: Vec<(usize, &crate::model::ShapeBounds)> = defs
        .participants
        .iter()
        .enumerate()
        .filter_map(|(k, pa)| by_id.get(pa.id()).map(|&b| (k, &defs.shape_bounds[b])))
        .collect();
    let mut part_hits = vec![false; defs.participants.len()];
    for (a, (ka, ba)) in parts.iter().enumerate() {
        for (kb, bb) in &parts[a + 1..] {
            if collide(ba, bb) {
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
    for (pi, p) in defs.processes.iter().enumerate() {
        // The pool drawing this process, if any.
        let pool = p.id.as_ref().and_then(|pid| {
            let part = defs.participants.iter().find(|pa| {
                pa.process_ref
                    .as_ref()
                    .is_some_and(|r| r.value == pid.value)
            })?;
            by_id.get(part.id()).map(|&b| &defs.shape_bounds[b])
        });
        // Group the process's drawn nodes by scope.
        let mut groups: HashMap<Option<usize>, Vec<(usize, &crate::model::ShapeBounds)>> =
            HashMap::default();
        for (i, n) in p.nodes.iter().enumerate() {
            if let Some(&b) = by_id.get(n.id()) {
                groups
                    .entry(n.scope)
                    .or_default()
                    .push((i, &defs.shape_bounds[b]));
            }
        }
        for (scope, mut shapes) in groups {
            let parent = match scope {
                None => pool,
                Some(s) => by_id
                    .get(p.nodes[s].id())
                    .map(|&b| &defs.shape_bounds[b])
                    .filter(|b| b.expanded),
            };
            if let Some(parent) = parent {
                for (i, b) in &shapes {
                    if !inside(b, parent) {
                        outside.push((pi, *i));
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
                    if attached(p, ia, ib) || attached(p, ib, ia) {
                        continue;
                    }
                    if collide(ba, bb) {
                        overlaps.push((pi, ia));
                        overlaps.push((pi, ib));
                    }
                }
            }
        }
    }
    overlaps.sort_unstable();
    overlaps.dedup();
    outside.sort_unstable();
    outside.dedup();
    for (pi, i) in overlaps {
        let n = &defs.processes[pi].nodes[i];
        e.push(
            node_diag(
                Code::QF118,
                n,
                format!("{} overlaps another element in the diagram", what(n)),
            )
            .label("overlaps")
            .help("move the shapes apart in the diagram"),
        );
    }
    for (pi, i) in outside {
        let n = &defs.processes[pi].nodes[i];
        e.push(
            node_diag(
                Code::QF118,
                n,
                format!(
                    "{} lies outside its parent's boundary in the diagram",
                    what(n)
                ),
            )
            .label("outside its parent")
            .help("move the shape inside its pool or expanded sub-process"),
        );
    }
}

fn attached(p: &Process, boundary: usize, host: usize) -> bool {
    matches!(&p.nodes[boundary].kind, NodeKind::BoundaryEvent { attached_to: Some(a), .. } if a.value == p.nodes[host].id())
}

fn collide(a: &crate::model::ShapeBounds, b: &crate::model::ShapeBounds) -> bool {
    a.x + a.width >= b.x && b.x + b.width >= a.x && a.y + a.height >= b.y && b.y + b.height >= a.y
}

fn inside(child: &crate::model::ShapeBounds, parent: &crate::model::ShapeBounds) -> bool {
    child.x >= parent.x
        && child.y >= parent.y
        && child.x + child.width <= parent.x + parent.width
        && child.y + child.height <= parent.y + parent.height
}
