//! The functional core: every decision is a pure function of durable facts
//! (the snapshot, the instance's armed timers, its status), one event, and the
//! clock's `now`, returning a [`Transition`] the store applies atomically under
//! the instance claim. Nothing here touches the store, a handler or the clock.
//!
//! Handlers are effects: the shell runs one and hands its outcome in as the
//! event ([`Event::Attempt`]), so the attempt and its consequences (counter,
//! park, timer, history) commit in one transaction.
//!
//! One file per family of node the decisions act on:
//! - [`flow`]: tokens moving through events and gateways.
//! - [`task`]: registered tasks — attempts, the retry park, reconciliation.
//! - [`timer`]: timers coming due (intermediate timers, timer boundaries).
//! - [`call`]: channel calls — requests, responses, deliveries, timeouts.
//!
//! This module holds what they share: the accumulating [`Work`], the fatal
//! path and the ignored-event line.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::graph::{GNode, Graph, Kind};
use qflow_instance::history::{Entry, HistoryEvent, Line, Secs};
use qflow_instance::snapshot::{Failure, Snapshot, Token, TokenState};
use qflow_instance::IncidentKind;

pub mod call;
pub mod damage;
pub mod flow;
pub mod task;
pub mod timer;

#[cfg(test)]
mod table;

pub use qflow_instance::effects::{
    CallEffects, NewIncident, NewRequest, NewTimer, OutboxChange, Transition,
};
pub use qflow_instance::event::Event;
pub use qflow_instance::history::seconds;
pub use qflow_instance::rows::{Facts, OutboxRow, Purpose, Status, TimerRow};

/// The instance's first snapshot and decision: variables and a token on each
/// target of the start event.
pub fn start(graph: &Graph, variables: &BTreeMap<String, Value>, started_ms: i64) -> Transition {
    let mut snapshot = Snapshot::new();
    for (k, v) in variables {
        snapshot.set_variable(k, v.clone());
    }
    let start = graph.node(&graph.start).expect("compiled start exists");
    let tokens: Vec<Token> = start
        .outgoing
        .iter()
        .map(|o| arrive(graph, &o.flow, &o.target))
        .collect();
    let ends = tokens.is_empty();
    snapshot.set_frontier(tokens);
    let mut w = Work::new(Snapshot::new(), started_ms, started_ms);
    w.snap = snapshot;
    w.entry(
        Some(&graph.start),
        HistoryEvent::Start {
            variables: variables.clone(),
        },
    );
    if ends {
        w.status = Some(Status::Completed);
    }
    w.finish(&[])
}

/// Decide one event.
pub fn decide(graph: &Graph, facts: &Facts<'_>, event: &Event, now_ms: i64) -> Transition {
    let mut w = Work::new(facts.snapshot.clone(), facts.started_ms, now_ms);
    if facts.status.is_terminal() && !matches!(event, Event::Response { .. }) {
        ignore(
            &mut w,
            event,
            &format!("the instance is {}: no effect", facts.status.as_str()),
        );
        w.status = Some(facts.status);
        return w.finish(facts.timers);
    }
    if let Some(why) = damage::unreadable(graph, facts) {
        return damage::fail(graph, facts, &why, now_ms);
    }
    damage::counters(&mut w);
    let attempt_started = attempt_start(graph, facts, event, now_ms);
    match event {
        Event::Advance { node } => flow::advance(graph, facts, &mut w, node),
        Event::Attempt {
            node,
            outcome,
            timer,
        } => task::attempt(graph, facts, &mut w, node, outcome, *timer),
        Event::TimerDue { timer } => timer::due(graph, facts, &mut w, *timer),
        Event::Response {
            node,
            request,
            body,
        } => call::response(graph, facts, &mut w, node, request, body),
        Event::PoisonWake { node, poisoned } => {
            call::poison_wake(graph, facts, &mut w, node, *poisoned, event)
        }
        Event::Delivery {
            row,
            outcome,
            counterpart,
        } => call::delivery(graph, &mut w, row, outcome, counterpart.as_ref()),
        Event::External { event: ext, index } => {
            task::external(graph, facts, &mut w, ext, *index, event)
        }
    }
    // Only the decision that failed the instance writes its record.
    if w.status == Some(Status::Failed) && !facts.status.is_terminal() {
        terminal_record(graph, &mut w, attempt_started);
    }
    w.finish(facts.timers)
}

/// When the attempt this event ends started: a handler runs now; a call's
/// live attempt started when its timeout window opened.
fn attempt_start(graph: &Graph, facts: &Facts<'_>, event: &Event, now_ms: i64) -> i64 {
    let call_node = match event {
        Event::TimerDue { timer } => facts
            .timers
            .iter()
            .find(|t| t.id == *timer && t.purpose == Purpose::Timeout)
            .map(|t| t.node.as_str()),
        Event::PoisonWake { node, .. } => Some(node.as_str()),
        _ => None,
    };
    call_node
        .and_then(|n| {
            let window = graph.node(n).and_then(GNode::call)?.timeout?;
            let t = facts
                .timers
                .iter()
                .find(|t| t.node == n && t.purpose == Purpose::Timeout)?;
            Some(t.due_ms - ms(window))
        })
        .unwrap_or(now_ms)
}

