//! The inspection model: one instance as plain data, read back from the
//! store. Every view of an instance (the console's panels, `qflow run`'s
//! final line, any later view over many instances) renders an
//! [`Inspection`]; none computes what is in it.
//!
//! Built only from store reads (the instance row, its snapshot, timers,
//! history, incidents, outbox and correlations) and the shape of its
//! deployed model, so what it shows is what is persisted. It holds no
//! database type: a store over another database fills the same model.
//!
//! Times are milliseconds since the instance started (the axis `qflow run`
//! prints as `at_s`), except where a field says otherwise.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::instance::history::{HistoryEvent, Line};
use crate::instance::snapshot::{canonical_string, Failure, Family, Snapshot, TokenState};
use crate::instance::{Purpose, Status};
use crate::runtime::graph::Graph;
use crate::store::contain::PauseKind;
use crate::store::{CorrelationRow, IncidentRow, OutboxEntry, Store, StoreError, TimerInfo};

mod final_state;
pub mod fleet;
mod nodes;
mod schedule;

pub use final_state::{token_words, waiting_for, End, FinalState};
pub use fleet::{Filter, InstanceSummary};
pub use nodes::{flow_order, NodeInspection, NodeKind, NodeState};
pub use schedule::{AttemptResult, PastAttempt, PlannedAttempt, SchedulePlan};

/// One instance, as every view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspection {
    pub id: String,
    pub process: String,
    pub deployment_id: i64,
    pub status: Status,
    /// Start and last decision, on the run's clock (absolute ms).
    pub started_ms: i64,
    pub updated_ms: i64,
    /// The fatal path's record, when the instance failed (or once did).
    pub failure: Option<Failure>,
    /// What a running or waiting instance waits for.
    pub waiting: Option<Waiting>,
    /// Every node of the model, in flow order, with where it stands.
    pub nodes: Vec<NodeInspection>,
    /// The node an operator's actions act on: where the instance failed,
    /// else its first token.
    pub current: Option<String>,
    /// Snapshot keys in canonical order.
    pub snapshot: Vec<SnapshotKey>,
    /// The stored snapshot bytes (lossy UTF-8) when they cannot be decoded
    /// at all: kept as they are, shown as they are.
    pub raw_snapshot: Option<String>,
    /// Armed timers, in arming order.
    pub timers: Vec<TimerInfo>,
    pub outbox: Vec<OutboxEntry>,
    pub correlations: Vec<Correlation>,
    pub incidents: Vec<IncidentRow>,
    pub history: Vec<HistoryItem>,
    /// For every node with a retry policy that has started: its attempts
    /// so far and the eligible times still to come.
    pub schedules: Vec<SchedulePlan>,
    /// Whether the model has channel calls.
    pub channel_calls: bool,
    /// When it was quarantined (wall clock, ms since the epoch), if it is:
    /// nothing decides for it until it is released.
    pub quarantined_ms: Option<i64>,
    /// Who quarantined it and why (`None`: not recorded, or not quarantined).
    pub quarantined_by: Option<String>,
    pub quarantine_reason: Option<String>,
    /// Its retry parks that a pause holds back, earliest due first (one
    /// per pause holding it).
    pub held: Vec<Held>,
    /// Its quarantines and releases as the containment log has them,
    /// oldest first: who set it aside or let it go, when and why, after
    /// the quarantine itself is gone.
    pub containment_log: Vec<crate::store::contain::Logged>,
    /// Its retry parks a release ramp holds until the instant the ramp
    /// gave them (later than their own due time), earliest first.
    pub ramped: Vec<crate::store::release::RampHold>,
}

/// A retry park a pause holds: its due time is kept, and it is re-driven
/// when the pause is lifted (at once if that time has passed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub node: String,
    /// What is held: a retry park (its timer), a first attempt, a delivery.
    pub request: HeldRequest,
    /// The retry park's timer (0 for a first attempt or a delivery).
    pub timer: i64,
    /// When the park falls due, in ms since the instance started.
    pub due_ms: i64,
    /// The pause holding it: a failure class or a dependency, and its value.
    pub kind: PauseKind,
    pub value: String,
    /// When that pause was made (wall clock, ms since the epoch).
    pub paused_ms: i64,
    /// Who made it and why (`None`: made before qflow recorded who).
    pub paused_by: Option<String>,
    pub reason: Option<String>,
}

