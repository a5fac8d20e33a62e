//! The view model, read from the store: every panel's rows come from
//! persisted rows (instance, snapshot bytes, timers, history, incidents,
//! outbox, correlations), so what the console shows is what is persisted.
//! The only thing taken from the model is its shape (flow order, policies).

use std::collections::{BTreeSet, VecDeque};

use qflow_engine::runtime::decide::{Purpose, Status};
use qflow_engine::runtime::driver::final_state;
use qflow_engine::runtime::graph::{Graph, Kind};
use qflow_engine::runtime::snapshot::{canonical_string, Snapshot, TokenState};
use qflow_engine::store::Store;
use serde_json::Value;

use crate::engine_describe::{describe, waiting_text};
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
    let row = store
        .instance(src.instance)
        .map_err(err)?
        .ok_or_else(|| format!("no instance {} in the database", src.instance))?;
    let start = row.started_ms;
    let rel = |ms: i64| ms - start;
    let snap = Snapshot::decode(&row.snapshot).unwrap_or_default();
    let status = match row.status {
        Status::Running => InstanceStatus::Running,
        Status::Waiting => InstanceStatus::Waiting,
        Status::Completed => InstanceStatus::Completed,
        Status::Failed => InstanceStatus::Failed,
    };
    let failure = snap.get("failure").map(|f| FailureView {
        node: str_of(f, "node"),
        code: str_of(f, "code"),
        reason: str_of(f, "reason"),
        attempts: f.get("attempts").and_then(Value::as_u64).unwrap_or(0) as u32,
    });
    let timers_all = store.timers(src.instance).map_err(err)?;
    let armed: Vec<_> = timers_all.iter().filter(|t| t.armed).collect();
    let history = store.history(src.instance).map_err(err)?;
    let now_abs = src.now_abs_ms.unwrap_or(row.updated_ms).max(row.updated_ms);
    let tokens = snap.frontier();

    let mut nodes = Vec::new();
    let visited: BTreeSet<&str> = history.iter().filter_map(|h| h.node.as_deref()).collect();
    // The node the keys act on: where the instance failed, else its first token.
    let current = failure
        .as_ref()
        .filter(|_| status == InstanceStatus::Failed)
        .map(|f| f.node.clone())
        .or_else(|| tokens.iter().map(|t| t.node.clone()).next());
    for id in flow_order(src.graph) {
        let Some(g) = src.graph.node(&id) else {
            continue;
        };
        let token = tokens.iter().find(|t| t.node == id);
        let due_of = |purpose: Option<Purpose>| {
            armed
                .iter()
                .filter(|t| t.node == id && purpose.is_none_or(|p| t.purpose == p))
                .map(|t| rel(t.due_ms))
                .min()
        };
        let retry_due = due_of(None);
        let is_call = matches!(g.kind, Kind::Task { call: Some(_), .. });
        let marked = snap.get(&format!("backoff.{id}")).is_some();
        let failed_here =
            status == InstanceStatus::Failed && failure.as_ref().is_some_and(|f| f.node == id);
        // Token states the console does not know yet (channel calls are
        // coming) must not break the build: they read by name.
        #[allow(unreachable_patterns)]
        let state = match token.map(|t| t.state) {
            _ if failed_here => NodeState::Failed,
            Some(TokenState::Ready) => NodeState::Active,
            Some(TokenState::Backoff) => NodeState::Parked {
                eligible_at_ms: retry_due.unwrap_or(rel(now_abs)),
            },
            Some(TokenState::Reconcile) => NodeState::WaitingReconciliation,
            // A call's token waits in `timer` whether its attempt is live or
            // dead: the backoff-window marker tells them apart.
            Some(TokenState::Timer) if is_call && marked => NodeState::Parked {
                eligible_at_ms: due_of(Some(Purpose::Retry)).unwrap_or(rel(now_abs)),
            },
            Some(TokenState::Timer) if is_call => NodeState::WaitingResponse {
                timeout_at_ms: due_of(Some(Purpose::Timeout)),
            },
            Some(TokenState::Timer) => NodeState::Timer {
                due_at_ms: retry_due.unwrap_or(rel(now_abs)),
            },
            Some(TokenState::Joined) => NodeState::Joined,
            Some(other) if other.as_str().contains("respon") || other.as_str().contains("call") => {
                NodeState::WaitingResponse {
                    timeout_at_ms: due_of(Some(Purpose::Timeout)),
                }
            }
            Some(other) if other.as_str().contains("backoff") => NodeState::Parked {
                eligible_at_ms: retry_due.unwrap_or(rel(now_abs)),
            },
            Some(_) => NodeState::Active,
            None if visited.contains(id.as_str()) => NodeState::Completed,
            None => NodeState::Idle,
        };
        let attempts = snap
            .get(&format!("attempts.{id}"))
            .map(|_| snap.attempts(&id))
            .or_else(|| {
                failure
                    .as_ref()
                    .filter(|f| f.node == id)
                    .map(|f| f.attempts)
            });
        nodes.push(NodeView {
            current: current.as_deref() == Some(id.as_str()),
            kind: kind_of(&g.kind),
            state,
            attempts,
            id,
        });
    }

    let snapshot = snap
        .entries()
        .map(|(k, v)| {
            let family = KeyFamily::of(k);
            let classification = (family == KeyFamily::Backoff).then(|| {
                // The marker carries the failure that parked the call.
                let code = v.get("code").and_then(Value::as_str).unwrap_or("?");
                let mut text = code.to_string();
                if let Some(c) = v.get("class").and_then(Value::as_str) {
                    text.push_str(&format!(" ({c})"));
                }
                text
            });
            SnapshotEntry {
                key: k.to_string(),
                value: canonical_string(v),
                family,
                classification,
            }
        })
        .collect();

    let timers = armed
        .iter()
        .map(|t| TimerView {
            kind: t.purpose.as_str().to_string(),
            node: t.node.clone(),
            due_at_ms: rel(t.due_ms),
            attempt: t.attempt,
        })
        .collect();
    let incidents = store
        .incidents(src.instance)
        .map_err(err)?
        .into_iter()
        .map(|i| IncidentView {
            node: i.node,
            kind: i.kind,
            message: i.message,
            opened_at_ms: rel(i.opened_ms),
            open: i.closed_ms.is_none(),
        })
        .collect();
    let outbox = store
        .outbox(src.instance)
        .map_err(err)?
        .into_iter()
        .map(|o| OutboxView {
            node: o.node,
            channel: o.channel,
            attempt: o.attempt,
            status: o.state,
            deliveries: o.deliveries,
            idempotency_key: o.idempotency_key,
        })
        .collect();
    let correlations = store
        .correlations(src.instance)
        .map_err(err)?
        .into_iter()
        .map(|c| {
            let state = if snap.get(&format!("backoff.{}", c.node)).is_some() {
                "in backoff"
            } else {
                "live"
            };
            CorrelationView {
                key: c.key,
                node: c.node,
                state: state.into(),
            }
        })
        .collect();
    let history_view = history
        .iter()
        .map(|h| HistoryView {
            seq: h.seq,
            at_ms: rel(h.at_ms),
            kind: h.kind.clone(),
            node: h.node.clone(),
            attempt: h.attempt,
            code: h.code.clone(),
            detail: describe(&h.detail_json()),
        })
        .collect();
    let waiting_for = (status == InstanceStatus::Waiting)
        .then(|| final_state(store, src.instance).ok())
        .flatten()
        .and_then(|v| waiting_text(&v));
    let schedule = schedule(
        src.graph,
        &snap,
        &history,
        &nodes,
        current.as_deref(),
        start,
        rel(now_abs),
        retry_next(&armed, start),
    );
    let channel_calls = src
        .graph
        .nodes
        .values()
        .any(|n| matches!(n.kind, Kind::Task { call: Some(_), .. }));
    Ok(View {
        source: src.label.to_string(),
        instance: InstanceView {
            id: row.id.clone(),
            process: row.process_id.clone(),
            status,
            failure,
            waiting_for,
        },
        now_ms: rel(now_abs),
        nodes,
        snapshot,
        timers,
        outbox,
        correlations,
        incidents,
        history: history_view,
        schedule,
        read_only: src.read_only,
        channel_calls,
    })
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn kind_of(k: &Kind) -> NodeKindView {
    // A node kind added to the engine later (a channel call) shows as a call.
    #[allow(unreachable_patterns)]
    match k {
        Kind::Start => NodeKindView::Start,
        Kind::End => NodeKindView::End,
        Kind::ErrorEnd { .. } => NodeKindView::ErrorEnd,
        Kind::Exclusive { .. } | Kind::Parallel => NodeKindView::Gateway,
        Kind::Task { call: Some(_), .. } => NodeKindView::Call,
        Kind::Task { .. } => NodeKindView::Task,
        Kind::Timer { .. } => NodeKindView::Timer,
        Kind::TimerBoundary { .. } | Kind::ErrorBoundary { .. } => NodeKindView::Boundary,
        _ => NodeKindView::Call,
    }
}

/// Breadth-first from the start event, each task followed by its boundaries;
/// nodes no flow reaches come last, by id.
pub fn flow_order(graph: &Graph) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = VecDeque::from([graph.start.clone()]);
    let boundaries = |task: &str| -> Vec<String> {
        graph
            .nodes
            .values()
            .filter(|n| match &n.kind {
                Kind::TimerBoundary { attached_to, .. } | Kind::ErrorBoundary { attached_to } => {
                    attached_to == task
                }
                _ => false,
            })
            .map(|n| n.id.clone())
            .collect()
    };
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(n) = graph.node(&id) else { continue };
        order.push(id.clone());
        for o in &n.outgoing {
            queue.push_back(o.target.clone());
        }
        for b in boundaries(&id) {
            queue.push_front(b);
        }
    }
    for id in graph.nodes.keys() {
        if !seen.contains(id) {
            order.push(id.clone());
        }
    }
    order
}
