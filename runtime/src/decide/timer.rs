//! Decisions on timers coming due: an intermediate timer event moving on, a
//! timer boundary firing on its task, and a channel call's timeout or retry
//! timer (decided with the call, see [`super::call`]). A registered task's
//! retry timer is not decided here: it re-drives through the task's handler
//! as an attempt.

use crate::graph::{Graph, Kind};
use qflow_instance::event::Event;
use qflow_instance::history::HistoryEvent;
use qflow_instance::rows::{Facts, Purpose};
use qflow_instance::snapshot::TokenState;

use super::{call, ignore, leave, task_timers, Work};

/// The armed timer `id` came due.
pub(super) fn due(graph: &Graph, facts: &Facts<'_>, w: &mut Work, id: i64) {
    let ev = Event::TimerDue { timer: id };
    let Some(t) = facts.timers.iter().find(|t| t.id == id) else {
        return ignore(w, &ev, "stale timer: no longer armed");
    };
    let Some(node) = graph.node(&t.node) else {
        w.resolve.push(id);
        return ignore(w, &ev, "the timer's node is not in the deployment");
    };
    match (&node.kind, t.purpose) {
        (Kind::Task { call: Some(_), .. }, Purpose::Timeout | Purpose::Retry) => {
            w.resolve.push(id);
            call::timer(graph, facts, w, node, t.purpose, &ev);
        }
        (Kind::Timer { .. }, Purpose::Timer) => {
            w.resolve.push(id);
            if !w.take(&node.id, TokenState::Timer) {
                return ignore(w, &ev, "stale timer: no token waits on it");
            }
            let to = leave(graph, w, node);
            w.entry(Some(&node.id), HistoryEvent::Timer { to });
        }
        (
            Kind::TimerBoundary {
                attached_to,
                interrupting,
                ..
            },
            Purpose::Boundary,
        ) => {
            w.resolve.push(id);
            // A registered task is active while parked (backoff,
            // reconciliation); a channel call while it waits for its
            // response (state `timer`, live attempt or backoff window).
            let is_call = matches!(
                graph.node(attached_to).map(|n| &n.kind),
                Some(Kind::Task { call: Some(_), .. })
            );
            let active = w.tokens().into_iter().find(|x| {
                &x.node == attached_to
                    && (matches!(x.state, TokenState::Backoff | TokenState::Reconcile)
                        || (is_call && x.state == TokenState::Timer))
            });
            let Some(active) = active else {
                return ignore(w, &ev, "stale boundary: its task is no longer active");
            };
            if *interrupting {
                w.take(attached_to, active.state);
                w.snap.clear_node(attached_to);
                w.resolve
                    .extend(task_timers(graph, facts.timers, attached_to));
                w.close_incidents.push(attached_to.clone());
                if is_call {
                    // The wait is over: a late response gets an honest "not
                    // waiting". A request not yet delivered never will be:
                    // kept, abandoned (never deleted outside the backoff park).
                    w.calls.retire.push(attached_to.clone());
                    w.calls.abandon.push(qflow_instance::Abandon {
                        node: Some(attached_to.clone()),
                        reason: format!("the timer boundary {} interrupted the call", node.id),
                    });
                }
            }
            let to = leave(graph, w, node);
            w.entry(
                Some(&node.id),
                HistoryEvent::Boundary {
                    from: attached_to.clone(),
                    code: None,
                    timer: Some(true),
                    interrupting: Some(*interrupting),
                    to,
                },
            );
        }
        _ => {
            ignore(w, &ev, "a retry timer re-drives through the task's handler");
        }
    }
}
