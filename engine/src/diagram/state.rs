//! An instance's state on its diagram: which class and note each node
//! carries, which flows the instance has taken. Computed once here from the
//! inspection model so the SVG and the console show the same marks (the
//! marks themselves are plain data of the model layer's diagram).

use std::collections::{BTreeMap, BTreeSet};

use crate::duration::compact_ms;
use crate::inspect::{Inspection, NodeState};
use crate::instance::history::HistoryEvent;

use super::{Diagram, DiagramState, MarkClass, NodeMark};

/// The state of `inspection`'s instance on its `diagram`: each node's
/// class, note and attempts, and the flows it has taken.
pub fn state_of(diagram: &Diagram, inspection: &Inspection) -> DiagramState {
    let mut nodes = BTreeMap::new();
    for n in &inspection.nodes {
        let (class, note) = match &n.state {
            NodeState::Idle => (MarkClass::Idle, None),
            NodeState::Active => (MarkClass::Token, Some("token here".to_string())),
            NodeState::Parked { eligible_at_ms } => (
                MarkClass::Parked,
                Some(format!("parked until +{}", compact_ms(*eligible_at_ms))),
            ),
            NodeState::Timer { due_at_ms } => (
                MarkClass::Timer,
                Some(format!("timer until +{}", compact_ms(*due_at_ms))),
            ),
            NodeState::WaitingResponse { timeout_at_ms } => (
                MarkClass::Waiting,
                Some(match timeout_at_ms {
                    Some(t) => format!("awaits response until +{}", compact_ms(*t)),
                    None => "awaits response".to_string(),
                }),
            ),
            NodeState::WaitingReconciliation => (
                MarkClass::Reconcile,
                Some("awaits reconciliation".to_string()),
            ),
            NodeState::Joined => (
                MarkClass::Joined,
                Some("joined, waits for branches".to_string()),
            ),
            NodeState::Failed => (
                MarkClass::Failed,
                Some(match &inspection.failure {
                    Some(f) => format!("FAILED {}", f.code),
                    None => "FAILED".to_string(),
                }),
            ),
            NodeState::Completed => (MarkClass::Done, None),
            NodeState::Unknown => (
                MarkClass::Unknown,
                Some("state unknown: the snapshot is damaged".to_string()),
            ),
        };
        let incident = inspection
            .incidents
            .iter()
            .any(|i| i.node == n.id && i.closed_ms.is_none());
        nodes.insert(
            n.id.clone(),
            NodeMark {
                class,
                note,
                attempts: n.attempts.filter(|&a| a > 0),
                incident,
            },
        );
    }
    DiagramState {
        instance: inspection.id.clone(),
        status: inspection.status.as_str().to_string(),
        taken: taken(diagram, inspection, &nodes),
        nodes,
    }
}

/// A deployment's fleet laid on its diagram: each node's counts as its
/// note (`3 waiting · 12 parked · 1 to reconcile · 2 failed`), its class
/// the gravest of them (`failed`, `reconcile`, `parked`, then `token`),
/// an incident mark where instances FAILED or await a reconciliation
/// (their incidents are open). No flow is marked taken.
pub fn state_of_counts(
    process: &str,
    counts: &crate::inspect::fleet::DeploymentCounts,
) -> DiagramState {
    let mut nodes = BTreeMap::new();
    for (id, c) in &counts.nodes {
        let mut parts = Vec::new();
        if c.waiting > 0 {
            parts.push(format!("{} waiting", c.waiting));
        }
        if c.parked > 0 {
            parts.push(format!("{} parked", c.parked));
        }
        if c.reconcile > 0 {
            parts.push(format!("{} to reconcile", c.reconcile));
        }
        if c.failed > 0 {
            parts.push(format!("{} failed", c.failed));
        }
        if c.completed > 0 {
            parts.push(format!("{} completed", c.completed));
        }
        if parts.is_empty() {
            continue;
        }
        let class = if c.failed > 0 {
            MarkClass::Failed
        } else if c.reconcile > 0 {
            MarkClass::Reconcile
        } else if c.parked > 0 {
            MarkClass::Parked
        } else if c.waiting > 0 {
            MarkClass::Token
        } else {
            MarkClass::Done
        };
        nodes.insert(
            id.clone(),
            NodeMark {
                class,
                note: Some(parts.join(" \u{b7} ")),
                attempts: None,
                incident: c.failed > 0 || c.reconcile > 0,
            },
        );
    }
    DiagramState {
        instance: format!("fleet of {process}"),
        status: "fleet".to_string(),
        nodes,
        taken: BTreeSet::new(),
    }
}

