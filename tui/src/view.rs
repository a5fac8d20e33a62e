//! What the panels draw: the engine's inspection of one instance, and the
//! little the console adds to present it.
//!
//! The instance itself is the engine's [`Inspection`] (node states, what it
//! waits for, failure, timers, outbox, correlations, typed history, schedule
//! plans), read back from the durable store; the console neither copies nor
//! recomputes it. Beside it sit only presentation choices: which label the
//! status line shows, the console's virtual now, each history line in a few
//! words and its colour, and which schedule plan the chart shows. Times are
//! milliseconds of virtual time since the instance started (the axis `qflow
//! run` prints as `at_s`), except the inspection's timer and incident rows,
//! which keep the run's clock ([`View::since_start`] converts).

pub use qflow_engine::diagram::{Diagram, DiagramState};
pub use qflow_engine::inspect::{
    AttemptResult, Inspection, NodeInspection, NodeKind, NodeState, PastAttempt, PlannedAttempt,
    SchedulePlan, Waiting,
};
pub use qflow_engine::instance::Status;

use std::sync::Arc;

/// One instance as the console shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// What is being inspected (model file or database), for the status line.
    pub source: String,
    /// The engine's model of the instance: every panel draws from it.
    pub inspection: Inspection,
    /// Virtual now, since the instance started.
    pub now_ms: i64,
    /// How each history line reads: one note per `inspection.history` item,
    /// in the same order.
    pub history: Vec<HistoryNote>,
    /// The node whose schedule plan the chart shows: the one that matters
    /// most now (see [`View::schedule`]).
    pub schedule_node: Option<String>,
    /// Whether keys that act on the instance are available (an attached
    /// database is inspected read-only).
    pub read_only: bool,
    /// The process as the engine draws it (placed once per model, shared by
    /// every view of it), and the instance's state on it; `None` when the
    /// backend has no diagram (the process panel then lists the nodes).
    pub diagram: Option<(Arc<Diagram>, DiagramState)>,
}

impl View {
    pub fn status(&self) -> Status {
        self.inspection.status
    }

    /// The schedule plan the chart shows.
    pub fn schedule(&self) -> Option<&SchedulePlan> {
        self.inspection.schedule(self.schedule_node.as_deref()?)
    }

    /// Whether the model has channel calls (the respond and poison keys).
    pub fn channel_calls(&self) -> bool {
        self.inspection.channel_calls
    }

    /// A time on the run's clock (a timer's due time, an incident's opening)
    /// as time since the instance started.
    pub fn since_start(&self, abs_ms: i64) -> i64 {
        abs_ms - self.inspection.started_ms
    }

    /// The failure record, when the instance is FAILED.
    pub fn failed(&self) -> Option<&qflow_engine::instance::snapshot::Failure> {
        self.inspection
            .failure
            .as_ref()
            .filter(|_| self.inspection.status == Status::Failed)
    }
}

/// The node the chart shows: the current node if it has a plan, else the
/// last node in the history that has one, else the first plan in flow order.
pub fn schedule_node(i: &Inspection) -> Option<String> {
    let has_plan = |n: &str| i.schedule(n).is_some();
    i.current
        .as_deref()
        .filter(|c| has_plan(c))
        .or_else(|| {
            i.history
                .iter()
                .rev()
                .filter_map(|h| h.node.as_deref())
                .find(|n| has_plan(n))
        })
        .or_else(|| i.schedules.first().map(|s| s.node.as_str()))
        .map(str::to_string)
}

/// What a history line means at a glance: its colour in the history panel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HistoryTone {
    /// An attempt was made.
    Attempt,
    /// The instance failed (the fatal path).
    Failed,
    /// A token reached an end event.
    Ended,
    /// An event the instance refused or ignored.
    Ignored,
    /// Everything else: flow, timers, deliveries, responses, a call's
    /// failed attempt.
    #[default]
    Other,
}

/// One history line in words, beside the inspection's item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryNote {
    /// The rest of the decision line, short.
    pub detail: String,
    pub tone: HistoryTone,
}

/// The instance status in capitals, as the console shows it.
pub fn status_label(s: Status) -> &'static str {
    match s {
        Status::Running => "RUNNING",
        Status::Waiting => "WAITING",
        Status::Completed => "COMPLETED",
        Status::Failed => "FAILED",
    }
}

pub fn is_terminal(s: Status) -> bool {
    matches!(s, Status::Completed | Status::Failed)
}

/// One row of the instance list (`qflow console --db FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRowView {
    pub id: String,
    pub process: String,
    /// The deployment it runs on.
    pub deployment: i64,
    pub status: Status,
    /// For a FAILED instance: code and reason.
    pub code: Option<String>,
    pub reason: Option<String>,
    /// Virtual time of its last decision since it started.
    pub last_at_ms: i64,
    /// The pauses holding one of its retry parks (`dependency
    /// payments.charge`), from the store; empty when none holds it.
    pub held_by: Vec<String>,
    /// Whether it is quarantined (nothing decides for it until released).
    pub quarantined: bool,
}

/// The list order: FAILED first (they are what an operator attaches for),
/// then waiting and running, then completed; stable within a status.
pub fn sort_instances(rows: &mut [InstanceRowView]) {
    rows.sort_by_key(|r| match r.status {
        Status::Failed => 0,
        Status::Waiting => 1,
        Status::Running => 2,
        Status::Completed => 3,
    });
}

/// One deployment of an attached database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentRowView {
    pub id: i64,
    pub process: String,
    /// The model file it was deployed from, if recorded.
    pub model: Option<String>,
    /// The first hex digits of its source hash.
    pub hash: String,
    /// Its instances by status, in words (`1 failed, 2 completed`).
    pub instances: String,
    pub retired: bool,
    /// Where its FAILED instances would most likely be repaired onto (the
    /// engine's `repair::likely_target_among`): what the migrate picker
    /// selects first.
    pub repair_onto: Option<i64>,
}

/// Attach mode: the fleet's observations, the operating view above the
/// lists (the engine reads them from the store; the console only draws).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetView {
    /// One line each: what is observed, and its value.
    pub observations: Vec<(String, String)>,
    /// Attempts per minute of the store's time, (minute, attempts), every
    /// minute that saw an attempt, in order.
    pub per_minute: Vec<(i64, u64)>,
    /// What `P` can pause or unpause: the classes that park a retry and
    /// every dependency seen, with whether each is paused now.
    pub targets: Vec<PauseTarget>,
}

/// A failure class or a dependency, and whether its retry parks are held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PauseTarget {
    /// `class` or `dependency`.
    pub kind: String,
    pub value: String,
    pub paused: bool,
    /// What the picker says beside it.
    pub hint: String,
}
