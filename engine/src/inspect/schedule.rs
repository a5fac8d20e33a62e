//! The schedule plan of every node with a retry policy: the attempts made
//! (from the history) and the eligible times still to come, planned by the
//! policy ([`RetryPolicy::upcoming`], which steps the runtime's own decision
//! after a failure) with this instance's jitter, so the plan is the schedule
//! the runtime keeps if every attempt from here on fails.

use std::time::Duration;

use crate::instance::history::{Attempt, AttemptOutcome, HistoryEvent, Then, Verdict};
use crate::instance::snapshot::{Snapshot, TokenState};
use crate::instance::Purpose;
use crate::policy::{NextAttempt, RetryPolicy};
use crate::runtime::graph::{Graph, Kind};
use crate::store::TimerInfo;

use super::{HistoryItem, NodeInspection, NodeState};

/// At most this many attempts still to come are planned.
pub(super) const PLAN_LIMIT: usize = 12;

/// How one past attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptResult {
    Succeeded,
    /// Failed with this code and class (a call's failures have no class;
    /// a reconciled one says `reconciled: <as>`).
    Failed {
        code: String,
        class: String,
    },
    /// Not known yet: a live call, or an outcome waiting for reconciliation.
    Pending,
}

/// One attempt made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastAttempt {
    /// 1-based.
    pub n: u32,
    pub at_ms: i64,
    pub result: AttemptResult,
    /// A failed task attempt's own words from its handler (bounded).
    pub message: Option<String>,
}

/// One attempt still to come, if every attempt before it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedAttempt {
    pub n: u32,
    /// When it becomes eligible, with this instance's jitter.
    pub at_ms: i64,
}

/// A node's attempts so far and those its policy still plans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulePlan {
    pub node: String,
    /// The policy in one line (`6 attempts over at most 13 h 1 min`).
    pub policy: String,
    pub max_attempts: Option<u32>,
    /// Attempts counted against the budget so far: the node's counter, which
    /// a repair may carry over from attempts made under another node name or
    /// deployment, and which the runtime numbers the next attempt from.
    pub used: u32,
    /// Of `used`, those not in `done` (carried by a repair that kept the
    /// burned budget).
    pub carried: u32,
    /// This incarnation's attempts (a node entered again starts over).
    pub done: Vec<PastAttempt>,
    pub planned: Vec<PlannedAttempt>,
    /// When the first attempt started: the origin of `maxElapsed`.
    pub first_at_ms: Option<i64>,
    pub max_elapsed_ms: Option<i64>,
}

pub(super) fn plans(
    graph: &Graph,
    instance: &str,
    snap: &Snapshot,
    nodes: &[NodeInspection],
    armed: &[TimerInfo],
    history: &[HistoryItem],
    start: i64,
) -> Vec<SchedulePlan> {
    let now = history.last().map_or(0, |h| h.at_ms);
    nodes
        .iter()
        .filter_map(|n| {
            let g = graph.node(&n.id)?;
            let Kind::Task {
                policy: Some(policy),
                call,
                ..
            } = &g.kind
            else {
                return None;
            };
            // A call's attempt fails at its timeout or, earlier, when the
            // outbox poisons its request: the model's one rule.
            let timeout_ms = call.as_ref().map(|c| {
                let channel = qflow_model::policy::ChannelPolicy {
                    max_deliveries: c.max_deliveries,
                    delivery_interval: c.delivery_interval,
                    ..Default::default()
                };
                ms(qflow_model::policy::earliest_failure(
                    c.timeout, &channel, policy,
                ))
            });
            let latest = call.as_ref().and_then(|c| c.timeout);
            Some(plan(
                instance, n, policy, timeout_ms, latest, snap, armed, history, start, now,
            ))
        })
        .collect()
}

