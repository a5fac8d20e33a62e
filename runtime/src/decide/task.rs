//! Decisions on registered tasks: one attempt's outcome (success, a BPMN
//! error, a classified failure), the backoff park on a retry timer, the wait
//! for reconciliation after an unknown outcome, and the operator's
//! reconciliation itself.

use std::time::Duration;

use crate::graph::{GNode, Graph, Kind};
use qflow_instance::codes;
use qflow_instance::event::{Event, ExternalEvent, FailureClass, Resolution, TaskOutcome};
use qflow_instance::history::{
    Attempt, AttemptOutcome, HistoryEvent, Park, TaskAttempt, Then, WaitFor,
};
use qflow_instance::rows::{Facts, Purpose};
use qflow_instance::snapshot::TokenState;
use qflow_instance::{IncidentKind, NewIncident, NewTimer};
use qflow_model::policy::{Next, StopReason};

use super::{catching, fatal, ignore, leave, ms, task_timers, Work};

/// The task leaves its node normally (success, reconciled success).
fn complete_task(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    node: &GNode,
    from: TokenState,
) -> Vec<String> {
    w.take(&node.id, from);
    w.snap.clear_node(&node.id);
    w.resolve.extend(task_timers(graph, facts.timers, &node.id));
    w.close_incidents.push(node.id.clone());
    leave(graph, w, node)
}

/// Arm the task's timer boundaries the first time it parks: they run from the
/// task's activation, which is its first attempt.
pub(super) fn arm_boundaries(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    node: &GNode,
    activated_ms: i64,
) {
    let Kind::Task {
        timer_boundaries, ..
    } = &node.kind
    else {
        return;
    };
    for b in timer_boundaries {
        if facts.timers.iter().any(|t| &t.node == b) {
            continue;
        }
        if let Some(Kind::TimerBoundary { duration, .. }) = graph.node(b).map(|n| &n.kind) {
            w.arm.push(NewTimer {
                node: b.clone(),
                purpose: Purpose::Boundary,
                due_ms: activated_ms + ms(*duration),
                attempt: None,
            });
        }
    }
}

/// How many attempts of `id` have run since the flow entered it: its
/// counter (a task with a policy), or the attempt the last unknown outcome
/// recorded (`reconcile.<node>`, kept after a `retry` resolution until the
/// node is left). A task without a policy that an operator reconciles as
/// retry thus numbers its attempts truthfully without writing a counter.
fn runs(w: &Work, id: &str) -> u32 {
    runs_in(&w.snap, id)
}

/// [`runs`] read from a snapshot: what a migration that parks the next
/// attempt numbers it by.
pub(crate) fn runs_in(snap: &qflow_instance::snapshot::Snapshot, id: &str) -> u32 {
    let reconciled = snap.reconcile(id).and_then(|m| m.attempt).unwrap_or(0);
    snap.attempts(id).max(reconciled)
}

/// The attempt line of a handler run, before its consequences are known.
fn line(n: u32, task: &str, outcome: AttemptOutcome) -> TaskAttempt {
    TaskAttempt {
        attempt: n,
        task: task.to_string(),
        outcome,
        code: None,
        class: None,
        then: None,
        park: None,
        to: None,
        message: None,
    }
}