/// Which request of a node a pause holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldRequest {
    /// A retry park: its timer stays armed with its due time.
    Retry,
    /// A first attempt of a registered task: its token waits at the task.
    FirstAttempt,
    /// A delivery of a channel call's request: it stays pending, its key kept.
    Delivery,
}

impl HeldRequest {
    /// How `show` says it: `the retry of charge`, …
    pub fn words(self) -> &'static str {
        match self {
            HeldRequest::Retry => "the retry",
            HeldRequest::FirstAttempt => "the first attempt",
            HeldRequest::Delivery => "the delivery of the request",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HeldRequest::Retry => "retry",
            HeldRequest::FirstAttempt => "first-attempt",
            HeldRequest::Delivery => "delivery",
        }
    }
}

impl Held {
    /// The pause in an operator's words: `dependency payments.charge`,
    /// `class transient`; the flag of `qflow unpause` that lifts it is
    /// `--` followed by the same two words.
    pub fn pause(&self) -> String {
        format!("{} {}", self.kind.flag(), self.value)
    }

    /// Who made the pause and why, in words: `by alice@ops1 ("…")`.
    pub fn by(&self) -> String {
        crate::store::contain::Actor::words(self.paused_by.as_deref(), self.reason.as_deref())
    }
}

/// What a waiting instance waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum Waiting {
    /// An unknown outcome at `node`, for an operator's reconciliation.
    /// `attempts`: how many times the task has run so far.
    Reconciliation {
        node: String,
        code: Option<String>,
        attempts: Option<u32>,
    },
    /// Its earliest armed timer: a retry, a timer event, a boundary, or a
    /// call's response (its timeout).
    Timer {
        node: String,
        purpose: Purpose,
        due_ms: i64,
    },
    /// Nothing a local run can give it: the tokens and where they stand.
    Nothing {
        tokens: BTreeMap<String, TokenState>,
    },
}

/// One snapshot key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotKey {
    pub key: String,
    /// The value's canonical JSON text, as stored.
    pub value: String,
    /// The node-scoped family it belongs to, if any.
    pub family: Option<Family>,
    /// For a marker (`backoff.<node>`, `reconcile.<node>`): its code, and
    /// class when recorded.
    pub marker: Option<(String, Option<String>)>,
}

/// A live correlation and whether its call is in a backoff window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correlation {
    pub key: String,
    pub node: String,
    pub in_backoff: bool,
}

/// One history row: its columns and its typed line.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryItem {
    pub seq: i64,
    pub at_ms: i64,
    pub kind: String,
    pub node: Option<String>,
    pub attempt: Option<u32>,
    pub code: Option<String>,
    /// `None` for a row this version cannot read.
    pub line: Option<Line>,
}