/// Complete the terminal record with what an operator needs to act on it:
/// the dependency that failed (the task's handler or the call's channel),
/// the first and last attempt's start, and a call's failure class (its two
/// failures are transient unless the policy names the code non-retryable).
/// The incident says the same.
fn terminal_record(graph: &Graph, w: &mut Work, last_attempt_ms: i64) {
    let Some(mut f) = w.snap.failure() else {
        return;
    };
    let Some(node) = graph.node(&f.node) else {
        return;
    };
    let Kind::Task { task, call, .. } = &node.kind else {
        return;
    };
    match call {
        Some(c) => {
            f.channel = Some(c.channel.clone());
            if f.class.is_none() && f.attempts.is_some() {
                let class = if f.reason == "non-retryable" {
                    "permanent"
                } else {
                    "transient"
                };
                f.class = Some(class.to_string());
            }
        }
        None if !task.is_empty() => f.task = Some(task.clone()),
        None => {}
    }
    if f.attempts.is_some() {
        f.last_attempt_ms = Some(last_attempt_ms);
        f.first_attempt_ms = Some(
            w.snap
                .first_attempt_ms(&f.node)
                .unwrap_or(last_attempt_ms)
                .min(last_attempt_ms),
        );
    }
    w.snap.set_failure(&f);
    let mut detail = Vec::new();
    if let Some(c) = &f.class {
        detail.push(format!("class {c}"));
    }
    match (&f.task, &f.channel) {
        (Some(t), _) => detail.push(format!("task {t}")),
        (_, Some(c)) => detail.push(format!("channel {c}")),
        _ => {}
    }
    if let (Some(a), Some(b)) = (f.first_attempt_ms, f.last_attempt_ms) {
        detail.push(format!(
            "attempts from +{} to +{}",
            qflow_model::duration::compact_ms(a - w.started_ms),
            qflow_model::duration::compact_ms(b - w.started_ms)
        ));
    }
    if detail.is_empty() {
        return;
    }
    let node_id = f.node.clone();
    if let Some(i) = w
        .open_incidents
        .iter_mut()
        .rev()
        .find(|i| i.kind == IncidentKind::Failed && i.node == node_id)
    {
        i.message = format!("{}; {}", i.message, detail.join(", "));
    }
}

/// Accumulates one decision.
pub(crate) struct Work {
    before: Snapshot,
    pub(crate) snap: Snapshot,
    started_ms: i64,
    pub(crate) now_ms: i64,
    pub(crate) status: Option<Status>,
    pub(crate) arm: Vec<NewTimer>,
    pub(crate) resolve: Vec<i64>,
    pub(crate) history: Vec<Entry>,
    pub(crate) open_incidents: Vec<NewIncident>,
    pub(crate) close_incidents: Vec<String>,
    pub(crate) close_in_flight: Vec<String>,
    pub(crate) calls: CallEffects,
}

impl Work {
    fn new(before: Snapshot, started_ms: i64, now_ms: i64) -> Work {
        Work {
            snap: before.clone(),
            before,
            started_ms,
            now_ms,
            status: None,
            arm: Vec::new(),
            resolve: Vec::new(),
            history: Vec::new(),
            open_incidents: Vec::new(),
            close_incidents: Vec::new(),
            close_in_flight: Vec::new(),
            calls: CallEffects::default(),
        }
    }

    /// An absolute instant as history time (since the instance started).
    pub(crate) fn rel(&self, ms: i64) -> Secs {
        Secs(ms - self.started_ms)
    }

    /// Record a line at now.
    pub(crate) fn entry(&mut self, node: Option<&str>, event: HistoryEvent) -> &mut Entry {
        let line = Line {
            at_s: self.rel(self.now_ms),
            node: node.map(str::to_string),
            event,
        };
        self.history.push(Entry::new(line));
        self.history.last_mut().expect("just pushed")
    }

    pub(crate) fn tokens(&self) -> Vec<Token> {
        self.snap.frontier()
    }

    /// Remove one token at `node` in `state`; false if there is none.
    pub(crate) fn take(&mut self, node: &str, state: TokenState) -> bool {
        let mut t = self.tokens();
        match t.iter().position(|x| x.node == node && x.state == state) {
            Some(i) => {
                t.remove(i);
                self.snap.set_frontier(t);
                true
            }
            None => false,
        }
    }

    pub(crate) fn set_state(&mut self, node: &str, from: TokenState, to: TokenState) {
        let mut t = self.tokens();
        if let Some(x) = t.iter_mut().find(|x| x.node == node && x.state == from) {
            x.state = to;
        }
        self.snap.set_frontier(t);
    }

    pub(crate) fn push(&mut self, tok: Token) {
        let mut t = self.tokens();
        t.push(tok);
        self.snap.set_frontier(t);
    }

