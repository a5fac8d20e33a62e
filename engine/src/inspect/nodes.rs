//! Where each node of an instance stands, from its frontier, timers,
//! markers and history.

use std::collections::BTreeSet;

use crate::instance::snapshot::{Snapshot, TokenState};
use crate::instance::{Purpose, Status};
use crate::runtime::graph::{Graph, Kind};
use crate::store::TimerInfo;

use super::HistoryItem;

/// What kind of node it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Start,
    End,
    ErrorEnd,
    Gateway,
    /// A registered task (`q:task`).
    Task,
    /// A channel call (`q:channel`).
    Call,
    Timer,
    Boundary,
}

/// Where a node stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeState {
    /// Not reached (yet or at all).
    Idle,
    /// A token is ready: the next step executes it.
    Active,
    /// Parked in a backoff window until the next attempt is eligible.
    Parked { eligible_at_ms: i64 },
    /// Waiting on an intermediate timer.
    Timer { due_at_ms: i64 },
    /// A channel call's live attempt, waiting for the response until its
    /// timeout.
    WaitingResponse { timeout_at_ms: Option<i64> },
    /// An unknown outcome waiting for an operator's reconciliation.
    WaitingReconciliation,
    /// Arrived at a parallel join, waiting for the other branches.
    Joined,
    /// The node the instance failed at.
    Failed,
    /// Executed and left.
    Completed,
    /// Reached (its history says so), but where the instance stands is not
    /// known: the snapshot is damaged (`q.snapshot.damaged`), and a lenient
    /// reading would call every such node completed.
    Unknown,
}

/// One node of the model and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInspection {
    pub id: String,
    pub kind: NodeKind,
    pub state: NodeState,
    /// Failed attempts burned (`attempts.<node>`), or the failure record's
    /// count at the node the instance failed at.
    pub attempts: Option<u32>,
}

fn kind_of(k: &Kind) -> NodeKind {
    match k {
        Kind::Start => NodeKind::Start,
        Kind::End => NodeKind::End,
        Kind::ErrorEnd { .. } => NodeKind::ErrorEnd,
        Kind::Exclusive { .. } | Kind::Parallel => NodeKind::Gateway,
        Kind::Task { call: Some(_), .. } => NodeKind::Call,
        Kind::Task { .. } => NodeKind::Task,
        Kind::Timer { .. } => NodeKind::Timer,
        Kind::TimerBoundary { .. } | Kind::ErrorBoundary { .. } => NodeKind::Boundary,
    }
}

pub(super) fn nodes(
    graph: &Graph,
    snap: &Snapshot,
    status: Status,
    armed: &[TimerInfo],
    history: &[HistoryItem],
    start: i64,
    damaged: bool,
) -> Vec<NodeInspection> {
    let failure = snap.failure();
    let tokens = snap.frontier();
    let visited: BTreeSet<&str> = history.iter().filter_map(|h| h.node.as_deref()).collect();
    let last_ms = history.last().map_or(0, |h| h.at_ms);
    let mut out = Vec::new();
    for id in flow_order(graph) {
        let Some(g) = graph.node(&id) else { continue };
        let token = tokens.iter().find(|t| t.node == id);
        let due_of = |purpose: Option<Purpose>| {
            armed
                .iter()
                .filter(|t| t.node == id && purpose.is_none_or(|p| t.purpose == p))
                .map(|t| t.due_ms - start)
                .min()
        };
        let any_due = due_of(None);
        let is_call = g.call().is_some();
        let failed_here =
            status == Status::Failed && failure.as_ref().is_some_and(|f| f.node == id);
        let state = match token.map(|t| t.state) {
            _ if failed_here => NodeState::Failed,
            _ if damaged && visited.contains(id.as_str()) => NodeState::Unknown,
            Some(TokenState::Ready) => NodeState::Active,
            Some(TokenState::Backoff) => NodeState::Parked {
                eligible_at_ms: any_due.unwrap_or(last_ms),
            },
            Some(TokenState::Reconcile) => NodeState::WaitingReconciliation,
            // A call's token waits in `timer` whether its attempt is live or
            // dead: the backoff-window marker tells them apart.
            Some(TokenState::Timer) if is_call && snap.in_backoff(&id) => NodeState::Parked {
                eligible_at_ms: due_of(Some(Purpose::Retry)).unwrap_or(last_ms),
            },
            Some(TokenState::Timer) if is_call => NodeState::WaitingResponse {
                timeout_at_ms: due_of(Some(Purpose::Timeout)),
            },
            Some(TokenState::Timer) => NodeState::Timer {
                due_at_ms: any_due.unwrap_or(last_ms),
            },
            Some(TokenState::Joined) => NodeState::Joined,
            None if visited.contains(id.as_str()) => NodeState::Completed,
            None => NodeState::Idle,
        };
        // The counter; for a task without a policy that an operator
        // reconciled, the attempt its reconcile marker recorded.
        let attempts = snap
            .has_attempts(&id)
            .then(|| snap.attempts(&id))
            .or_else(|| snap.reconcile(&id).and_then(|m| m.attempt))
            .or_else(|| {
                failure
                    .as_ref()
                    .filter(|f| f.node == id)
                    .map(|f| f.attempts.unwrap_or(0))
            });
        out.push(NodeInspection {
            kind: kind_of(&g.kind),
            state,
            attempts,
            id,
        });
    }
    out
}

pub use qflow_runtime::graph::flow_order;
