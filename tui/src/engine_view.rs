//! The view model, read from the store: every panel's rows come from
//! persisted rows (instance, snapshot bytes, timers, history, incidents,
//! outbox, correlations), so what the console shows is what is persisted.
//! The only thing taken from the model is its shape (flow order, policies).

use std::collections::{BTreeSet, VecDeque};

use qflow_engine::console_api;
use qflow_engine::runtime::decide::{Purpose, Status};
use qflow_engine::runtime::driver::final_state;
use qflow_engine::runtime::graph::{Graph, Kind};
use qflow_engine::runtime::snapshot::{canonical_string, Snapshot, TokenState};
use qflow_engine::store::{HistoryRow, Store};
use serde_json::Value;

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
    let outbox = console_api::outbox(store, src.instance)
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
    let correlations = console_api::correlations(store, src.instance)
        .map_err(err)?
        .into_iter()
        .map(|c| {
            let state = if snap.get(&format!("backoff.{}", c.node)).is_some() {
                "in backoff window"
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

/// When each node's next attempt can start, from its armed timers: a retry
/// timer is that time; a live call's timeout is the earliest its attempt can
/// fail (the next attempt comes a backoff delay after it).
fn retry_next(
    armed: &[&qflow_engine::store::TimerInfo],
    start: i64,
) -> Vec<(String, Purpose, i64)> {
    armed
        .iter()
        .filter(|t| matches!(t.purpose, Purpose::Retry | Purpose::Timeout))
        .map(|t| (t.node.clone(), t.purpose, t.due_ms - start))
        .collect()
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

/// What a waiting instance waits for, from the driver's final-state line.
fn waiting_text(v: &Value) -> Option<String> {
    if v.get("status").and_then(Value::as_str) != Some("waiting") {
        return None;
    }
    let what = v.get("for").and_then(Value::as_str)?;
    let node = v.get("node").and_then(Value::as_str);
    let due = v
        .get("due_s")
        .and_then(Value::as_f64)
        .map(|s| (s * 1000.0) as i64);
    Some(match (node, due) {
        (Some(n), Some(d)) => format!("{what} of {n} at {}", crate::fmt::at(d)),
        (Some(n), None) => format!("{what} of {n}"),
        _ => what.to_string(),
    })
}

/// A decision line in a few words, without the fields the history panel
/// already shows in columns.
pub fn describe(line: &Value) -> String {
    let Some(m) = line.as_object() else {
        return String::new();
    };
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    let secs = |k: &str| {
        m.get(k)
            .and_then(Value::as_f64)
            .map(|x| crate::fmt::at((x * 1000.0) as i64))
    };
    let mut parts: Vec<String> = Vec::new();
    match m.get("kind").and_then(Value::as_str) {
        Some("attempt") | Some("call-failed") => {
            // A call's attempt is a request emission: say where it went.
            if let Some(ch) = s("channel") {
                if m.get("redrive") == Some(&Value::Bool(true)) {
                    parts.push("re-drive:".into());
                }
                parts.push(format!("request to {ch}"));
                parts.extend(secs("timeout_at_s").map(|t| format!("timeout {t}")));
            }
            parts.extend(s("outcome").map(str::to_string));
            parts.extend(s("class").map(str::to_string));
            match s("then") {
                Some("backoff") => parts.push(format!(
                    "→ #{} at {}",
                    m.get("next_attempt").and_then(Value::as_u64).unwrap_or(0),
                    secs("next_at_s").unwrap_or_default()
                )),
                Some(other) => parts.push(format!("→ {other}")),
                None => {}
            }
        }
        Some("delivery") => {
            parts.extend(s("outcome").map(str::to_string));
            if let Some(n) = m.get("deliveries").and_then(Value::as_u64) {
                parts.push(format!("×{n}"));
            }
            if m.get("poisoned") == Some(&Value::Bool(true)) {
                parts.push("POISONED".into());
            }
            parts.extend(secs("next_delivery_at_s").map(|t| format!("next {t}")));
            parts.extend(secs("respond_at_s").map(|t| format!("answer {t}")));
            if m.get("silent") == Some(&Value::Bool(true)) {
                parts.push("counterpart silent".into());
            }
        }
        Some("response") => {
            parts.extend(s("verdict").map(str::to_string));
            parts.extend(s("idempotencyKey").map(|k| format!("to {k}")));
            parts.extend(s("reason").map(|r| format!("· {r}")));
        }
        Some("failed") => {
            parts.extend(s("reason").map(str::to_string));
            if let Some(a) = m.get("attempts").and_then(Value::as_u64) {
                parts.push(format!("after {a} attempts"));
            }
        }
        Some("ignored") => {
            parts.extend(s("event").map(|e| format!("{e}:")));
            parts.extend(s("reason").map(str::to_string));
        }
        Some("wait") => {
            parts.extend(s("for").map(|f| format!("for {f}")));
            parts.extend(secs("until_s").map(|u| format!("until {u}")));
        }
        Some("reconciled") => parts.extend(s("as").map(|a| format!("as {a}"))),
        _ => {}
    }
    if let Some(Value::Array(to)) = m.get("to") {
        let to: Vec<&str> = to.iter().filter_map(Value::as_str).collect();
        if !to.is_empty() {
            parts.push(format!("→ {}", to.join(", ")));
        }
    }
    parts.join(" ")
}

/// The schedule of the task that matters now: the current node if it is a
/// task with a policy, else the last such task in the history.
#[allow(clippy::too_many_arguments)]
fn schedule(
    graph: &Graph,
    snap: &Snapshot,
    history: &[HistoryRow],
    nodes: &[NodeView],
    current: Option<&str>,
    start: i64,
    now: i64,
    retry_due: Vec<(String, Purpose, i64)>,
) -> Option<ScheduleView> {
    let has_policy = |id: &str| {
        matches!(
            graph.node(id).map(|n| &n.kind),
            Some(Kind::Task {
                policy: Some(_),
                ..
            })
        )
    };
    let node = current
        .filter(|c| has_policy(c))
        .map(str::to_string)
        .or_else(|| {
            history
                .iter()
                .rev()
                .filter_map(|h| h.node.as_deref())
                .find(|n| has_policy(n))
                .map(str::to_string)
        })
        .or_else(|| nodes.iter().map(|n| n.id.clone()).find(|n| has_policy(n)))?;
    let Some(Kind::Task {
        policy: Some(policy),
        ..
    }) = graph.node(&node).map(|n| &n.kind)
    else {
        return None;
    };
    // This incarnation's attempts: from the last attempt #1 of the node on.
    let attempts: Vec<&HistoryRow> = history
        .iter()
        .filter(|h| h.kind == "attempt" && h.node.as_deref() == Some(&node))
        .collect();
    let from = attempts
        .iter()
        .rposition(|h| h.attempt == Some(1))
        .unwrap_or(0);
    let reconciling = snap
        .frontier()
        .iter()
        .any(|t| t.node == node && t.state == TokenState::Reconcile);
    let is_call = matches!(
        graph.node(&node).map(|n| &n.kind),
        Some(Kind::Task { call: Some(_), .. })
    );
    let mine = &attempts[from..];
    let done: Vec<AttemptMark> = mine
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let d = h.detail_json();
            let until = mine.get(i + 1).map_or(i64::MAX, |next| next.seq);
            let outcome = match d.get("outcome").and_then(Value::as_str) {
                _ if is_call => call_outcome(history, &node, h, until),
                Some("ok") => AttemptOutcome::Succeeded,
                _ if d.get("then").and_then(Value::as_str) == Some("reconcile") => {
                    // Its outcome is what the operator's reconciliation said.
                    match reconciled_as(history, &node, h.seq) {
                        _ if reconciling => AttemptOutcome::Pending,
                        Some("succeeded") => AttemptOutcome::Succeeded,
                        Some(r) => AttemptOutcome::Failed {
                            code: h.code.clone().unwrap_or_default(),
                            class: format!("reconciled: {r}"),
                        },
                        None => AttemptOutcome::Pending,
                    }
                }
                _ => AttemptOutcome::Failed {
                    code: h.code.clone().unwrap_or_default(),
                    class: d
                        .get("class")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string(),
                },
            };
            AttemptMark {
                n: h.attempt.unwrap_or(0),
                at_ms: h.at_ms - start,
                outcome,
            }
        })
        .collect();
    let first_at = snap
        .first_attempt_ms(&node)
        .map(|f| f - start)
        .or_else(|| done.first().map(|a| a.at_ms));
    let max_elapsed = policy.max_elapsed.map(|d| d.as_millis() as i64);
    let finished = nodes.iter().any(|n| {
        n.id == node
            && matches!(
                n.state,
                NodeState::Completed | NodeState::Failed | NodeState::Idle
            )
    }) || reconciling;
    let mut planned = Vec::new();
    if !finished {
        let last = done.last().map_or(0, |a| a.n);
        let due = |p: Purpose| {
            retry_due
                .iter()
                .find(|(n, purpose, _)| *n == node && *purpose == p)
                .map(|(_, _, d)| *d)
        };
        let live = done
            .last()
            .is_some_and(|a| a.outcome == AttemptOutcome::Pending);
        let (mut n, mut at) = match (due(Purpose::Retry), due(Purpose::Timeout)) {
            (Some(d), _) => (last + 1, d),
            (None, Some(t)) if live => (
                last + 1,
                t + policy.delay_before(last + 1).as_millis() as i64,
            ),
            _ => (last + 1, now),
        };
        let origin = first_at.unwrap_or(at);
        while policy.max_attempts.is_none_or(|m| n <= m) && planned.len() < 12 {
            if max_elapsed.is_some_and(|e| at - origin > e) {
                break;
            }
            planned.push(PlannedMark { n, at_ms: at });
            n += 1;
            at += policy.delay_before(n).as_millis() as i64;
        }
    }
    Some(ScheduleView {
        node,
        policy: policy.summary(),
        max_attempts: policy.max_attempts,
        done,
        planned,
        first_at_ms: first_at,
        max_elapsed_ms: max_elapsed,
    })
}

/// How the reconciliation after history row `after` of `node` resolved it.
fn reconciled_as<'a>(history: &'a [HistoryRow], node: &str, after: i64) -> Option<&'a str> {
    history
        .iter()
        .find(|h| h.seq > after && h.kind == "reconciled" && h.node.as_deref() == Some(node))
        .and_then(|h| {
            let d = h.detail_json();
            d.get("as").and_then(Value::as_str).and_then(|a| {
                ["succeeded", "failed", "retry"]
                    .into_iter()
                    .find(|x| *x == a)
            })
        })
}

/// How a channel call's attempt (a request emission, history row `h`) ended:
/// its `call-failed` row, else an accepted response before the next emission
/// (`until`), else it is still live.
fn call_outcome(history: &[HistoryRow], node: &str, h: &HistoryRow, until: i64) -> AttemptOutcome {
    let later = history
        .iter()
        .filter(|r| r.seq > h.seq && r.seq < until && r.node.as_deref() == Some(node));
    for r in later {
        match r.kind.as_str() {
            "call-failed" if r.attempt == h.attempt => {
                return AttemptOutcome::Failed {
                    code: r.code.clone().unwrap_or_default(),
                    class: String::new(),
                }
            }
            "response" if r.detail_json()["verdict"] == "accepted" => {
                return AttemptOutcome::Succeeded
            }
            _ => {}
        }
    }
    AttemptOutcome::Pending
}