impl Inspection {
    /// Read instance `id` from `store`; `graph` is its deployed model.
    pub fn read(store: &Store, graph: &Graph, id: &str) -> Result<Inspection, StoreError> {
        let row = store
            .instance(id)?
            .ok_or_else(|| StoreError::NoInstance(id.to_string()))?;
        let start = row.started_ms;
        // A snapshot that does not decode shows its raw bytes and no keys,
        // never hides the rest.
        let decoded = Snapshot::decode(&row.snapshot);
        let raw_snapshot = decoded
            .is_err()
            .then(|| String::from_utf8_lossy(&row.snapshot).into_owned());
        let snap = decoded.unwrap_or_default();
        let all_timers = store.timers(id)?;
        let timers: Vec<TimerInfo> = all_timers.into_iter().filter(|t| t.armed).collect();
        let history: Vec<HistoryItem> = store
            .history(id)?
            .into_iter()
            .map(|h| HistoryItem {
                line: h.line(),
                seq: h.seq,
                at_ms: h.at_ms - start,
                kind: h.kind,
                node: h.node,
                attempt: h.attempt,
                code: h.code,
            })
            .collect();
        // The record is on the snapshot; an instance failed for a snapshot
        // that cannot be read has it only in its history's `failed` line.
        let failure = snap.failure().or_else(|| {
            (row.status == Status::Failed)
                .then(|| last_failed_line(&history))
                .flatten()
        });
        let tokens = snap.frontier();
        let current = failure
            .as_ref()
            .filter(|_| row.status == Status::Failed)
            .map(|f| f.node.clone())
            .or_else(|| tokens.first().map(|t| t.node.clone()));
        let waiting = match row.status {
            Status::Running | Status::Waiting => Some(waiting(&snap, &timers, start)),
            _ => None,
        };
        let damaged = row.status == Status::Failed
            && failure
                .as_ref()
                .is_some_and(|f| f.code == qflow_instance::codes::SNAPSHOT_DAMAGED);
        let nodes = nodes::nodes(graph, &snap, row.status, &timers, &history, start, damaged);
        let schedules = schedule::plans(graph, id, &snap, &nodes, &timers, &history, start);
        let snapshot = snap
            .entries()
            .map(|(k, v)| {
                let family = Family::split(k).map(|(f, _)| f);
                let marker =
                    matches!(family, Some(Family::Backoff | Family::Reconcile)).then(|| {
                        let text = |f: &str| v.get(f).and_then(Value::as_str).map(str::to_string);
                        (text("code").unwrap_or_else(|| "?".into()), text("class"))
                    });
                SnapshotKey {
                    key: k.to_string(),
                    value: canonical_string(v),
                    family,
                    marker,
                }
            })
            .collect();
        let correlations = store
            .correlations(id)?
            .into_iter()
            .map(|CorrelationRow { key, node }| Correlation {
                in_backoff: snap.in_backoff(&node),
                key,
                node,
            })
            .collect();
        let contained = store.containment(id)?;
        let mut held: Vec<Held> = contained
            .held
            .into_iter()
            .map(|h| Held {
                node: h.node,
                request: HeldRequest::Retry,
                timer: h.timer,
                due_ms: h.due_ms - start,
                kind: h.kind,
                value: h.value,
                paused_ms: h.paused_ms,
                paused_by: h.paused_by,
                reason: h.reason,
            })
            .collect();
        // A paused dependency holds every request to it: the first attempt
        // a ready token waits to make, and the pending deliveries.
        if !row.status.is_terminal() {
            let paused: Vec<_> = store
                .pauses()?
                .into_iter()
                .filter(|p| p.kind == PauseKind::Dependency)
                .collect();
            if !paused.is_empty() {
                let now = store.last_decision_ms(id)?.unwrap_or(start) - start;
                let mut hold = |node: &str, request, dep: &str, due_ms: i64| {
                    if let Some(p) = paused.iter().find(|p| p.value == dep) {
                        held.push(Held {
                            node: node.to_string(),
                            request,
                            timer: 0,
                            due_ms,
                            kind: p.kind,
                            value: p.value.clone(),
                            paused_ms: p.paused_ms,
                            paused_by: p.by.clone(),
                            reason: p.reason.clone(),
                        });
                    }
                };
                for t in snap.frontier() {
                    if t.state != TokenState::Ready {
                        continue;
                    }
                    if let Some(crate::runtime::graph::Kind::Task {
                        task, call: None, ..
                    }) = graph.node(&t.node).map(|n| &n.kind)
                    {
                        hold(&t.node, HeldRequest::FirstAttempt, task, now);
                    }
                }
                for (r, next) in store.pending_requests(id)? {
                    hold(&r.node, HeldRequest::Delivery, &r.channel, next - start);
                }
            }
        }
        Ok(Inspection {
            id: row.id.clone(),
            process: row.process_id.clone(),
            deployment_id: row.deployment_id,
            status: row.status,
            started_ms: start,
            updated_ms: row.updated_ms,
            failure,
            waiting,
            nodes,
            current,
            snapshot,
            raw_snapshot,
            timers,
            outbox: store.outbox(id)?,
            correlations,
            incidents: store.incidents(id)?,
            history,
            schedules,
            channel_calls: graph.nodes.values().any(|n| n.call().is_some()),
            quarantined_ms: contained.quarantined_ms,
            quarantined_by: contained.quarantined_by,
            quarantine_reason: contained.quarantine_reason,
            held,
            containment_log: store
                .containment_log(&crate::store::contain::LogQuery::instance(id))?,
            ramped: store.ramp_holds(id)?,
        })
    }

