//! The view model, read from the store: the engine's [`Inspection`] of the
//! instance (everything persisted: instance, snapshot, timers, history,
//! incidents, outbox, correlations, node states) mapped onto the console's
//! panels. This module computes nothing about the instance; it only says
//! how the console shows what the inspection says.

use qflow_engine::inspect::{self, Inspection, NodeKind, Waiting};
use qflow_engine::instance::Status;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::store::Store;

use crate::engine_describe::describe;
use crate::engine_schedule::{retry_next, schedule};
use crate::view::*;

/// Everything the view needs besides the store.
pub struct Source<'a> {
    pub store: &'a Store,
    pub graph: &'a Graph,
    pub instance: &'a str,
    /// Virtual now on the run's clock (absolute); `None`: the last decision.
    pub now_abs_ms: Option<i64>,
    pub label: &'a str,
    pub read_only: bool,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Build the view of one instance from the store.
pub fn build(src: &Source) -> Result<View, String> {
    let store = src.store;
    let i = Inspection::read(store, src.graph, src.instance).map_err(|e| match e {
        qflow_engine::store::StoreError::NoInstance(id) => {
            format!("no instance {id} in the database")
        }
        e => err(e),
    })?;
    let start = i.started_ms;
    let now_abs = src.now_abs_ms.unwrap_or(i.updated_ms).max(i.updated_ms);
    let status = match i.status {
        Status::Running => InstanceStatus::Running,
        Status::Waiting => InstanceStatus::Waiting,
        Status::Completed => InstanceStatus::Completed,
        Status::Failed => InstanceStatus::Failed,
    };
    let failure = i.failure.as_ref().map(|f| FailureView {
        node: f.node.clone(),
        code: f.code.clone(),
        reason: f.reason.clone(),
        attempts: f.attempts.unwrap_or(0),
    });
    let nodes: Vec<NodeView> = i
        .nodes
        .iter()
        .map(|n| NodeView {
            current: i.current.as_deref() == Some(n.id.as_str()),
            kind: kind_of(n.kind),
            state: state_of(&n.state),
            attempts: n.attempts,
            id: n.id.clone(),
        })
        .collect();
    let snapshot = i
        .snapshot
        .iter()
        .map(|k| {
            let family = KeyFamily::of(&k.key);
            // The marker carries the failure that parked the call.
            let classification = (family == KeyFamily::Backoff)
                .then_some(k.marker.as_ref())
                .flatten()
                .map(|(code, class)| match class {
                    Some(c) => format!("{code} ({c})"),
                    None => code.clone(),
                });
            SnapshotEntry {
                key: k.key.clone(),
                value: k.value.clone(),
                family,
                classification,
            }
        })
        .collect();
    let timers = i
        .timers
        .iter()
        .map(|t| TimerView {
            kind: t.purpose.as_str().to_string(),
            node: t.node.clone(),
            due_at_ms: t.due_ms - start,
            attempt: t.attempt,
        })
        .collect();
    let incidents = i
        .incidents
        .iter()
        .map(|x| IncidentView {
            node: x.node.clone(),
            kind: x.kind.clone(),
            message: x.message.clone(),
            opened_at_ms: x.opened_ms - start,
            open: x.closed_ms.is_none(),
        })
        .collect();
    let outbox = i
        .outbox
        .iter()
        .map(|o| OutboxView {
            node: o.node.clone(),
            channel: o.channel.clone(),
            attempt: o.attempt,
            status: o.state.clone(),
            deliveries: o.deliveries,
            idempotency_key: o.idempotency_key.clone(),
        })
        .collect();
    let correlations = i
        .correlations
        .iter()
        .map(|c| CorrelationView {
            key: c.key.clone(),
            node: c.node.clone(),
            state: if c.in_backoff { "in backoff" } else { "live" }.into(),
        })
        .collect();
    let history = i
        .history
        .iter()
        .map(|h| HistoryView {
            seq: h.seq,
            at_ms: h.at_ms,
            kind: h.kind.clone(),
            node: h.node.clone(),
            attempt: h.attempt,
            code: h.code.clone(),
            detail: h.line.as_ref().map(describe).unwrap_or_default(),
        })
        .collect();
    let waiting_for = (i.status == Status::Waiting)
        .then(|| i.waiting.as_ref().map(waiting_text))
        .flatten();
    // The schedule panel still reads its rows itself (see engine_schedule).
    let rows = store.history(src.instance).map_err(err)?;
    let all_timers = store.timers(src.instance).map_err(err)?;
    let armed: Vec<_> = all_timers.iter().filter(|t| t.armed).collect();
    let snap = qflow_engine::runtime::snapshot::Snapshot::decode(
        &store
            .instance(src.instance)
            .map_err(err)?
            .map(|r| r.snapshot)
            .unwrap_or_default(),
    )
    .unwrap_or_default();
    let schedule = schedule(
        src.graph,
        &snap,
        &rows,
        &nodes,
        i.current.as_deref(),
        start,
        now_abs - start,
        retry_next(&armed, start),
    );
    Ok(View {
        source: src.label.to_string(),
        instance: InstanceView {
            id: i.id.clone(),
            process: i.process.clone(),
            status,
            failure,
            waiting_for,
        },
        now_ms: now_abs - start,
        nodes,
        snapshot,
        timers,
        outbox,
        correlations,
        incidents,
        history,
        schedule,
        read_only: src.read_only,
        channel_calls: i.channel_calls,
    })
}

/// What a waiting instance waits for, in words.
fn waiting_text(w: &Waiting) -> String {
    match w {
        Waiting::Reconciliation { node, .. } => format!("reconciliation of {node}"),
        Waiting::Timer {
            node,
            purpose,
            due_ms,
        } => format!(
            "{} of {node} at {}",
            inspect::waiting_for(*purpose),
            crate::fmt::at(*due_ms)
        ),
        Waiting::Nothing { .. } => "nothing it can be given locally".to_string(),
    }
}

fn state_of(s: &inspect::NodeState) -> NodeState {
    match *s {
        inspect::NodeState::Idle => NodeState::Idle,
        inspect::NodeState::Active => NodeState::Active,
        inspect::NodeState::Parked { eligible_at_ms } => NodeState::Parked { eligible_at_ms },
        inspect::NodeState::Timer { due_at_ms } => NodeState::Timer { due_at_ms },
        inspect::NodeState::WaitingResponse { timeout_at_ms } => {
            NodeState::WaitingResponse { timeout_at_ms }
        }
        inspect::NodeState::WaitingReconciliation => NodeState::WaitingReconciliation,
        inspect::NodeState::Joined => NodeState::Joined,
        inspect::NodeState::Failed => NodeState::Failed,
        inspect::NodeState::Completed => NodeState::Completed,
    }
}

fn kind_of(k: NodeKind) -> NodeKindView {
    match k {
        NodeKind::Start => NodeKindView::Start,
        NodeKind::End => NodeKindView::End,
        NodeKind::ErrorEnd => NodeKindView::ErrorEnd,
        NodeKind::Gateway => NodeKindView::Gateway,
        NodeKind::Task => NodeKindView::Task,
        NodeKind::Call => NodeKindView::Call,
        NodeKind::Timer => NodeKindView::Timer,
        NodeKind::Boundary => NodeKindView::Boundary,
    }
}
