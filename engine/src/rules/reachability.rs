//! QF032 (every BPMN file): flow nodes no token can ever reach.
//!
//! A node unreachable from the start events of its scope is dead weight at
//! best and a modelling mistake at worst (a missing flow). Following sequence
//! flows from every start event; a boundary event is reachable when its host
//! is. Scopes without a start event (BPMN instantiates their source nodes
//! implicitly), event sub-processes, compensation handlers and link catch
//! events are entered by other means and are not judged.

use foldhash::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{Node, NodeKind, Process};

pub fn check(process: &Process, out: &mut Vec<Diagnostic>) {
    let nodes = &process.nodes;
    let skipped = skipped_nodes(process);
    // Scopes are judged only when they have a start event (`None` is the process).
    let judged: std::collections::HashSet<Option<usize>> = nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| !skipped[*i] && matches!(n.kind, NodeKind::StartEvent { .. }))
        .map(|(_, n)| n.scope)
        .collect();
    if judged.is_empty() {
        return;
    }
    let mut index: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(nodes.len(), Default::default());
    for (i, n) in nodes.iter().enumerate() {
        if !skipped[i] {
            index.entry(n.id()).or_insert(i);
        }
    }
    // Successors within a scope: sequence flows, and a host's boundary events.
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for f in &process.flows {
        let (Some(s), Some(t)) = (&f.source, &f.target) else {
            continue;
        };
        if let (Some(&s), Some(&t)) = (index.get(s.value.as_str()), index.get(t.value.as_str())) {
            if nodes[s].scope == nodes[t].scope {
                succ[s].push(t);
            }
        }
    }
    for (i, n) in nodes.iter().enumerate() {
        if let NodeKind::BoundaryEvent {
            attached_to: Some(host),
            ..
        } = &n.kind
        {
            if let Some(&h) = index.get(host.value.as_str()) {
                if !skipped[i] && nodes[h].scope == n.scope {
                    succ[h].push(i);
                }
            }
        }
    }
    let mut reached = vec![false; nodes.len()];
    let mut stack: Vec<usize> = (0..nodes.len())
        .filter(|&i| {
            !skipped[i]
                && judged.contains(&nodes[i].scope)
                && (matches!(nodes[i].kind, NodeKind::StartEvent { .. })
                    || is_link_catch(&nodes[i]))
        })
        .collect();
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut reached[i], true) {
            continue;
        }
        for &next in &succ[i] {
            if !reached[next] {
                stack.push(next);
            }
        }
    }
    for (i, n) in nodes.iter().enumerate() {
        if reached[i] || skipped[i] || !judged.contains(&n.scope) {
            continue;
        }
        // A boundary on an unreachable host is covered by the host's warning.
        if let NodeKind::BoundaryEvent {
            attached_to: Some(host),
            ..
        } = &n.kind
        {
            if index.get(host.value.as_str()).is_some_and(|&h| !reached[h]) {
                continue;
            }
        }
        out.push(
            Diagnostic::new(
                Code::QF032,
                n.name_span,
                format!(
                    "<{}> `{}` can never be reached from a start event",
                    n.element,
                    n.id()
                ),
            )
            .element(n.id())
            .label("unreachable")
            .help("connect it with a sequence flow from a node that is reached, or remove it (and its drawing)"),
        );
    }
}

/// Nodes entered by other means than a sequence flow from a start event, and
/// everything inside them.
fn skipped_nodes(process: &Process) -> Vec<bool> {
    let direct: Vec<bool> = process
        .nodes
        .iter()
        .map(|n| {
            n.for_compensation
                || matches!(
                    n.kind,
                    NodeKind::SubProcess {
                        triggered_by_event: true
                    }
                )
        })
        .collect();
    // Scope indices always point backwards (a container is read before its content).
    let mut skipped = direct.clone();
    for i in 0..process.nodes.len() {
        if let Some(s) = process.nodes[i].scope {
            if s < i && skipped[s] {
                skipped[i] = true;
            }
        }
    }
    skipped
}

fn is_link_catch(n: &Node) -> bool {
    matches!(n.kind, NodeKind::IntermediateCatchEvent { .. })
        && n.event_definitions
            .iter()
            .any(|e| e.local == "linkEventDefinition")
}