    /// The pauses holding the park the instance waits for (its earliest
    /// armed timer), if that park is held: what a list names beside the
    /// due time. Empty when it waits for something no pause holds.
    pub fn held_wait(&self) -> Vec<&Held> {
        match &self.waiting {
            Some(Waiting::Timer {
                node,
                purpose: Purpose::Retry,
                due_ms,
            }) => self
                .held
                .iter()
                .filter(|h| &h.node == node && h.due_ms == *due_ms)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// What an operator can pause to hold this instance's retries: the
    /// failure class (`transient` or `rate-limited`, the classes that park
    /// a retry) and the dependency (the registered task's name, or the
    /// call's channel) of the last attempt at its current node, then any
    /// other pause holding one of its parks. Empty when it has made no
    /// attempt there.
    pub fn pause_targets(&self) -> Vec<(PauseKind, String)> {
        use crate::instance::history::Attempt;
        let mut out: Vec<(PauseKind, String)> = Vec::new();
        let mut push = |k: PauseKind, v: &str| {
            if !out.iter().any(|(ok, ov)| *ok == k && ov == v) {
                out.push((k, v.to_string()));
            }
        };
        let at_node = |h: &&HistoryItem| h.node.is_some() && h.node == self.current;
        let mut class: Option<String> = None;
        let mut dependency: Option<String> = None;
        for h in self.history.iter().rev().filter(at_node) {
            match h.line.as_ref().map(|l| &l.event) {
                Some(HistoryEvent::Attempt(Attempt::Task(a))) => {
                    if class.is_none() {
                        class = a.class.map(|c| c.as_str().to_string());
                    }
                    dependency = Some(a.task.clone());
                    break;
                }
                Some(HistoryEvent::Attempt(Attempt::Call(c))) => {
                    dependency = Some(c.channel.clone());
                    break;
                }
                // A call's failed attempt is always transient.
                Some(HistoryEvent::CallFailed { .. }) if class.is_none() => {
                    class = Some("transient".into());
                }
                _ => {}
            }
        }
        if let Some(c) = class.filter(|c| c == "transient" || c == "rate-limited") {
            push(PauseKind::Class, &c);
        }
        if let Some(d) = dependency {
            push(PauseKind::Dependency, &d);
        }
        for h in &self.held {
            push(h.kind, &h.value);
        }
        out
    }

    /// The plan of `node`, if it has one.
    pub fn schedule(&self, node: &str) -> Option<&SchedulePlan> {
        self.schedules.iter().find(|s| s.node == node)
    }

    /// Attempts the failed node made: the record's count, else its
    /// attempt lines in the history.
    pub fn failed_attempts(&self) -> Option<u32> {
        let f = self.failure.as_ref()?;
        Some(f.attempts.unwrap_or_else(|| {
            self.history
                .iter()
                .filter(|h| h.node.as_deref() == Some(f.node.as_str()))
                .filter(|h| {
                    matches!(
                        h.line.as_ref().map(|l| &l.event),
                        Some(HistoryEvent::Attempt(_))
                    )
                })
                .count() as u32
        }))
    }

    /// The instance's final state ([`FinalState`]): what `qflow run`'s
    /// last line says (docs/run.md).
    pub fn final_state(&self) -> FinalState {
        FinalState::of(self)
    }

    /// The final state's JSON form ([`FinalState::to_json`]).
    pub fn final_line(&self) -> Value {
        self.final_state().to_json()
    }
}

/// The fatal path's record as the last `failed` history line tells it.
fn last_failed_line(history: &[HistoryItem]) -> Option<Failure> {
    history
        .iter()
        .rev()
        .find_map(|h| match h.line.as_ref().map(|l| &l.event) {
            Some(HistoryEvent::Failed {
                code,
                reason,
                attempts,
            }) => Some(Failure {
                code: code.clone(),
                reason: reason.clone(),
                node: h.node.clone().unwrap_or_default(),
                attempts: *attempts,
                ..Failure::default()
            }),
            _ => None,
        })
}

fn waiting(snap: &Snapshot, timers: &[TimerInfo], start: i64) -> Waiting {
    let tokens = snap.frontier();
    if let Some(t) = tokens.iter().find(|t| t.state == TokenState::Reconcile) {
        let marker = snap.reconcile(&t.node);
        return Waiting::Reconciliation {
            node: t.node.clone(),
            attempts: marker
                .as_ref()
                .and_then(|m| m.attempt)
                .map(|a| a.max(snap.attempts(&t.node))),
            code: marker.and_then(|m| m.code),
        };
    }
    if let Some(t) = timers.iter().min_by_key(|t| (t.due_ms, t.id)) {
        return Waiting::Timer {
            node: t.node.clone(),
            purpose: t.purpose,
            due_ms: t.due_ms - start,
        };
    }
    Waiting::Nothing {
        tokens: tokens.into_iter().map(|t| (t.node, t.state)).collect(),
    }
}
