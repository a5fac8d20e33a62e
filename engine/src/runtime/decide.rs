//! The functional core: every decision is a pure function of durable facts
//! (the snapshot, the instance's armed timers, its status), one event, and the
//! clock's `now`, returning a [`Transition`] the store applies atomically under
//! the instance claim. Nothing here touches the store, a handler or the clock.
//!
//! Handlers are effects: the driver runs one and hands its outcome in as the
//! event ([`Event::Attempt`]), so the attempt and its consequences (counter,
//! park, timer, history) commit in one transaction.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::policy::{Next, StopReason};
use crate::runtime::graph::{GNode, Graph, Kind};
use crate::runtime::scenario::{
    ChannelOutcome, DeliveryOutcome, ExternalEvent, FailureClass, Resolution, TaskOutcome,
};

pub mod call;
use crate::runtime::snapshot::{Snapshot, Token, TokenState};

/// An instance's lifecycle status (a column of the instance row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Has a token ready to execute.
    Running,
    /// Parked: every token waits on a timer, a join or a reconciliation.
    Waiting,
    Completed,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Waiting => "waiting",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        [
            Status::Running,
            Status::Waiting,
            Status::Completed,
            Status::Failed,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed)
    }
}

/// What an armed timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A backoff park: when due, the next attempt of the task runs.
    Retry,
    /// An intermediate timer catch event.
    Timer,
    /// A timer boundary of a task (the timer row's node is the boundary).
    Boundary,
    /// A channel call's route-less `<q:timeout>`: when due, the attempt failed.
    Timeout,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Retry => "retry",
            Purpose::Timer => "timer",
            Purpose::Boundary => "boundary",
            Purpose::Timeout => "timeout",
        }
    }

    pub fn parse(s: &str) -> Option<Purpose> {
        [
            Purpose::Retry,
            Purpose::Timer,
            Purpose::Boundary,
            Purpose::Timeout,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

/// An armed timer row, as the decisions see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerRow {
    pub id: i64,
    pub node: String,
    pub purpose: Purpose,
    pub due_ms: i64,
    /// For a retry timer: the attempt it drives.
    pub attempt: Option<u32>,
}

/// A timer to arm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTimer {
    pub node: String,
    pub purpose: Purpose,
    pub due_ms: i64,
    pub attempt: Option<u32>,
}

/// The durable facts a decision reads.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub instance_id: &'a str,
    pub status: Status,
    pub started_ms: i64,
    pub snapshot: &'a Snapshot,
    /// The instance's armed timers.
    pub timers: &'a [TimerRow],
}

/// One thing that happens to an instance.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Execute the ready token at a non-task node.
    Advance { node: String },
    /// A registered task's handler ran once; `timer` is the retry timer that
    /// drove this attempt (`None` for the first attempt, or a reconciled retry).
    Attempt {
        node: String,
        outcome: TaskOutcome,
        timer: Option<i64>,
    },
    /// A non-retry timer came due.
    TimerDue { timer: i64 },
    /// A counterpart's response, matched to this node by its correlation.
    Response {
        node: String,
        /// The idempotency key of the request it answers.
        request: String,
        body: Value,
    },
    /// The outbox gave up on a request of this node: a prompt to look, never
    /// a fact. `poisoned` is what the re-read under the claim found: a
    /// poisoned row for exactly this instance and node.
    PoisonWake { node: String, poisoned: bool },
    /// The dispatcher tried to deliver one outbox row; for a delivered
    /// request, what the counterpart will do with it.
    Delivery {
        row: OutboxRow,
        outcome: DeliveryOutcome,
        counterpart: Option<ChannelOutcome>,
    },
    /// Something from outside: a late delivery, a reconciliation.
    External {
        event: ExternalEvent,
        /// The scenario's `events` index, or `None` (e.g. `--resolve`).
        index: Option<usize>,
    },
}