fn ms(d: std::time::Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

#[allow(clippy::too_many_arguments)]
fn plan(
    instance: &str,
    node: &NodeInspection,
    policy: &RetryPolicy,
    timeout_ms: Option<i64>,
    latest: Option<Duration>,
    snap: &Snapshot,
    armed: &[TimerInfo],
    history: &[HistoryItem],
    start: i64,
    now: i64,
) -> SchedulePlan {
    let id = node.id.as_str();
    let done = past(id, snap, history);
    let first_at = snap
        .first_attempt_ms(id)
        .map(|f| f - start)
        .or_else(|| done.first().map(|a| a.at_ms));
    let finished = matches!(
        node.state,
        NodeState::Completed
            | NodeState::Unknown
            | NodeState::Failed
            | NodeState::Idle
            | NodeState::WaitingReconciliation
    );
    // The runtime numbers the next attempt from the counter (a repair that
    // keeps the burned budget carries it over with no attempt lines under
    // this node), so the plan does too.
    let counted = snap.attempts(id);
    let last_seen = done.last().map_or(0, |a| a.n);
    let used = last_seen.max(counted);
    let mut planned = Vec::new();
    if !finished {
        let last = used;
        let due = |p: Purpose| {
            armed
                .iter()
                .find(|t| t.node == id && t.purpose == p)
                .map(|t| t.due_ms - start)
        };
        let live = done
            .last()
            .is_some_and(|a| a.result == AttemptResult::Pending);
        // The next attempt: parked on its retry timer; or after the live
        // call's timeout and the policy's delay; or now.
        let next = match (due(Purpose::Retry), due(Purpose::Timeout)) {
            (Some(d), _) => (last + 1, d, false),
            (None, Some(t)) if live => (last, t, true),
            _ => (last + 1, now, false),
        };
        let (n, at, in_flight) = next;
        let origin = first_at.unwrap_or(at);
        let since = |t: i64| Duration::from_millis((t - origin).max(0) as u64);
        let next = if in_flight {
            NextAttempt::InFlight {
                attempt: n,
                fails_at: since(at),
            }
        } else {
            NextAttempt::Due {
                attempt: n,
                at: since(at),
            }
        };
        // A call's attempt fails at its timeout; a task's at once.
        let takes = Duration::from_millis(timeout_ms.unwrap_or(0).max(0) as u64);
        planned = policy
            .upcoming(instance, id, next, takes, PLAN_LIMIT)
            .into_iter()
            .map(|u| PlannedAttempt {
                n: u.attempt,
                at_ms: origin + ms(u.since_first),
            })
            .collect();
    }
    SchedulePlan {
        node: id.to_string(),
        policy: {
            let wc =
                policy.worst_case(Duration::from_millis(timeout_ms.unwrap_or(0).max(0) as u64));
            // A registered task's waits may be a provider's retry-after:
            // the bound says how far that stretches it.
            // A call's "at most" covers attempts lasting until their
            // timeout too.
            match (timeout_ms, latest) {
                (None, _) => wc.with_retry_after(policy),
                (Some(_), Some(t)) => wc.with_latest_window(policy, t),
                (Some(_), None) => wc,
            }
            .summary()
        },
        max_attempts: policy.max_attempts,
        used,
        carried: used.saturating_sub(done.len() as u32),
        done,
        planned,
        first_at_ms: first_at,
        max_elapsed_ms: policy.max_elapsed.map(ms),
    }
}

/// This incarnation's attempts of `node`: from its last attempt 1 on.
fn past(node: &str, snap: &Snapshot, history: &[HistoryItem]) -> Vec<PastAttempt> {
    let mine: Vec<(usize, &HistoryItem, &Attempt)> = history
        .iter()
        .enumerate()
        .filter(|(_, h)| h.node.as_deref() == Some(node))
        .filter_map(|(i, h)| match h.line.as_ref().map(|l| &l.event) {
            Some(HistoryEvent::Attempt(a)) => Some((i, h, a)),
            _ => None,
        })
        .collect();
    let from = mine
        .iter()
        .rposition(|(_, _, a)| attempt_no(a) == 1)
        .unwrap_or(0);
    let mine = &mine[from..];
    let reconciling = snap
        .frontier()
        .iter()
        .any(|t| t.node == node && t.state == TokenState::Reconcile);
    mine.iter()
        .enumerate()
        .map(|(k, (i, h, a))| {
            let until = mine.get(k + 1).map_or(history.len(), |(j, _, _)| *j);
            let later = &history[i + 1..until];
            let result = match a {
                Attempt::Call(c) => call_result(node, c.attempt, later),
                Attempt::Task(t) => match t.outcome {
                    AttemptOutcome::Ok => AttemptResult::Succeeded,
                    _ if t.then == Some(Then::Reconcile) => {
                        // Its outcome is what the reconciliation said.
                        match reconciled_as(node, &history[i + 1..]) {
                            _ if reconciling => AttemptResult::Pending,
                            Some(crate::instance::Resolution::Succeeded) => {
                                AttemptResult::Succeeded
                            }
                            Some(r) => AttemptResult::Failed {
                                code: t.code.clone().unwrap_or_default(),
                                class: format!("reconciled: {}", r.as_str()),
                            },
                            None => AttemptResult::Pending,
                        }
                    }
                    _ => AttemptResult::Failed {
                        code: t.code.clone().unwrap_or_default(),
                        class: t.class.map_or("error", |c| c.as_str()).to_string(),
                    },
                },
            };
            PastAttempt {
                n: attempt_no(a),
                at_ms: h.at_ms,
                result,
                message: match a {
                    Attempt::Task(t) => t.message.clone(),
                    Attempt::Call(_) => None,
                },
            }
        })
        .collect()
}

fn attempt_no(a: &Attempt) -> u32 {
    match a {
        Attempt::Call(c) => c.attempt,
        Attempt::Task(t) => t.attempt,
    }
}

/// How the first reconciliation of `node` in `after` resolved it.
fn reconciled_as(node: &str, after: &[HistoryItem]) -> Option<crate::instance::Resolution> {
    after
        .iter()
        .filter(|h| h.node.as_deref() == Some(node))
        .find_map(|h| match h.line.as_ref().map(|l| &l.event) {
            Some(HistoryEvent::Reconciled { as_, .. }) => Some(*as_),
            _ => None,
        })
}

/// How a call's attempt `n` ended: its `call-failed` line, else an accepted
/// response before the next emission, else it is still live.
fn call_result(node: &str, n: u32, later: &[HistoryItem]) -> AttemptResult {
    for h in later.iter().filter(|h| h.node.as_deref() == Some(node)) {
        match h.line.as_ref().map(|l| &l.event) {
            Some(HistoryEvent::CallFailed { attempt, code, .. }) if *attempt == n => {
                return AttemptResult::Failed {
                    code: code.clone(),
                    class: String::new(),
                }
            }
            Some(HistoryEvent::Response {
                verdict: Verdict::Accepted,
                ..
            }) => return AttemptResult::Succeeded,
            _ => {}
        }
    }
    AttemptResult::Pending
}
