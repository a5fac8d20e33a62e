//! Decisions on channel-call nodes (docs/runtime.md's table), each from
//! durable facts under the instance claim.
//!
//! A call node's token waits in state `timer` whether its attempt is live or
//! dead: through the frontier and the counter the two look the same. The
//! backoff-window marker `backoff.<node>` (set by the backoff park, carrying
//! the failure's code, removed by the re-drive) is what tells them apart:
//!
//! | event | marked (backoff window) | unmarked (live attempt) |
//! |---|---|---|
//! | response | refused: "that attempt is gone, a retry is pending" | resume the flow |
//! | retry timer due | re-drive: fresh request, key, timeout | stale residue: ignore |
//! | timeout due | stale residue: ignore | attempt failed (`q.timeout`) |
//! | poison wake | nothing | poisoned row for this node? attempt failed (`q.delivery.poisoned`) |
//!
//! Beyond the table ([`names`]): a response naming an earlier attempt's
//! idempotency key is refused as superseded on an unmarked node too.

use serde_json::{Map, Value};

use super::{catching, fatal, ignore, leave, ms, task_timers, Work};
use crate::graph::{Call, GNode, Graph, Kind};
use qflow_instance::codes::{POISONED, TIMEOUT};
use qflow_instance::event::{ChannelOutcome, DeliveryOutcome, Event};
use qflow_instance::history::{
    Attempt, CallAttempt, Delivered, HistoryEvent, Park, Secs, Then, Verdict,
};
use qflow_instance::rows::{Facts, OutboxRow, Purpose};
use qflow_instance::snapshot::TokenState;
use qflow_instance::{Abandon, IncidentKind, NewIncident, NewRequest, NewTimer, OutboxChange};
use qflow_model::policy::Next;

fn call_of(node: &GNode) -> Option<&Call> {
    match &node.kind {
        Kind::Task { call: Some(c), .. } => Some(c.as_ref()),
        _ => None,
    }
}

fn marked(w: &Work, node: &str) -> bool {
    w.snap.in_backoff(node)
}

/// The highest idempotency-key number `node` has sent: the durable key
/// ledger (read under the claim, outside the snapshot, so no damaged or
/// reset counter rewinds it), and for an instance written before the ledger
/// existed, what its snapshot counts (`keys_used.<node>` plus the burned
/// attempts). The next request's key is this plus one, so no key is ever
/// sent twice: the outbox refuses a reused key, and a counterpart
/// deduplicating on it would answer "already handled" for a request it
/// never saw.
fn keys_sent(facts: &Facts<'_>, w: &Work, node: &str) -> u32 {
    let counted = w.snap.keys_used(node).saturating_add(w.snap.attempts(node));
    ledger(facts, node).max(counted)
}

fn ledger(facts: &Facts<'_>, node: &str) -> u32 {
    facts.keys_sent.get(node).copied().unwrap_or(0)
}

/// The flow leaves a call node (answered, or its failure caught by a
/// boundary): its node-scoped keys go. A node the flow enters again needs
/// nothing kept here: the key ledger continues its keys.
fn leave_call_node(w: &mut Work, id: &str) {
    w.snap.clear_node(id);
}

fn waiting(w: &Work, node: &str) -> bool {
    w.tokens()
        .iter()
        .any(|t| t.node == node && t.state == TokenState::Timer)
}