/// One history entry: a line of `qflow run`.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub kind: String,
    pub node: Option<String>,
    pub attempt: Option<u32>,
    pub code: Option<String>,
    /// The retry timer this entry consumed (attempts only).
    pub timer_id: Option<i64>,
    pub event_index: Option<usize>,
    /// The full line, `at_s` included.
    pub detail: Value,
}

/// An incident to open (closed when its node is left).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIncident {
    pub node: String,
    pub kind: String,
    pub message: String,
}

/// An outbox row, as a delivery decision sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    pub id: i64,
    pub node: String,
    pub channel: String,
    pub attempt: u32,
    pub deliveries: u32,
    pub idempotency_key: String,
}

/// A request to put in the outbox (state pending, due now).
#[derive(Debug, Clone, PartialEq)]
pub struct NewRequest {
    pub node: String,
    pub channel: String,
    pub operation: Option<String>,
    pub attempt: u32,
    pub idempotency_key: String,
    /// The request body: the instance's variables at emission.
    pub payload: Value,
}

/// What a delivery decision does to its outbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutboxChange {
    Delivered {
        id: i64,
        deliveries: u32,
    },
    Retry {
        id: i64,
        deliveries: u32,
        next_ms: i64,
    },
    Poisoned {
        id: i64,
        deliveries: u32,
    },
}

/// A decision's effects on the outbox and the correlations (channel calls).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallEffects {
    pub emit: Vec<NewRequest>,
    /// Nodes whose undelivered rows (pending and poisoned) are withdrawn:
    /// the dead attempt's, at a backoff park or the fatal path.
    pub withdraw: Vec<String>,
    pub outbox: Vec<OutboxChange>,
    /// Nodes whose correlation must exist (created on first emission).
    pub correlate: Vec<String>,
    /// Nodes whose correlation is retired (the call is over).
    pub retire: Vec<String>,
    /// A migration's node mapping `(old, new)`: the instance's outbox rows
    /// and correlation move with their node, so the live attempt's response
    /// and a pending delivery still find it under its new name.
    pub rename: Vec<(String, String)>,
}

/// The outcome of one decision, applied by the store in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The snapshot after the decision.
    pub snapshot: Snapshot,
    /// Keys written (with their new values) and keys removed.
    pub set: BTreeMap<String, Value>,
    pub removed: Vec<String>,
    pub status: Status,
    pub arm: Vec<NewTimer>,
    /// Armed timers this decision consumes or cancels.
    pub resolve: Vec<i64>,
    pub history: Vec<Entry>,
    pub open_incidents: Vec<NewIncident>,
    /// Close the open incidents of these nodes.
    pub close_incidents: Vec<String>,
    pub calls: CallEffects,
}

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
        "start",
        Some(&graph.start),
        json!({"variables": Value::Object(variables.clone().into_iter().collect::<Map<_, _>>())}),
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
    match event {
        Event::Advance { node } => advance(graph, facts, &mut w, node),
        Event::Attempt {
            node,
            outcome,
            timer,
        } => attempt(graph, facts, &mut w, node, outcome, *timer),
        Event::TimerDue { timer } => timer_due(graph, facts, &mut w, *timer),
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
        Event::External { event: ext, index } => external(graph, facts, &mut w, ext, *index, event),
    }
    w.finish(facts.timers)
}

/// Accumulates one decision.
struct Work {
    before: Snapshot,
    snap: Snapshot,
    started_ms: i64,
    now_ms: i64,
    status: Option<Status>,
    arm: Vec<NewTimer>,
    resolve: Vec<i64>,
    history: Vec<Entry>,
    open_incidents: Vec<NewIncident>,
    close_incidents: Vec<String>,
    calls: CallEffects,
}