/// A registered task's handler ran once with `outcome`.
pub(super) fn attempt(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    id: &str,
    outcome: &TaskOutcome,
    timer: Option<i64>,
) {
    let ev = Event::Attempt {
        node: id.into(),
        outcome: outcome.clone(),
        timer,
    };
    // Whatever this outcome finds, the attempt is no longer in flight.
    w.close_in_flight.push(id.to_string());
    let Some(node) = graph.node(id) else {
        return ignore(w, &ev, "no such node in the deployment");
    };
    let Kind::Task {
        task,
        error_boundaries,
        call: None,
        ..
    } = &node.kind
    else {
        return ignore(
            w,
            &ev,
            "not a registered task (a channel call's attempts are request emissions)",
        );
    };
    // Which wait this attempt consumes: the first attempt a ready token, a
    // re-drive exactly the armed retry timer of this node.
    let from = match timer {
        None => TokenState::Ready,
        Some(t) => {
            if !facts
                .timers
                .iter()
                .any(|x| x.id == t && x.node == id && x.purpose == Purpose::Retry)
            {
                return ignore(w, &ev, "stale retry timer: no longer armed");
            }
            w.resolve.push(t);
            TokenState::Backoff
        }
    };
    if !w.tokens().iter().any(|t| t.node == id && t.state == from) {
        return ignore(w, &ev, "the task is not waiting for this attempt");
    }
    let n = runs(w, id).saturating_add(1);
    let idx = w.history.len();
    match outcome {
        TaskOutcome::Ok(vars) => {
            for (k, v) in vars {
                w.snap.set_variable(k, v.clone());
            }
            let to = complete_task(graph, facts, w, node, from);
            let mut l = line(n, task, AttemptOutcome::Ok);
            l.to = Some(to);
            w.entry(Some(id), HistoryEvent::Attempt(Attempt::Task(l)));
        }
        TaskOutcome::BpmnError { code } => {
            let mut l = line(n, task, AttemptOutcome::BpmnError);
            l.code = Some(code.clone());
            w.entry(Some(id), HistoryEvent::Attempt(Attempt::Task(l)));
            match catching(error_boundaries, code) {
                Some(b) => {
                    w.take(id, from);
                    w.snap.clear_node(id);
                    w.resolve.extend(task_timers(graph, facts.timers, id));
                    w.close_incidents.push(id.to_string());
                    let bnode = graph.node(b).expect("compiled boundary");
                    let to = leave(graph, w, bnode);
                    w.entry(
                        Some(b),
                        HistoryEvent::Boundary {
                            from: id.to_string(),
                            code: Some(code.clone()),
                            timer: None,
                            interrupting: None,
                            to,
                        },
                    );
                }
                None => fatal(w, id, code, "uncaught-error", None, None),
            }
        }
        TaskOutcome::Fail {
            code,
            class,
            retry_after,
            message,
        } => failed(
            graph,
            facts,
            w,
            node,
            from,
            n,
            code,
            *class,
            *retry_after,
            message.as_deref(),
        ),
    }
    if let Some(t) = timer {
        w.history[idx].timer_id = Some(t);
    }
}

