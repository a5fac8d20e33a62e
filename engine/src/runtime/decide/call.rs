//! Decisions on channel-call nodes (docs/runtime.md's table), each from durable
//! facts under the instance claim.
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

use serde_json::{json, Map, Value};

use super::{
    fatal, ignore, leave, ms, task_timers, Event, Facts, NewRequest, NewTimer, OutboxChange,
    OutboxRow, Purpose, Work,
};
use crate::policy::Next;
use crate::runtime::graph::{Call, GNode, Graph, Kind};
use crate::runtime::scenario::{ChannelOutcome, DeliveryOutcome};
use crate::runtime::snapshot::TokenState;

pub const TIMEOUT: &str = "q.timeout";
pub const POISONED: &str = "q.delivery.poisoned";

fn call_of(node: &GNode) -> Option<&Call> {
    match &node.kind {
        Kind::Task { call: Some(c), .. } => Some(c.as_ref()),
        _ => None,
    }
}

fn marker_key(node: &str) -> String {
    format!("backoff.{node}")
}

fn marked(w: &Work, node: &str) -> bool {
    w.snap.get(&marker_key(node)).is_some()
}

/// Idempotency keys a call node used before a migration reset its budget
/// (`keys_used.<node>`, absent otherwise): key numbers continue past them, so
/// a repaired instance's attempt 1 is still a request never sent before.
fn keys_used(w: &Work, node: &str) -> u32 {
    w.snap
        .get(&format!("keys_used.{node}"))
        .and_then(Value::as_u64)
        .map_or(0, |n| n.min(u64::from(u32::MAX)) as u32)
}

/// The flow leaves a call node (answered, or its failure caught by a
/// boundary): its node-scoped keys go. A node the flow can enter again keeps
/// one: how many idempotency keys it has used (the live attempt's included),
/// so the next entry's requests get never-sent keys — the outbox refuses a
/// reused key, and a counterpart deduplicating on it would answer "already
/// handled" for a request it never saw. Nodes outside loops write nothing
/// new, so their snapshots stay byte-identical.
fn leave_call_node(graph: &Graph, w: &mut Work, id: &str) {
    let used = keys_used(w, id)
        .saturating_add(w.snap.attempts(id))
        .saturating_add(1);
    w.snap.clear_node(id);
    if graph.can_reenter(id) {
        w.snap.set(format!("keys_used.{id}"), json!(used));
    }
}

fn waiting(w: &Work, node: &str) -> bool {
    w.tokens()
        .iter()
        .any(|t| t.node == node && t.state == TokenState::Timer)
}