/// Seconds as a JSON number: an integer when whole.
pub fn seconds(ms: i64) -> Value {
    if ms % 1000 == 0 {
        json!(ms / 1000)
    } else {
        json!(ms as f64 / 1000.0)
    }
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
            calls: CallEffects::default(),
        }
    }

    fn rel(&self, ms: i64) -> Value {
        seconds(ms - self.started_ms)
    }

    /// Record a line; `extra` fields join `at_s`, `kind` and `node`.
    fn entry(&mut self, kind: &str, node: Option<&str>, extra: Value) -> &mut Entry {
        let mut m = Map::new();
        m.insert("at_s".into(), self.rel(self.now_ms));
        m.insert("kind".into(), json!(kind));
        if let Some(n) = node {
            m.insert("node".into(), json!(n));
        }
        if let Value::Object(x) = extra {
            m.extend(x);
        }
        let attempt = m.get("attempt").and_then(Value::as_u64).map(|a| a as u32);
        let code = m.get("code").and_then(Value::as_str).map(str::to_string);
        self.history.push(Entry {
            kind: kind.into(),
            node: node.map(str::to_string),
            attempt,
            code,
            timer_id: None,
            event_index: None,
            detail: Value::Object(m),
        });
        self.history.last_mut().expect("just pushed")
    }

    fn tokens(&self) -> Vec<Token> {
        self.snap.frontier()
    }

    /// Remove one token at `node` in `state`; false if there is none.
    fn take(&mut self, node: &str, state: TokenState) -> bool {
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

    fn set_state(&mut self, node: &str, from: TokenState, to: TokenState) {
        let mut t = self.tokens();
        if let Some(x) = t.iter_mut().find(|x| x.node == node && x.state == from) {
            x.state = to;
        }
        self.snap.set_frontier(t);
    }

    fn push(&mut self, tok: Token) {
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
            calls: self.calls,
        }
    }
}

/// A token arriving at `target` by `flow`.
fn arrive(graph: &Graph, flow: &str, target: &str) -> Token {
    let join = graph.node(target).is_some_and(GNode::is_join);
    Token {
        node: target.to_string(),
        state: TokenState::Ready,
        via: join.then(|| flow.to_string()),
    }
}

fn ignore(w: &mut Work, event: &Event, reason: &str) {
    let (what, node) = match event {
        Event::Advance { node } => ("advance", Some(node.as_str())),
        Event::Attempt { node, .. } => ("attempt", Some(node.as_str())),
        Event::TimerDue { .. } => ("timer", None),
        Event::Response { node, .. } => ("response", Some(node.as_str())),
        Event::PoisonWake { node, .. } => ("poison-wake", Some(node.as_str())),
        Event::Delivery { row, .. } => ("delivery", Some(row.node.as_str())),
        Event::External { event, .. } => (
            match event {
                ExternalEvent::Redeliver { .. } => "redeliver",
                ExternalEvent::Resolve { .. } => "resolve",
            },
            Some(event.node()),
        ),
    };
    let idx = match event {
        Event::External { index, .. } => *index,
        _ => None,
    };
    let e = w.entry("ignored", node, json!({"event": what, "reason": reason}));
    e.event_index = idx;
}