/// A classified failure of attempt `n`: reconcile an unknown outcome, park
/// for the next attempt, or take the fatal path.
#[allow(clippy::too_many_arguments)]
fn failed(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    node: &GNode,
    from: TokenState,
    n: u32,
    code: &str,
    class: FailureClass,
    retry_after: Option<Duration>,
    message: Option<&str>,
) {
    let id = node.id.as_str();
    let Kind::Task { task, policy, .. } = &node.kind else {
        return;
    };
    let mut l = line(n, task, AttemptOutcome::Failed);
    l.code = Some(code.to_string());
    l.class = Some(class);
    let message = message.map(qflow_instance::history::bounded_message);
    l.message = message.clone();
    let message = message.as_deref();
    // A missing start (first failure, or a damaged key) counts from now.
    let first_ms = w.snap.first_attempt_ms(id).unwrap_or(w.now_ms);
    let last = Some((class.as_str(), message));
    if class == FailureClass::UnknownOutcome {
        // No blind retry: the effect may have happened.
        if policy.is_some() {
            w.snap.set_attempts(id, n);
            w.snap.set_first_attempt_ms(id, first_ms);
        }
        w.snap.set_reconcile(id, code, n);
        w.set_state(id, from, TokenState::Reconcile);
        arm_boundaries(graph, facts, w, node, first_ms);
        l.then = Some(Then::Reconcile);
        w.entry(Some(id), HistoryEvent::Attempt(Attempt::Task(l)));
        w.entry(
            Some(id),
            HistoryEvent::Wait {
                for_: WaitFor::Reconciliation,
                until_s: None,
                code: Some(code.to_string()),
            },
        );
        w.open_incidents.push(NewIncident {
            node: id.into(),
            kind: IncidentKind::Reconciliation,
            message: format!(
                "attempt {n} of {id} ended with an unknown outcome ({code}): resolve it as succeeded, failed or retry"
            ),
        });
        return;
    }
    let Some(policy) = policy else {
        // No policy: a budget of one attempt; the counters stay absent.
        l.then = Some(Then::Failed);
        w.entry(Some(id), HistoryEvent::Attempt(Attempt::Task(l)));
        let reason = if class == FailureClass::Permanent {
            "non-retryable"
        } else {
            "exhausted"
        };
        return fatal(w, id, code, reason, Some(n), last);
    };
    // A deferral names when (the command and scenario forms cannot leave
    // it out); one without a delay, which only a library closure can build,
    // would re-run at once, over and over, for a week: it is decided as the
    // transient failure it then is, on the policy's schedule, below.
    if let (FailureClass::Deferred, Some(delay)) = (class, retry_after) {
        // No budget burned: the counter keeps the attempts before this one,
        // so the re-run carries the same number; the start still counts for
        // `maxElapsed`.
        w.snap.set_first_attempt_ms(id, first_ms);
        let elapsed = Duration::from_millis((w.now_ms - first_ms).max(0) as u64);
        return park_or_stop(
            graph,
            facts,
            w,
            node,
            from,
            l,
            policy.next_after_deferral(n, delay, elapsed),
            (code, n, first_ms, last),
        );
    }
    w.snap.set_attempts(id, n);
    w.snap.set_first_attempt_ms(id, first_ms);
    let next = if class == FailureClass::Permanent {
        Next::Stop(StopReason::NonRetryable)
    } else {
        let after = if class == FailureClass::RateLimited {
            retry_after
        } else {
            None
        };
        let elapsed = Duration::from_millis((w.now_ms - first_ms).max(0) as u64);
        policy.next_after_failure(n, code, after, elapsed, facts.instance_id, id)
    };
    park_or_stop(
        graph,
        facts,
        w,
        node,
        from,
        l,
        next,
        (code, n, first_ms, last),
    );
}

/// What the fatal path of a failed attempt carries: its code, its number,
/// the first attempt's start, and the last failure's class and message.
type Fatal<'a> = (&'a str, u32, i64, Option<(&'a str, Option<&'a str>)>);

/// Park the failed (or deferred) attempt for `next`, or take the fatal path.
#[allow(clippy::too_many_arguments)]
fn park_or_stop(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    node: &GNode,
    from: TokenState,
    mut l: TaskAttempt,
    next: Next,
    (code, n, first_ms, last): Fatal<'_>,
) {
    let id = node.id.as_str();
    match next {
        Next::Retry { attempt, delay } => {
            let due = w.now_ms + ms(delay);
            w.set_state(id, from, TokenState::Backoff);
            w.arm.push(NewTimer {
                node: id.into(),
                purpose: Purpose::Retry,
                due_ms: due,
                attempt: Some(attempt),
            });
            arm_boundaries(graph, facts, w, node, first_ms);
            l.then = Some(Then::Backoff);
            l.park = Some(Park {
                next_attempt: attempt,
                next_at_s: w.rel(due),
                delay_s: qflow_instance::Secs(ms(delay)),
            });
            w.entry(Some(id), HistoryEvent::Attempt(Attempt::Task(l)));
        }
        Next::Stop(reason) => {
            l.then = Some(Then::Failed);
            w.entry(Some(id), HistoryEvent::Attempt(Attempt::Task(l)));
            fatal(w, id, code, reason.as_str(), Some(n), last);
        }
    }
}

