//! The view model: plain data the panels draw, read from the durable store.
//!
//! Every panel renders from a [`View`] and nothing else, so what the console
//! shows is exactly what a backend read back from persisted rows (never what it
//! remembers having asked for). Times are milliseconds of virtual time since
//! the instance started: the same axis `qflow run` prints as `at_s`.

/// One instance's persisted state, as the console shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    /// What is being inspected (model file or database), for the status line.
    pub source: String,
    pub instance: InstanceView,
    /// Virtual now, since the instance started.
    pub now_ms: i64,
    /// Flow nodes in flow order (breadth-first from the start event).
    pub nodes: Vec<NodeView>,
    /// Snapshot entries in key order (the canonical order).
    pub snapshot: Vec<SnapshotEntry>,
    pub timers: Vec<TimerView>,
    pub outbox: Vec<OutboxView>,
    pub correlations: Vec<CorrelationView>,
    pub incidents: Vec<IncidentView>,
    pub history: Vec<HistoryView>,
    /// The retry schedule of the node that matters most now (the current or
    /// failed task with a policy).
    pub schedule: Option<ScheduleView>,
    /// Whether keys that act on the instance are available (an attached
    /// database is inspected read-only).
    pub read_only: bool,
    /// Whether the backend can deliver channel-call events (respond, poison).
    pub channel_calls: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InstanceStatus {
    #[default]
    Running,
    Waiting,
    Completed,
    Failed,
}

impl InstanceStatus {
    pub fn label(self) -> &'static str {
        match self {
            InstanceStatus::Running => "RUNNING",
            InstanceStatus::Waiting => "WAITING",
            InstanceStatus::Completed => "COMPLETED",
            InstanceStatus::Failed => "FAILED",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, InstanceStatus::Completed | InstanceStatus::Failed)
    }
}

/// The fatal path's record, as persisted on a FAILED snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureView {
    pub node: String,
    pub code: String,
    /// `exhausted`, `expired`, `non-retryable`, `uncaught-error`, …
    pub reason: String,
    pub attempts: u32,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct InstanceView {
    pub id: String,
    pub process: String,
    pub status: InstanceStatus,
    pub failure: Option<FailureView>,
    /// What a waiting instance waits for, in words (`retry timer of charge`).
    pub waiting_for: Option<String>,
}

/// What kind of node, for the glyph in the process panel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NodeKindView {
    Start,
    End,
    ErrorEnd,
    Gateway,
    #[default]
    Task,
    Call,
    Timer,
    Boundary,
}

impl NodeKindView {
    pub fn glyph(self) -> &'static str {
        match self {
            NodeKindView::Start => "○",
            NodeKindView::End => "◎",
            NodeKindView::ErrorEnd => "⊗",
            NodeKindView::Gateway => "◇",
            NodeKindView::Task => "▭",
            NodeKindView::Call => "⇄",
            NodeKindView::Timer => "◷",
            NodeKindView::Boundary => "↳",
        }
    }
}

/// Where a node stands, derived from the persisted frontier, timers and history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NodeState {
    /// Not reached (yet or at all).
    #[default]
    Idle,
    /// A token is ready: the next step executes it.
    Active,
    /// Parked on a retry timer until the next eligible time.
    Parked { eligible_at_ms: i64 },
    /// Waiting on an intermediate or boundary timer.
    Timer { due_at_ms: i64 },
    /// A channel call waiting on its counterpart's response, until its
    /// route-less timeout fires.
    WaitingResponse { timeout_at_ms: Option<i64> },
    /// An unknown outcome waiting for an operator's reconciliation.
    WaitingReconciliation,
    /// Arrived at a parallel join, waiting for the other branches.
    Joined,
    /// The node the instance failed at.
    Failed,
    /// Executed and left.
    Completed,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeView {
    pub id: String,
    pub kind: NodeKindView,
    pub state: NodeState,
    /// Failed attempts burned (`attempts.<node>`), when present.
    pub attempts: Option<u32>,
    /// The node the console's keys act on.
    pub current: bool,
}

