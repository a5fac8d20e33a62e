//! The schedule panel's data, read from the store: the attempts a task made
//! (from its history rows) and those its policy still plans (from its armed
//! timers and the policy's delays).

use qflow_engine::runtime::decide::Purpose;
use qflow_engine::runtime::graph::{Graph, Kind};
use qflow_engine::runtime::snapshot::{Snapshot, TokenState};
use qflow_engine::store::{HistoryRow, TimerInfo};
use serde_json::Value;

use crate::view::*;

/// When each node's next attempt can start, from its armed timers: a retry
/// timer is that time; a live call's timeout is the earliest its attempt can
/// fail (the next attempt comes a backoff delay after it).
pub(crate) fn retry_next(armed: &[&TimerInfo], start: i64) -> Vec<(String, Purpose, i64)> {
    armed
        .iter()
        .filter(|t| matches!(t.purpose, Purpose::Retry | Purpose::Timeout))
        .map(|t| (t.node.clone(), t.purpose, t.due_ms - start))
        .collect()
}

/// The schedule of the task that matters now: the current node if it is a
/// task with a policy, else the last such task in the history.
#[allow(clippy::too_many_arguments)]
pub(crate) fn schedule(
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
