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

pub(super) fn check(process: &Process, out: &mut Vec<Diagnostic>) {
    let nodes = &process.nodes;
    let skipped = skipped_nodes(process);
    // Scopes are judged only when they have a start event (`None` is the process).
    let judged: foldhash::HashSet<Option<usize>> = nodes
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
    let mut edges: Vec<(usize, usize)> = Vec::with_capacity(process.flows.len());
    for f in &process.flows {
        let (Some(s), Some(t)) = (&f.source, &f.target) else {
            continue;
        };
        if let (Some(&s), Some(&t)) = (index.get(s.value.as_str()), index.get(t.value.as_str())) {
            if nodes[s].scope == nodes[t].scope {
                edges.push((s, t));
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
                    edges.push((h, i));
                }
            }
        }
    }
    let succ = Successors::new(nodes.len(), &edges);
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
        for &next in succ.of(i) {
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

/// Each node's successors in one array (`targets[starts[i]..starts[i + 1]]`),
/// not a `Vec` per node: 20,000 small allocations on a large process.
struct Successors {
    starts: Vec<usize>,
    targets: Vec<usize>,
}

impl Successors {
    fn new(nodes: usize, edges: &[(usize, usize)]) -> Self {
        let mut starts = vec![0usize; nodes + 1];
        for &(s, _) in edges {
            starts[s + 1] += 1;
        }
        for i in 0..nodes {
            starts[i + 1] += starts[i];
        }
        let mut fill = starts.clone();
        let mut targets = vec![0usize; edges.len()];
        for &(s, t) in edges {
            targets[fill[s]] = t;
            fill[s] += 1;
        }
        Successors { starts, targets }
    }

    fn of(&self, i: usize) -> &[usize] {
        &self.targets[self.starts[i]..self.starts[i + 1]]
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