/// Emit attempt `attempts + 1`: a request in the outbox with a fresh
/// idempotency key, the correlation (created once, kept across attempts), a
/// fresh timeout window. The token waits in state `timer`.
pub(super) fn emit(facts: &Facts<'_>, w: &mut Work, node: &GNode, redrive: bool) {
    let Some(call) = call_of(node) else { return };
    let id = node.id.as_str();
    let n = w.snap.attempts(id).saturating_add(1);
    let key = request_key(facts.instance_id, id, keys_used(w, id).saturating_add(n));
    let due = w.now_ms + ms(call.timeout);
    let payload = Value::Object(w.snap.variables().into_iter().collect::<Map<_, _>>());
    w.calls.emit.push(NewRequest {
        node: id.to_string(),
        channel: call.channel.clone(),
        operation: call.operation.clone(),
        attempt: n,
        idempotency_key: key.clone(),
        payload,
    });
    w.calls.correlate.push(id.to_string());
    w.arm.push(NewTimer {
        node: id.to_string(),
        purpose: Purpose::Timeout,
        due_ms: due,
        attempt: Some(n),
    });
    let timeout_at = w.rel(due);
    let mut line = json!({"attempt": n, "channel": call.channel, "idempotencyKey": key, "timeout_at_s": timeout_at});
    if let Some(op) = &call.operation {
        line["operation"] = json!(op);
    }
    if redrive {
        // Resolved and re-parked in one step: a new incarnation of the wait.
        line["redrive"] = json!(true);
        line["incarnation"] = json!(n);
    }
    w.entry("attempt", Some(id), line);
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
            w.snap.remove(&marker_key(id));
            emit(facts, w, node, true);
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
    let emitted = timeout.map_or(w.now_ms, |t| t.due_ms - ms(call.timeout));
    if let Some(t) = timeout {
        w.resolve.push(t.id);
    }
    // The dead attempt's undelivered requests are withdrawn (see the store).
    w.calls.withdraw.push(id.to_string());
    let idx = w.history.len();
    w.entry("call-failed", Some(id), json!({"attempt": n, "code": code}));
    let Some(policy) = policy else {
        // Without a policy: the catchable error it always was.
        let caught = error_boundaries
            .iter()
            .find(|(_, c)| c.as_deref() == Some(code))
            .or_else(|| error_boundaries.iter().find(|(_, c)| c.is_none()));
        match caught {
            Some((b, _)) => {
                w.take(id, TokenState::Timer);
                leave_call_node(graph, w, id);
                w.resolve.extend(task_timers(graph, facts.timers, id));
                w.calls.retire.push(id.to_string());
                w.close_incidents.push(id.to_string());
                let bnode = graph.node(b).expect("compiled boundary");
                let to = leave(graph, w, bnode);
                w.history[idx].detail["then"] = json!("boundary");
                w.entry(
                    "boundary",
                    Some(b),
                    json!({"from": id, "code": code, "to": to}),
                );
            }
            None => {
                w.history[idx].detail["then"] = json!("failed");
                fatal(w, id, code, "uncaught-error", Some(n), None);
            }
        }
        return;
    };
    let first = w.snap.first_attempt_ms(id).unwrap_or(emitted);
    w.snap.set(format!("attempts.{id}"), json!(n));
    w.snap.set(format!("first_attempt.{id}"), json!(first));
    let elapsed = std::time::Duration::from_millis((w.now_ms - first).max(0) as u64);
    match policy.next_after_failure(n, code, None, elapsed, facts.instance_id, id) {
        Next::Retry { attempt, delay } => {
            let due = w.now_ms + ms(delay);
            w.snap
                .set(marker_key(id), json!({"code": code, "attempt": n}));
            w.arm.push(NewTimer {
                node: id.to_string(),
                purpose: Purpose::Retry,
                due_ms: due,
                attempt: Some(attempt),
            });
            let d = &mut w.history[idx].detail;
            d["then"] = json!("backoff");
            d["next_attempt"] = json!(attempt);
            d["delay_s"] = super::seconds(ms(delay));
            w.history[idx].detail["next_at_s"] = w.rel(due);
        }
        Next::Stop(reason) => {
            w.history[idx].detail["then"] = json!("failed");
            fatal(w, id, code, reason.as_str(), Some(n), None);
        }
    }
}

