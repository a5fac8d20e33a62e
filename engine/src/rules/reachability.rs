//! QF032 (every BPMN file): flow nodes no token can ever reach.
//!
//! A node unreachable from the start events of its scope is dead weight at
//! best and a modelling mistake at worst (a missing flow). Following sequence
//! flows from every start event; a boundary event is reachable when its host
//! is. Scopes without a start event (BPMN instantiates their source nodes
//! implicitly), event sub-processes, compensation handlers and link catch
//! events are entered by other means and are not judged.

use std::collections::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{Node, NodeKind, Process};

pub fn check(process: &Process, out: &mut Vec<Diagnostic>) {
    let skipped = skipped_nodes(process);
    let mut scopes: Vec<Option<usize>> = vec![None];
    scopes.extend(
        process
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| matches!(n.kind, NodeKind::SubProcess { .. }) && !skipped[*i])
            .map(|(i, _)| Some(i)),
    );
    for scope in scopes {
        check_scope(process, scope, &skipped, out);
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

fn check_scope(
    process: &Process,
    scope: Option<usize>,
    skipped: &[bool],
    out: &mut Vec<Diagnostic>,
) {
    let members: Vec<usize> = (0..process.nodes.len())
        .filter(|&i| process.nodes[i].scope == scope && !skipped[i])
        .collect();
    let starts: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| matches!(process.nodes[i].kind, NodeKind::StartEvent { .. }))
        .collect();
    if starts.is_empty() {
        return;
    }
    let mut index: HashMap<&str, usize> = HashMap::new();
    for &i in &members {
        index.entry(process.nodes[i].id()).or_insert(i);
    }
    let mut succ: HashMap<usize, Vec<usize>> = HashMap::new();
    for f in process.flows.iter().filter(|f| f.scope == scope) {
        let (Some(s), Some(t)) = (&f.source, &f.target) else {
            continue;
        };
        if let (Some(&s), Some(&t)) = (index.get(s.value.as_str()), index.get(t.value.as_str())) {
            succ.entry(s).or_default().push(t);
        }
    }
    let mut boundaries: HashMap<usize, Vec<usize>> = HashMap::new();
    for &i in &members {
        if let NodeKind::BoundaryEvent {
            attached_to: Some(host),
            ..
        } = &process.nodes[i].kind
        {
            if let Some(&h) = index.get(host.value.as_str()) {
                boundaries.entry(h).or_default().push(i);
            }
        }
    }
    let mut reached = vec![false; process.nodes.len()];
    let mut stack: Vec<usize> = starts;
    stack.extend(
        members
            .iter()
            .copied()
            .filter(|&i| is_link_catch(&process.nodes[i])),
    );
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut reached[i], true) {
            continue;
        }
        for next in succ
            .get(&i)
            .into_iter()
            .flatten()
            .chain(boundaries.get(&i).into_iter().flatten())
        {
            if !reached[*next] {
                stack.push(*next);
            }
        }
    }
    for &i in &members {
        if reached[i] {
            continue;
        }
        let n = &process.nodes[i];
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
                format!("<{}> `{}` can never be reached from a start event", n.element, n.id()),
            )
            .label("unreachable")
            .help("connect it with a sequence flow from a node that is reached, or remove it (and its drawing)"),
        );
    }
}