    fn finish(self, armed: &[TimerRow]) -> Transition {
        let status = self.status.unwrap_or_else(|| {
            let t = self.snap.frontier();
            if t.is_empty() {
                Status::Completed
            } else if t.iter().any(|x| x.state == TokenState::Ready) {
                Status::Running
            } else {
                Status::Waiting
            }
        });
        let mut resolve = self.resolve;
        if status.is_terminal() {
            resolve.extend(armed.iter().map(|t| t.id));
        }
        resolve.sort_unstable();
        resolve.dedup();
        let mut set = BTreeMap::new();
        for (k, v) in self.snap.entries() {
            if self.before.get(k) != Some(v) {
                set.insert(k.to_string(), v.clone());
            }
        }
        let removed = self
            .before
            .keys()
            .filter(|k| self.snap.get(k).is_none())
            .map(str::to_string)
            .collect();
        Transition {
            snapshot: self.snap,
            set,
            removed,
            status,
            arm: self.arm,
            resolve,
            history: self.history,
            open_incidents: self.open_incidents,
            close_incidents: self.close_incidents,
            close_in_flight: self.close_in_flight,
            calls: self.calls,
            keep_stored_snapshot: false,
        }
    }
}

/// A token arriving at `target` by `flow`.
pub(crate) fn arrive(graph: &Graph, flow: &str, target: &str) -> Token {
    let join = graph.node(target).is_some_and(GNode::is_join);
    Token {
        node: target.to_string(),
        state: TokenState::Ready,
        via: join.then(|| flow.to_string()),
    }
}

/// The event had no effect: say which and why.
pub(crate) fn ignore(w: &mut Work, event: &Event, reason: &str) {
    let (what, node) = event.name_and_node();
    let idx = match event {
        Event::External { index, .. } => *index,
        _ => None,
    };
    let e = w.entry(
        node,
        HistoryEvent::Ignored {
            event: what.to_string(),
            reason: reason.to_string(),
        },
    );
    e.event_index = idx;
}

/// Move the token onward from `node` along its outgoing flows (all flows whose
/// condition holds; a node with none just ends the token there).
pub(crate) fn leave(graph: &Graph, w: &mut Work, node: &GNode) -> Vec<String> {
    let vars = w.snap.variables();
    let mut targets = Vec::new();
    for o in &node.outgoing {
        if o.condition.as_ref().is_none_or(|c| c.eval(&vars)) {
            w.push(arrive(graph, &o.flow, &o.target));
            targets.push(o.target.clone());
        }
    }
    targets
}

/// The failure class and message of the attempt that ended on the fatal path.
pub(crate) type LastAttempt<'a> = Option<(&'a str, Option<&'a str>)>;

/// The one fatal path (docs/runtime.md): a durable FAILED snapshot with the code, the reason
/// and the counters; every armed timer resolved. The frontier is kept as it
/// stood (where the instance stopped, for inspection and repair).
pub(crate) fn fatal(
    w: &mut Work,
    node: &str,
    code: &str,
    reason: &str,
    attempts: Option<u32>,
    last: LastAttempt<'_>,
) {
    w.snap.set_failure(&Failure {
        code: code.to_string(),
        reason: reason.to_string(),
        node: node.to_string(),
        attempts,
        class: last.map(|(c, _)| c.to_string()),
        message: last.and_then(|(_, m)| m.map(str::to_string)),
        ..Failure::default()
    });
    w.status = Some(Status::Failed);
    w.entry(
        Some(node),
        HistoryEvent::Failed {
            code: code.to_string(),
            reason: reason.to_string(),
            attempts,
        },
    );
    w.open_incidents.push(NewIncident {
        node: node.to_string(),
        kind: IncidentKind::Failed,
        // The last attempt's own words travel with the incident: an
        // operator reading it sees why, not only a code.
        message: match last.and_then(|(_, m)| m) {
            Some(m) => format!("instance failed at {node}: {code} ({reason}): {m}"),
            None => format!("instance failed at {node}: {code} ({reason})"),
        },
    });
    // No request of a FAILED instance is delivered: every undelivered row is
    // kept, abandoned, with why (a repair emits fresh requests).
    w.calls.abandon.push(qflow_instance::Abandon {
        node: None,
        reason: format!("the instance failed at {node}: {code} ({reason})"),
    });
}

pub(crate) fn ms(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// Every armed timer that belongs to task `node`: its retry timer and the
/// timers of its boundaries.
pub(crate) fn task_timers(graph: &Graph, armed: &[TimerRow], node: &str) -> Vec<i64> {
    armed
        .iter()
        .filter(|t| {
            t.node == node
                || matches!(graph.node(&t.node).map(|n| &n.kind),
                    Some(Kind::TimerBoundary { attached_to, .. }) if attached_to == node)
        })
        .map(|t| t.id)
        .collect()
}

/// The first error boundary of a task that catches `code` (an exact match,
/// else a catch-all).
pub(crate) fn catching<'a>(
    error_boundaries: &'a [(String, Option<String>)],
    code: &str,
) -> Option<&'a str> {
    error_boundaries
        .iter()
        .find(|(_, c)| c.as_deref() == Some(code))
        .or_else(|| error_boundaries.iter().find(|(_, c)| c.is_none()))
        .map(|(b, _)| b.as_str())
}