/// Emit attempt `attempts + 1`: a request in the outbox with a fresh
/// idempotency key, the correlation (created once, kept across attempts), a
/// fresh timeout window. The token waits in state `timer`.
pub(super) fn emit(graph: &Graph, facts: &Facts<'_>, w: &mut Work, node: &GNode, redrive: bool) {
    let Some(call) = call_of(node) else { return };
    let id = node.id.as_str();
    let n = w.snap.attempts(id).saturating_add(1);
    let key_number = keys_sent(facts, w, id).saturating_add(1);
    let key = request_key(facts.instance_id, id, key_number);
    let due = call.timeout.map(|t| w.now_ms + ms(t));
    let payload = Value::Object(w.snap.variables().into_iter().collect::<Map<_, _>>());
    w.calls.emit.push(NewRequest {
        node: id.to_string(),
        channel: call.channel.clone(),
        operation: call.operation.clone(),
        attempt: n,
        idempotency_key: key.clone(),
        key_number,
        payload,
    });
    w.calls.correlate.push(id.to_string());
    if let Some(due) = due {
        w.arm.push(NewTimer {
            node: id.to_string(),
            purpose: Purpose::Timeout,
            due_ms: due,
            attempt: Some(n),
        });
    }
    if !redrive {
        // The task's timer boundaries run from its activation: this first
        // request (a call timed out by a boundary has no <q:timeout>).
        let now = w.now_ms;
        super::task::arm_boundaries(graph, facts, w, node, now);
    }
    let line = CallAttempt {
        attempt: n,
        channel: call.channel.clone(),
        idempotency_key: key,
        timeout_at_s: due.map(|d| w.rel(d)),
        operation: call.operation.clone(),
        // Resolved and re-parked in one step: a new incarnation of the wait.
        redrive: redrive.then_some(true),
        incarnation: redrive.then_some(n),
    };
    w.entry(Some(id), HistoryEvent::Attempt(Attempt::Call(line)));
}

/// A timeout or retry timer of a call node came due (already resolved).
pub(super) fn timer(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    node: &GNode,
    purpose: Purpose,
    ev: &Event,
) {
    let id = node.id.as_str();
    match (purpose, marked(w, id)) {
        (Purpose::Retry, true) if waiting(w, id) => {
            w.snap.clear_backoff_marker(id);
            emit(graph, facts, w, node, true);
        }
        (Purpose::Timeout, false) if waiting(w, id) => failed(graph, facts, w, node, TIMEOUT),
        (Purpose::Retry, _) => ignore(
            w,
            ev,
            "stale residue: the attempt is live, no retry is pending",
        ),
        _ => ignore(w, ev, "stale residue: the attempt it timed is gone"),
    }
}

/// The attempt of a call failed with one of its two failure codes.
fn failed(graph: &Graph, facts: &Facts<'_>, w: &mut Work, node: &GNode, code: &str) {
    let id = node.id.as_str();
    let Kind::Task {
        policy,
        error_boundaries,
        call: Some(call),
        ..
    } = &node.kind
    else {
        return;
    };
    let n = w.snap.attempts(id).saturating_add(1);
    // The attempt started when its timeout window opened.
    let timeout = facts
        .timers
        .iter()
        .find(|t| t.node == id && t.purpose == Purpose::Timeout);
    let emitted = match (timeout, call.timeout) {
        (Some(t), Some(window)) => t.due_ms - ms(window),
        _ => w.now_ms,
    };
    if let Some(t) = timeout {
        w.resolve.push(t.id);
    }
    let line = |then: Then, park: Option<Park>| HistoryEvent::CallFailed {
        attempt: n,
        code: code.to_string(),
        then,
        park,
    };
    let Some(policy) = policy else {
        // Without a policy: the catchable error it always was.
        match catching(error_boundaries, code) {
            Some(b) => {
                w.entry(Some(id), line(Then::Boundary, None));
                // The dead attempt's undelivered request is kept, abandoned.
                w.calls.abandon.push(Abandon {
                    node: Some(id.to_string()),
                    reason: format!(
                        "attempt {n} failed ({code}) and the error boundary {b} took the flow"
                    ),
                });
                w.take(id, TokenState::Timer);
                leave_call_node(w, id);
                w.resolve.extend(task_timers(graph, facts.timers, id));
                w.calls.retire.push(id.to_string());
                w.close_incidents.push(id.to_string());
                let bnode = graph.node(b).expect("compiled boundary");
                let to = leave(graph, w, bnode);
                w.entry(
                    Some(b),
                    HistoryEvent::Boundary {
                        from: id.to_string(),
                        code: Some(code.to_string()),
                        timer: None,
                        interrupting: None,
                        to,
                    },
                );
            }
            None => {
                w.entry(Some(id), line(Then::Failed, None));
                fatal(w, id, code, "uncaught-error", Some(n), None);
            }
        }
        return;
    };
    let first = w.snap.first_attempt_ms(id).unwrap_or(emitted);
    w.snap.set_attempts(id, n);
    w.snap.set_first_attempt_ms(id, first);
    let elapsed = std::time::Duration::from_millis((w.now_ms - first).max(0) as u64);
    match policy.next_after_failure(n, code, None, elapsed, facts.instance_id, id) {
        Next::Retry { attempt, delay } => {
            // The backoff park withdraws the dead attempt's undelivered
            // requests (see the store): the one place a row is deleted.
            w.calls.withdraw.push(id.to_string());
            let due = w.now_ms + ms(delay);
            w.snap.set_backoff_marker(id, code, n);
            w.arm.push(NewTimer {
                node: id.to_string(),
                purpose: Purpose::Retry,
                due_ms: due,
                attempt: Some(attempt),
            });
            let park = Park {
                next_attempt: attempt,
                next_at_s: w.rel(due),
                delay_s: Secs(ms(delay)),
            };
            w.entry(Some(id), line(Then::Backoff, Some(park)));
        }
        Next::Stop(reason) => {
            w.entry(Some(id), line(Then::Failed, None));
            fatal(w, id, code, reason.as_str(), Some(n), None);
        }
    }
}

