//! An instance's state on its diagram: which class and note each node
//! carries, which flows the instance has taken. Computed once here from the
//! inspection model so the SVG and the console show the same marks (the
//! marks themselves are plain data of the model layer's diagram).

use std::collections::{BTreeMap, BTreeSet};

use crate::duration::compact_ms;
use crate::inspect::{Inspection, NodeState};
use crate::instance::history::HistoryEvent;

use super::{Diagram, DiagramState, NodeMark};

/// The state of `inspection`'s instance on its `diagram`: each node's
/// class, note and attempts, and the flows it has taken.
pub fn state_of(diagram: &Diagram, inspection: &Inspection) -> DiagramState {
    let mut nodes = BTreeMap::new();
    for n in &inspection.nodes {
        let (class, note) = match &n.state {
            NodeState::Idle => ("idle", None),
            NodeState::Active => ("token", Some("token here".to_string())),
            NodeState::Parked { eligible_at_ms } => (
                "parked",
                Some(format!("parked until +{}", compact_ms(*eligible_at_ms))),
            ),
            NodeState::Timer { due_at_ms } => (
                "timer",
                Some(format!("timer until +{}", compact_ms(*due_at_ms))),
            ),
            NodeState::WaitingResponse { timeout_at_ms } => (
                "waiting",
                Some(match timeout_at_ms {
                    Some(t) => format!("awaits response until +{}", compact_ms(*t)),
                    None => "awaits response".to_string(),
                }),
            ),
            NodeState::WaitingReconciliation => {
                ("reconcile", Some("awaits reconciliation".to_string()))
            }
            NodeState::Joined => ("joined", Some("joined, waits for branches".to_string())),
            NodeState::Failed => (
                "failed",
                Some(match &inspection.failure {
                    Some(f) => format!("FAILED {}", f.code),
                    None => "FAILED".to_string(),
                }),
            ),
            NodeState::Completed => ("done", None),
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
    let reached = |id: &str| nodes.get(id).is_some_and(|m| m.class != "idle");
    let left = |id: &str| {
        nodes
            .get(id)
            .is_some_and(|m| m.class == "done" || m.class == "failed")
    };
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