/// Something from outside: a late redelivery (always a duplicate here), or
/// the reconciliation of an unknown outcome.
pub(super) fn external(
    graph: &Graph,
    facts: &Facts<'_>,
    w: &mut Work,
    ext: &ExternalEvent,
    index: Option<usize>,
    ev: &Event,
) {
    match ext {
        ExternalEvent::Redeliver { node } => {
            let why = match w.tokens().iter().find(|t| &t.node == node) {
                Some(t) if t.state == TokenState::Backoff => {
                    "duplicate delivery: the node's next attempt is armed on its own retry timer"
                }
                Some(t) if t.state == TokenState::Reconcile => {
                    "duplicate delivery: the node waits for reconciliation, not for another attempt"
                }
                Some(_) => "duplicate delivery: the node is not due for an attempt",
                None => "no attempt of this node is pending",
            };
            ignore(w, ev, why);
        }
        ExternalEvent::Resolve {
            node: id,
            resolution,
            variables,
        } => {
            let Some(node) = graph.node(id) else {
                return ignore(w, ev, "no such node in the deployment");
            };
            if !w
                .tokens()
                .iter()
                .any(|t| &t.node == id && t.state == TokenState::Reconcile)
            {
                return ignore(
                    w,
                    ev,
                    "nothing to reconcile: the node is not waiting for reconciliation",
                );
            }
            if *resolution == Resolution::Succeeded {
                for (k, v) in variables {
                    w.snap.set_variable(k, v.clone());
                }
            }
            let idx = w.history.len();
            reconcile(graph, facts, w, node, *resolution);
            w.history[idx].event_index = index;
        }
    }
}

/// Reconcile the unknown outcome `node` waits on as `resolution`.
fn reconcile(graph: &Graph, facts: &Facts<'_>, w: &mut Work, node: &GNode, resolution: Resolution) {
    let id = node.id.as_str();
    let code = w
        .snap
        .reconcile(id)
        .and_then(|m| m.code)
        .unwrap_or_else(|| codes::UNKNOWN_OUTCOME.to_string());
    // How many times the task has run so far, for the operator.
    let ran = runs(w, id).max(1);
    let line = |to: Option<Vec<String>>| HistoryEvent::Reconciled {
        as_: resolution,
        code: code.clone(),
        attempts: Some(ran),
        to,
    };
    match resolution {
        Resolution::Succeeded => {
            let to = complete_task(graph, facts, w, node, TokenState::Reconcile);
            w.entry(Some(id), line(Some(to)));
        }
        Resolution::Failed => {
            w.entry(Some(id), line(None));
            fatal(
                w,
                id,
                &code,
                "non-retryable",
                Some(ran),
                Some(("unknown-outcome", None)),
            );
        }
        Resolution::Retry => {
            w.entry(Some(id), line(None));
            let n = ran;
            let stop = match &node.kind {
                Kind::Task {
                    policy: Some(p), ..
                } => {
                    let first = w.snap.first_attempt_ms(id).unwrap_or(w.now_ms);
                    let elapsed = Duration::from_millis((w.now_ms - first).max(0) as u64);
                    match p.next_after_failure(
                        n.max(1),
                        &code,
                        None,
                        elapsed,
                        facts.instance_id,
                        id,
                    ) {
                        Next::Stop(r) => Some(r),
                        Next::Retry { .. } => None,
                    }
                }
                _ => None,
            };
            match stop {
                Some(r) => fatal(
                    w,
                    id,
                    &code,
                    r.as_str(),
                    Some(n.max(1)),
                    Some(("unknown-outcome", None)),
                ),
                None => {
                    // With a policy the counter numbers the next run; without
                    // one the marker stays (its attempt numbers the next run,
                    // and no counter is written), until the node is left.
                    if matches!(
                        &node.kind,
                        Kind::Task {
                            policy: Some(_),
                            ..
                        }
                    ) {
                        w.snap.clear_reconcile(id);
                    }
                    w.set_state(id, TokenState::Reconcile, TokenState::Ready);
                    w.close_incidents.push(id.to_string());
                }
            }
        }
    }
}