/// A counterpart's response reached this node through its correlation. The
/// line's [`Verdict`] says what it was decided to be.
pub(super) fn response(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    id: &str,
    request: &str,
    body: &Value,
) {
    let refuse = |w: &mut Work, verdict: Verdict, reason: &str, live: Option<u32>| {
        w.entry(
            Some(id),
            HistoryEvent::Response {
                verdict,
                idempotency_key: request.to_string(),
                reason: Some(reason.to_string()),
                live_attempt: live,
                body: None,
                to: None,
            },
        );
    };
    if facts.status.is_terminal() {
        w.status = Some(facts.status);
        let v = facts.status.as_str();
        let verdict = if facts.status == qflow_instance::Status::Failed {
            Verdict::Failed
        } else {
            Verdict::Completed
        };
        return refuse(w, verdict, &format!("the instance is {v}: no effect"), None);
    }
    let Some(node) = graph.node(id).filter(|n| call_of(n).is_some()) else {
        return refuse(w, Verdict::NoWait, "no channel call of that id", None);
    };
    if !waiting(w, id) {
        return refuse(
            w,
            Verdict::NoWait,
            "the node is not waiting for a response",
            None,
        );
    }
    if marked(w, id) {
        return refuse(
            w,
            Verdict::RetryPending,
            "that attempt is gone, a retry is pending (the correlation stays live)",
            None,
        );
    }
    let live = w.snap.attempts(id).saturating_add(1);
    // The live attempt's key is the last one the node sent.
    let counted = w.snap.keys_used(id).saturating_add(live);
    let sent = ledger(facts, id).max(counted);
    match names(facts.instance_id, id, sent - 1, request) {
        Named::Live => {}
        Named::Superseded { .. } => {
            return refuse(
                w,
                Verdict::Superseded,
                &format!(
                    "that attempt was replaced by attempt {live} (the correlation stays live)"
                ),
                Some(live),
            );
        }
        Named::Unknown { .. } => {
            return refuse(
                w,
                Verdict::UnknownRequest,
                &format!(
                    "no attempt of this call was sent with that idempotency key; the live attempt is {live} (the correlation stays live)"
                ),
                Some(live),
            );
        }
    }
    if let Value::Object(m) = body {
        for (k, v) in m {
            w.snap.set_variable(k, v.clone());
        }
    }
    w.take(id, TokenState::Timer);
    leave_call_node(w, id);
    w.resolve.extend(task_timers(graph, facts.timers, id));
    w.calls.retire.push(id.to_string());
    w.close_incidents.push(id.to_string());
    // An answer that came before its request was marked delivered (an
    // operator's, or a relay that crashed between sending and recording):
    // the request is kept, abandoned, never sent after the call is over.
    w.calls.abandon.push(Abandon {
        node: Some(id.to_string()),
        reason: "the call was answered before this request was delivered".to_string(),
    });
    let to = leave(graph, w, node);
    // An answer sent without a key meant the live attempt: the history
    // names that attempt's key, never an empty one.
    let answered = if request.is_empty() {
        request_key(facts.instance_id, id, sent)
    } else {
        request.to_string()
    };
    w.entry(
        Some(id),
        HistoryEvent::Response {
            verdict: Verdict::Accepted,
            idempotency_key: answered,
            reason: None,
            live_attempt: None,
            body: Some(body.clone()),
            to: Some(to),
        },
    );
}