/// A flow is taken when the history names it (an exclusive gateway's
/// choice); a flow out of an exclusive gateway the history does not name is
/// not. Any other flow is taken when both its ends were reached.
fn taken(
    diagram: &Diagram,
    inspection: &Inspection,
    nodes: &BTreeMap<String, NodeMark>,
) -> BTreeSet<String> {
    let mut chosen: BTreeSet<&str> = BTreeSet::new();
    for h in &inspection.history {
        if let Some(HistoryEvent::Gateway {
            flow: Some(flow), ..
        }) = h.line.as_ref().map(|l| &l.event)
        {
            chosen.insert(flow.as_str());
        }
    }
    let reached = |id: &str| nodes.get(id).is_some_and(|m| m.class.reached());
    let left = |id: &str| nodes.get(id).is_some_and(|m| m.class.left());
    let exclusives: BTreeSet<&str> = diagram
        .nodes
        .iter()
        .filter(|n| n.kind == super::ShapeKind::ExclusiveGateway)
        .map(|n| n.id.as_str())
        .collect();
    diagram
        .flows
        .iter()
        .filter(|f| {
            let exclusive = exclusives.contains(f.source.as_str());
            if exclusive {
                chosen.contains(f.id.as_str())
            } else {
                (left(&f.source) || reached(&f.source)) && reached(&f.target)
            }
        })
        .map(|f| f.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Diagram, MarkClass};

    fn diagram(body: &str) -> Diagram {
        let text = format!(
            r#"<?xml version="1.0"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d" targetNamespace="t">
<bpmn:process id="p" isExecutable="true">
{body}</bpmn:process></bpmn:definitions>"#
        );
        let defs = crate::analyze(&text).definitions.expect("a model");
        Diagram::of(&defs.processes[0], Some(&text))
    }

    fn flows(pairs: &[(&str, &str)]) -> String {
        pairs
            .iter()
            .enumerate()
            .map(|(i, (s, t))| {
                format!(r#"<bpmn:sequenceFlow id="f{i}" sourceRef="{s}" targetRef="{t}"/>"#)
            })
            .collect()
    }

    #[test]
    fn a_fleet_is_drawn_with_its_counts_on_each_node_the_gravest_first() {
        use crate::inspect::fleet::{DeploymentCounts, NodeCounts};
        let d = diagram(&format!(
            r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="a" name="Charge" q:task="x"/><bpmn:serviceTask id="b" q:task="y"/><bpmn:endEvent id="e"/>{}"#,
            flows(&[("s", "a"), ("a", "b"), ("b", "e")])
        ));
        let mut counts = DeploymentCounts::default();
        counts.nodes.insert(
            "a".into(),
            NodeCounts {
                waiting: 2,
                parked: 12,
                reconcile: 0,
                failed: 3,
                completed: 0,
            },
        );
        counts.nodes.insert(
            "b".into(),
            NodeCounts {
                waiting: 0,
                parked: 5,
                reconcile: 1,
                failed: 0,
                completed: 0,
            },
        );
        counts.nodes.insert(
            "e".into(),
            NodeCounts {
                completed: 7,
                ..NodeCounts::default()
            },
        );
        let state = super::state_of_counts("p", &counts);
        let a = &state.nodes["a"];
        assert_eq!(a.class, MarkClass::Failed);
        assert!(a.incident);
        assert_eq!(
            a.note.as_deref(),
            Some("2 waiting \u{b7} 12 parked \u{b7} 3 failed")
        );
        assert_eq!(state.nodes["b"].class, MarkClass::Reconcile);
        assert_eq!(
            state.nodes["b"].note.as_deref(),
            Some("5 parked \u{b7} 1 to reconcile")
        );
        assert!(
            state.nodes["b"].incident,
            "an unknown outcome's incident is open"
        );
        // An end event: how many completed there, drawn as reached.
        assert_eq!(state.nodes["e"].class, MarkClass::Done);
        assert_eq!(state.nodes["e"].note.as_deref(), Some("7 completed"));
        assert!(!state.nodes["e"].incident);
        assert!(
            !state.nodes.contains_key("s"),
            "a node with no instance has no mark"
        );
        let drawn = crate::diagram::svg::svg(&d, Some(&state));
        assert!(drawn.contains("12 parked"), "{drawn}");
        assert!(state.taken.is_empty());
    }
}