/// Which key family a snapshot entry belongs to (drives the highlight).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KeyFamily {
    Variable,
    Frontier,
    Attempts,
    Backoff,
    Failure,
    #[default]
    Other,
}

impl KeyFamily {
    pub fn of(key: &str) -> KeyFamily {
        let fam = key.split('.').next().unwrap_or("");
        match fam {
            "var" => KeyFamily::Variable,
            "frontier" => KeyFamily::Frontier,
            "attempts" => KeyFamily::Attempts,
            "backoff" => KeyFamily::Backoff,
            "failure" => KeyFamily::Failure,
            _ => KeyFamily::Other,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotEntry {
    pub key: String,
    /// The value's canonical JSON text, as stored.
    pub value: String,
    pub family: KeyFamily,
    /// For a `backoff.<node>` marker: the classification it carries.
    pub classification: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimerView {
    /// `retry`, `timer`, `boundary`, `timeout`, …
    pub kind: String,
    pub node: String,
    pub due_at_ms: i64,
    /// The attempt a retry timer drives.
    pub attempt: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxView {
    pub node: String,
    pub channel: String,
    pub attempt: u32,
    /// `pending`, `delivered`, `poisoned`.
    pub status: String,
    pub deliveries: u32,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorrelationView {
    pub key: String,
    pub node: String,
    /// In words: `live`, `in backoff window`, …
    pub state: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncidentView {
    pub node: String,
    pub kind: String,
    pub message: String,
    pub opened_at_ms: i64,
    pub open: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryView {
    pub seq: i64,
    pub at_ms: i64,
    pub kind: String,
    pub node: Option<String>,
    pub attempt: Option<u32>,
    pub code: Option<String>,
    /// The rest of the decision line, short.
    pub detail: String,
}

/// How one attempt ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AttemptOutcome {
    Succeeded,
    /// Failed with this code and class.
    Failed {
        code: String,
        class: String,
    },
    /// Outcome not known: waiting for reconciliation (or a response).
    #[default]
    Pending,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptMark {
    /// 1-based.
    pub n: u32,
    pub at_ms: i64,
    pub outcome: AttemptOutcome,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlannedMark {
    pub n: u32,
    /// When it will start if every attempt before it fails (unjittered).
    pub at_ms: i64,
}

/// The attempts of one task so far, and those still to come under its policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduleView {
    pub node: String,
    /// The policy in one line (`6 attempts over at most 13 h 1 min`).
    pub policy: String,
    pub max_attempts: Option<u32>,
    pub done: Vec<AttemptMark>,
    pub planned: Vec<PlannedMark>,
    /// When the first attempt started (the origin of `maxElapsed`).
    pub first_at_ms: Option<i64>,
    /// `maxElapsed`, if the policy has one.
    pub max_elapsed_ms: Option<i64>,
}

impl ScheduleView {
    /// Where the budget runs out on the time axis, if it does.
    pub fn budget_end_ms(&self) -> Option<i64> {
        Some(self.first_at_ms.unwrap_or(0) + self.max_elapsed_ms?)
    }
}

/// One row of the instance list (`qflow console --db FILE`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceRowView {
    pub id: String,
    pub process: String,
    pub status: InstanceStatus,
    /// For a FAILED instance: code and reason.
    pub code: Option<String>,
    pub reason: Option<String>,
    /// Virtual time of its last decision since it started.
    pub last_at_ms: i64,
}

/// The list order: FAILED first (they are what an operator attaches for),
/// then waiting and running, then completed; stable within a status.
pub fn sort_instances(rows: &mut [InstanceRowView]) {
    rows.sort_by_key(|r| match r.status {
        InstanceStatus::Failed => 0,
        InstanceStatus::Waiting => 1,
        InstanceStatus::Running => 2,
        InstanceStatus::Completed => 3,
    });
}