/// The idempotency key of attempt `n` of a call: new for every attempt, so a
/// counterpart that deduplicates sees a retry as the new request it is.
pub fn request_key(instance: &str, node: &str, n: u32) -> String {
    format!("{instance}/{node}/{n}")
}

/// Which attempt a response on an unmarked (live) call node answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// The live attempt's key, or no key at all (matched by correlation
    /// alone, as the table above says).
    Live,
    /// The key of an earlier attempt, which a re-drive replaced by `live`.
    Superseded { live: u32 },
    /// A key no attempt of this call was sent with.
    Unknown { live: u32 },
}

/// Beyond the table: a response that names its request is held to it. The
/// correlation is per node and outlives attempts, so without this a late
/// answer to attempt 1 arriving after the re-drive would resume the flow as
/// if it answered attempt 2 — the double-submit the fresh idempotency key
/// exists to prevent (the counterpart handled two requests; the flow must
/// take the answer to the one that is live). An empty key names nothing.
pub fn names(instance: &str, node: &str, burned: u32, request: &str) -> Named {
    let live = burned.saturating_add(1);
    if request.is_empty() || request == request_key(instance, node, live) {
        return Named::Live;
    }
    // The node segment is the node's name when the request was sent: a
    // migration may have renamed the node since (the correlation, which
    // routed the response here, moved with it), so only the instance and the
    // attempt number are compared.
    let attempt = request
        .strip_prefix(&format!("{instance}/"))
        .and_then(|rest| rest.rsplit_once('/'))
        .filter(|(sent_as, _)| !sent_as.is_empty() && !sent_as.contains('/'))
        .and_then(|(_, n)| n.parse::<u32>().ok());
    match attempt {
        Some(n) if n == live => Named::Live,
        Some(n) if n >= 1 && n < live => Named::Superseded { live },
        _ => Named::Unknown { live },
    }
}

/// The best-effort prompt after a poisoning: act only on what the re-read
/// under the claim found.
pub(super) fn poison_wake(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    id: &str,
    poisoned: bool,
    ev: &Event,
) {
    let Some(node) = graph.node(id).filter(|n| call_of(n).is_some()) else {
        return ignore(w, ev, "no channel call of that id");
    };
    if marked(w, id) {
        return ignore(w, ev, "the node is in a backoff window: nothing to do");
    }
    if !waiting(w, id) || !poisoned {
        return ignore(w, ev, "no poisoned request of this node: nothing to do");
    }
    failed(graph, facts, w, node, POISONED);
}