/// Move the token onward from `node` along its outgoing flows (all flows whose
/// condition holds; a node with none just ends the token there).
fn leave(graph: &Graph, w: &mut Work, node: &GNode) -> Vec<String> {
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

/// The one fatal path (docs/runtime.md): a durable FAILED snapshot with the code,
/// the reason and the counters; every armed timer resolved. The frontier is
/// kept as it stood (where the instance stopped, for inspection and repair).
fn fatal(
    w: &mut Work,
    node: &str,
    code: &str,
    reason: &str,
    attempts: Option<u32>,
    last: Option<(&str, Option<&str>)>,
) {
    let mut f = json!({"code": code, "reason": reason, "node": node});
    if let Some(a) = attempts {
        f["attempts"] = json!(a);
    }
    if let Some((class, message)) = last {
        f["class"] = json!(class);
        if let Some(m) = message {
            f["message"] = json!(m);
        }
    }
    w.snap.set("failure", f);
    w.status = Some(Status::Failed);
    let mut extra = json!({"code": code, "reason": reason});
    if let Some(a) = attempts {
        extra["attempts"] = json!(a);
    }
    w.entry("failed", Some(node), extra);
    w.open_incidents.push(NewIncident {
        node: node.to_string(),
        kind: "failed".into(),
        message: format!("instance failed at {node}: {code} ({reason})"),
    });
}

fn advance(graph: &Graph, facts: &Facts<'_>, w: &mut Work, id: &str) {
    let Some(node) = graph.node(id) else {
        return ignore(
            w,
            &Event::Advance { node: id.into() },
            "no such node in the deployment",
        );
    };
    let ready = w
        .tokens()
        .into_iter()
        .find(|t| t.node == id && t.state == TokenState::Ready);
    let Some(token) = ready else {
        return ignore(
            w,
            &Event::Advance { node: id.into() },
            "no ready token there",
        );
    };
    match &node.kind {
        Kind::Start => {
            w.take(id, TokenState::Ready);
            let to = leave(graph, w, node);
            w.entry("pass", Some(id), json!({"to": to}));
        }
        Kind::End => {
            w.take(id, TokenState::Ready);
            w.entry("end", Some(id), json!({}));
        }
        Kind::ErrorEnd { code } => {
            w.take(id, TokenState::Ready);
            w.entry("end", Some(id), json!({"code": code, "error": true}));
            fatal(w, id, code, "uncaught-error", None, None);
        }
        Kind::Exclusive { default } => {
            let vars = w.snap.variables();
            let chosen = node
                .outgoing
                .iter()
                .filter(|o| Some(&o.flow) != default.as_ref())
                .find(|o| o.condition.as_ref().is_none_or(|c| c.eval(&vars)))
                .or_else(|| {
                    node.outgoing
                        .iter()
                        .find(|o| Some(&o.flow) == default.as_ref())
                });
            w.take(id, TokenState::Ready);
            match chosen {
                Some(o) => {
                    let is_default = Some(&o.flow) == default.as_ref();
                    w.push(arrive(graph, &o.flow, &o.target));
                    w.entry(
                        "gateway",
                        Some(id),
                        json!({"flow": o.flow, "to": [o.target], "default": is_default}),
                    );
                }
                None => {
                    let names: Vec<&str> = node.outgoing.iter().map(|o| o.flow.as_str()).collect();
                    w.entry(
                        "gateway",
                        Some(id),
                        json!({"to": [], "code": "q.gateway.no-match",
                               "reason": format!("no condition of {} holds and the gateway has no default flow", names.join(", "))}),
                    );
                    fatal(w, id, "q.gateway.no-match", "uncaught-error", None, None);
                }
            }
        }
        Kind::Parallel if node.is_join() => {
            w.take(id, TokenState::Ready);
            w.push(Token {
                state: TokenState::Joined,
                ..token
            });
            let joined: Vec<Token> = w
                .tokens()
                .into_iter()
                .filter(|t| t.node == id && t.state == TokenState::Joined)
                .collect();
            let complete = node
                .incoming
                .iter()
                .all(|f| joined.iter().any(|t| t.via.as_deref() == Some(f)));
            if complete {
                let mut t = w.tokens();
                for f in &node.incoming {
                    if let Some(i) = t.iter().position(|x| {
                        x.node == id && x.state == TokenState::Joined && x.via.as_deref() == Some(f)
                    }) {
                        t.remove(i);
                    }
                }
                w.snap.set_frontier(t);
                let to = leave(graph, w, node);
                w.entry(
                    "gateway",
                    Some(id),
                    json!({"joined": node.incoming.len(), "to": to}),
                );
            } else {
                let arrived: Vec<&str> = node
                    .incoming
                    .iter()
                    .filter(|f| joined.iter().any(|t| t.via.as_deref() == Some(f.as_str())))
                    .map(String::as_str)
                    .collect();
                w.entry(
                    "join",
                    Some(id),
                    json!({"arrived": arrived.len(), "of": node.incoming.len()}),
                );
            }
        }
        Kind::Parallel => {
            w.take(id, TokenState::Ready);
            let to: Vec<String> = node.outgoing.iter().map(|o| o.target.clone()).collect();
            for o in &node.outgoing {
                w.push(arrive(graph, &o.flow, &o.target));
            }
            w.entry("gateway", Some(id), json!({"to": to}));
        }
        Kind::Timer { duration } => {
            w.set_state(id, TokenState::Ready, TokenState::Timer);
            let due = w.now_ms + ms(*duration);
            w.arm.push(NewTimer {
                node: id.into(),
                purpose: Purpose::Timer,
                due_ms: due,
                attempt: None,
            });
            let until = w.rel(due);
            w.entry("wait", Some(id), json!({"for": "timer", "until_s": until}));
        }
        Kind::Task { call: Some(_), .. } => {
            w.set_state(id, TokenState::Ready, TokenState::Timer);
            call::emit(facts, w, node, false);
        }
        Kind::Task { .. } => ignore(
            w,
            &Event::Advance { node: id.into() },
            "a task runs through its handler",
        ),
        Kind::TimerBoundary { .. } | Kind::ErrorBoundary { .. } => {
            w.take(id, TokenState::Ready);
            let to = leave(graph, w, node);
            w.entry("pass", Some(id), json!({"to": to}));
        }
    }
}

fn ms(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// Every armed timer that belongs to task `node`: its retry timer and the
/// timers of its boundaries.
fn task_timers(graph: &Graph, armed: &[TimerRow], node: &str) -> Vec<i64> {
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
fn arm_boundaries(graph: &Graph, facts: &Facts<'_>, w: &mut Work, node: &GNode, activated_ms: i64) {
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

fn attempt(
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
    let Some(node) = graph.node(id) else {
        return ignore(w, &ev, "no such node in the deployment");
    };
    let Kind::Task {
        task,
        policy,
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
    let n = w.snap.attempts(id).saturating_add(1);
    let mut line = json!({"attempt": n, "task": task});
    let idx = w.history.len();
    match outcome {
        TaskOutcome::Ok(vars) => {
            for (k, v) in vars {
                w.snap.set_variable(k, v.clone());
            }
            line["outcome"] = json!("ok");
            w.entry("attempt", Some(id), line);
            let to = complete_task(graph, facts, w, node, from);
            w.history[idx].detail["to"] = json!(to);
        }
        TaskOutcome::BpmnError { code } => {
            line["outcome"] = json!("bpmn-error");
            line["code"] = json!(code);
            w.entry("attempt", Some(id), line);
            let caught = error_boundaries
                .iter()
                .find(|(_, c)| c.as_deref() == Some(code.as_str()))
                .or_else(|| error_boundaries.iter().find(|(_, c)| c.is_none()));
            match caught {
                Some((b, _)) => {
                    w.take(id, from);
                    w.snap.clear_node(id);
                    w.resolve.extend(task_timers(graph, facts.timers, id));
                    w.close_incidents.push(id.to_string());
                    let bnode = graph.node(b).expect("compiled boundary");
                    let to = leave(graph, w, bnode);
                    w.entry(
                        "boundary",
                        Some(b),
                        json!({"from": id, "code": code, "to": to}),
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
        } => {
            line["outcome"] = json!("failed");
            line["code"] = json!(code);
            line["class"] = json!(class.as_str());
            // A missing start (first failure, or a damaged key) counts from now.
            let first_ms = w.snap.first_attempt_ms(id).unwrap_or(w.now_ms);
            let last = Some((class.as_str(), message.as_deref()));
            if *class == FailureClass::UnknownOutcome {
                // No blind retry: the effect may have happened.
                if policy.is_some() {
                    w.snap.set(format!("attempts.{id}"), json!(n));
                    w.snap.set(format!("first_attempt.{id}"), json!(first_ms));
                }
                w.snap.set(
                    format!("reconcile.{id}"),
                    json!({"code": code, "attempt": n}),
                );
                w.set_state(id, from, TokenState::Reconcile);
                arm_boundaries(graph, facts, w, node, first_ms);
                line["then"] = json!("reconcile");
                w.entry("attempt", Some(id), line);
                w.entry(
                    "wait",
                    Some(id),
                    json!({"for": "reconciliation", "code": code}),
                );
                w.open_incidents.push(NewIncident {
                    node: id.into(),
                    kind: "reconciliation".into(),
                    message: format!(
                        "attempt {n} of {id} ended with an unknown outcome ({code}): resolve it as succeeded, failed or retry"
                    ),
                });
                return;
            }
            let Some(policy) = policy else {
                // No policy: a budget of one attempt; the counters stay absent.
                line["then"] = json!("failed");
                w.entry("attempt", Some(id), line);
                let reason = if *class == FailureClass::Permanent {
                    "non-retryable"
                } else {
                    "exhausted"
                };
                return fatal(w, id, code, reason, Some(n), last);
            };
            w.snap.set(format!("attempts.{id}"), json!(n));
            w.snap.set(format!("first_attempt.{id}"), json!(first_ms));
            let next = if *class == FailureClass::Permanent {
                Next::Stop(StopReason::NonRetryable)
            } else {
                let after = if *class == FailureClass::RateLimited {
                    *retry_after
                } else {
                    None
                };
                let elapsed = Duration::from_millis((w.now_ms - first_ms).max(0) as u64);
                policy.next_after_failure(n, code, after, elapsed, facts.instance_id, id)
            };
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
                    line["then"] = json!("backoff");
                    line["next_attempt"] = json!(attempt);
                    line["next_at_s"] = w.rel(due);
                    line["delay_s"] = seconds(ms(delay));
                    w.entry("attempt", Some(id), line);
                }
                Next::Stop(reason) => {
                    line["then"] = json!("failed");
                    w.entry("attempt", Some(id), line);
                    fatal(w, id, code, reason.as_str(), Some(n), last);
                }
            }
        }
    }
    if let Some(t) = timer {
        w.history[idx].timer_id = Some(t);
    }
}

fn timer_due(graph: &Graph, facts: &Facts<'_>, w: &mut Work, id: i64) {
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
            w.entry("timer", Some(&node.id), json!({"to": to}));
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
            let active = w.tokens().into_iter().find(|x| {
                &x.node == attached_to
                    && matches!(x.state, TokenState::Backoff | TokenState::Reconcile)
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
            }
            let to = leave(graph, w, node);
            w.entry(
                "boundary",
                Some(&node.id),
                json!({"from": attached_to, "timer": true, "interrupting": interrupting, "to": to}),
            );
        }
        _ => {
            ignore(w, &ev, "a retry timer re-drives through the task's handler");
        }
    }
}

fn external(
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
            let code = w
                .snap
                .get(&format!("reconcile.{id}"))
                .and_then(|v| v.get("code"))
                .and_then(Value::as_str)
                .unwrap_or("q.unknown-outcome")
                .to_string();
            let idx = w.history.len();
            match resolution {
                Resolution::Succeeded => {
                    for (k, v) in variables {
                        w.snap.set_variable(k, v.clone());
                    }
                    w.entry(
                        "reconciled",
                        Some(id),
                        json!({"as": "succeeded", "code": code}),
                    );
                    let to = complete_task(graph, facts, w, node, TokenState::Reconcile);
                    w.history[idx].detail["to"] = json!(to);
                }
                Resolution::Failed => {
                    w.entry(
                        "reconciled",
                        Some(id),
                        json!({"as": "failed", "code": code}),
                    );
                    let n = w.snap.attempts(id).max(1);
                    fatal(
                        w,
                        id,
                        &code,
                        "non-retryable",
                        Some(n),
                        Some(("unknown-outcome", None)),
                    );
                }
                Resolution::Retry => {
                    w.entry("reconciled", Some(id), json!({"as": "retry", "code": code}));
                    let n = w.snap.attempts(id);
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
                            w.snap.remove(&format!("reconcile.{id}"));
                            w.set_state(id, TokenState::Reconcile, TokenState::Ready);
                            w.close_incidents.push(id.clone());
                        }
                    }
                }
            }
            w.history[idx].event_index = index;
        }
    }
}