/// A counterpart's response reached this node through its correlation. The
/// verdict is the line's `verdict`: accepted, retry-pending, superseded,
/// unknown-request, failed, no-wait.
pub(super) fn response(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    id: &str,
    request: &str,
    body: &Value,
) {
    let verdict = |w: &mut Work, v: &str, reason: &str| {
        w.entry(
            "response",
            Some(id),
            json!({"verdict": v, "reason": reason, "idempotencyKey": request}),
        );
    };
    let refuse = |w: &mut Work, v: &str, reason: &str, live: u32| {
        w.entry(
            "response",
            Some(id),
            json!({"verdict": v, "reason": reason, "idempotencyKey": request, "live_attempt": live}),
        );
    };
    if facts.status.is_terminal() {
        w.status = Some(facts.status);
        let v = facts.status.as_str();
        return verdict(w, v, &format!("the instance is {v}: no effect"));
    }
    let Some(node) = graph.node(id).filter(|n| call_of(n).is_some()) else {
        return verdict(w, "no-wait", "no channel call of that id");
    };
    if !waiting(w, id) {
        return verdict(w, "no-wait", "the node is not waiting for a response");
    }
    if marked(w, id) {
        return verdict(
            w,
            "retry-pending",
            "that attempt is gone, a retry is pending (the correlation stays live)",
        );
    }
    let burned = w.snap.attempts(id);
    let live = burned.saturating_add(1);
    match names(
        facts.instance_id,
        id,
        keys_used(w, id).saturating_add(burned),
        request,
    ) {
        Named::Live => {}
        Named::Superseded { .. } => {
            return refuse(
                w,
                "superseded",
                &format!(
                    "that attempt was replaced by attempt {live} (the correlation stays live)"
                ),
                live,
            );
        }
        Named::Unknown { .. } => {
            return refuse(
                w,
                "unknown-request",
                &format!(
                    "no attempt of this call was sent with that idempotency key; the live attempt is {live} (the correlation stays live)"
                ),
                live,
            );
        }
    }
    if let Value::Object(m) = body {
        for (k, v) in m {
            w.snap.set_variable(k, v.clone());
        }
    }
    w.take(id, TokenState::Timer);
    leave_call_node(graph, w, id);
    w.resolve.extend(task_timers(graph, facts.timers, id));
    w.calls.retire.push(id.to_string());
    w.close_incidents.push(id.to_string());
    let idx = w.history.len();
    w.entry(
        "response",
        Some(id),
        json!({"verdict": "accepted", "body": body, "idempotencyKey": request}),
    );
    let to = leave(graph, w, node);
    w.history[idx].detail["to"] = json!(to);
}

/// The idempotency key of attempt `n` of a call: new for every attempt, so a
/// counterpart that deduplicates sees a retry as the new request it is.
pub fn request_key(instance: &str, node: &str, n: u32) -> String {
    format!("{instance}/{node}/{n}")
}

/// Which attempt a response on an unmarked (live) call node answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// The live attempt's key, or no key at all (docs/runtime.md's table: matched
    /// by correlation alone).
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
    let mut line = json!({"attempt": row.attempt, "channel": row.channel,
                          "idempotencyKey": row.idempotency_key, "deliveries": deliveries});
    match outcome {
        DeliveryOutcome::Ok => {
            w.calls.outbox.push(OutboxChange::Delivered {
                id: row.id,
                deliveries,
            });
            line["outcome"] = json!("delivered");
            match counterpart {
                Some(ChannelOutcome::Respond { body, after }) => {
                    let at = w.now_ms + after.map_or(0, ms);
                    line["respond_at_s"] = w.rel(at);
                    line["response"] = body.clone();
                }
                _ => line["silent"] = json!(true),
            }
        }
        DeliveryOutcome::Fail(error) => {
            line["outcome"] = json!("failed");
            line["error"] = json!(error);
            let call = graph.node(&row.node).and_then(call_of);
            let ceiling = call.and_then(|c| c.max_deliveries);
            if ceiling.is_some_and(|m| deliveries >= m) {
                w.calls.outbox.push(OutboxChange::Poisoned {
                    id: row.id,
                    deliveries,
                });
                line["poisoned"] = json!(true);
                w.open_incidents.push(super::NewIncident {
                    node: row.node.clone(),
                    kind: "poisoned".into(),
                    message: format!(
                        "request {} to {} poisoned after {deliveries} deliveries: {error}",
                        row.idempotency_key, row.channel
                    ),
                });
            } else {
                let interval = call.map_or(1000, |c| ms(c.delivery_interval));
                let next = w.now_ms + interval;
                w.calls.outbox.push(OutboxChange::Retry {
                    id: row.id,
                    deliveries,
                    next_ms: next,
                });
                line["next_delivery_at_s"] = w.rel(next);
            }
        }
    }
    w.entry("delivery", Some(&row.node), line);
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