/// One delivery attempt of one outbox row, by the dispatcher.
pub(super) fn delivery(
    graph: &Graph,
    w: &mut Work,
    row: &OutboxRow,
    outcome: &DeliveryOutcome,
    counterpart: Option<&ChannelOutcome>,
) {
    let deliveries = row.deliveries.saturating_add(1);
    let mut line_outcome = Delivered::Delivered;
    let (mut respond_at_s, mut response, mut silent) = (None, None, None);
    let (mut line_error, mut poisoned, mut next_delivery_at_s) = (None, None, None);
    match outcome {
        DeliveryOutcome::Ok => {
            w.calls.outbox.push(OutboxChange::Delivered {
                id: row.id,
                deliveries,
            });
            match counterpart {
                Some(ChannelOutcome::Respond { body, after }) => {
                    let at = w.now_ms + after.map_or(0, ms);
                    respond_at_s = Some(w.rel(at));
                    response = Some(body.clone());
                }
                _ => silent = Some(true),
            }
        }
        DeliveryOutcome::Fail(error)
        | DeliveryOutcome::Rejected(error)
        | DeliveryOutcome::Later(error, _) => {
            line_outcome = Delivered::Failed;
            line_error = Some(error.clone());
            let node = graph.node(&row.node);
            let call = node.and_then(call_of);
            let ceiling = call.and_then(|c| c.max_deliveries);
            let rejected = matches!(outcome, DeliveryOutcome::Rejected(_));
            if rejected || ceiling.is_some_and(|m| deliveries >= m) {
                w.calls.outbox.push(OutboxChange::Poisoned {
                    id: row.id,
                    deliveries,
                });
                poisoned = Some(true);
                let why = if rejected {
                    format!("rejected by the counterpart at delivery {deliveries}")
                } else {
                    format!("poisoned after {deliveries} deliveries")
                };
                w.open_incidents.push(NewIncident {
                    node: row.node.clone(),
                    kind: IncidentKind::Poisoned,
                    message: format!(
                        "request {} to {} {why}: {error}",
                        row.idempotency_key, row.channel
                    ),
                });
            } else {
                let interval = call.map_or(1000, |c| ms(c.delivery_interval));
                let asked = match outcome {
                    DeliveryOutcome::Later(_, after) => {
                        let cap = match node.map(|n| &n.kind) {
                            Some(Kind::Task {
                                policy: Some(p), ..
                            }) => p.max_delay,
                            _ => None,
                        }
                        .unwrap_or(qflow_instance::event::DELIVERY_RETRY_AFTER_CAP);
                        ms((*after).min(cap))
                    }
                    _ => 0,
                };
                let next = w.now_ms + interval.max(asked);
                w.calls.outbox.push(OutboxChange::Retry {
                    id: row.id,
                    deliveries,
                    next_ms: next,
                });
                next_delivery_at_s = Some(w.rel(next));
            }
        }
    }
    let line = HistoryEvent::Delivery {
        attempt: row.attempt,
        channel: row.channel.clone(),
        idempotency_key: row.idempotency_key.clone(),
        deliveries,
        outcome: line_outcome,
        respond_at_s,
        response,
        silent,
        error: line_error,
        poisoned,
        next_delivery_at_s,
    };
    w.entry(Some(&row.node), line);
}

#[cfg(test)]
mod tests {
    use super::{names, request_key, Named};

    #[test]
    fn a_response_names_the_live_attempt_an_earlier_one_or_nothing_known() {
        let live = request_key("p-1", "auth", 3);
        assert_eq!(live, "p-1/auth/3");
        assert_eq!(names("p-1", "auth", 2, &live), Named::Live);
        assert_eq!(
            names("p-1", "auth", 2, ""),
            Named::Live,
            "no key: the table"
        );
        for dead in ["p-1/auth/1", "p-1/auth/2"] {
            assert_eq!(names("p-1", "auth", 2, dead), Named::Superseded { live: 3 });
        }
        // Sent before a migration renamed the node `old` to `auth`.
        assert_eq!(names("p-1", "auth", 2, "p-1/old/3"), Named::Live);
        assert_eq!(
            names("p-1", "auth", 2, "p-1/old/1"),
            Named::Superseded { live: 3 }
        );
        for unknown in [
            "p-1/auth/4",
            "p-1/auth/0",
            "p-2/auth/1",
            "p-1/auth/x",
            "p-1/3",
            "x",
        ] {
            assert_eq!(
                names("p-1", "auth", 2, unknown),
                Named::Unknown { live: 3 },
                "{unknown}"
            );
        }
    }
}
