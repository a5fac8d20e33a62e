//! What the store holds for an instance and reads back for a decision: its
//! status, its armed timers, its outbox rows, and the facts a decision is a
//! pure function of.

use super::snapshot::Snapshot;

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

/// What an open incident is about (the `kind` column of the incidents
/// table): one name per kind, so a face or a query compares a variant,
/// never a string literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IncidentKind {
    /// The instance FAILED at the node (its terminal record).
    Failed,
    /// An unknown outcome awaits an operator's reconciliation.
    Reconciliation,
    /// A channel's request was poisoned (its deliveries gave up, or the
    /// counterpart rejected it).
    Poisoned,
    /// The snapshot or a fact of the instance is damaged.
    Damaged,
    /// An attempt recorded as started whose outcome is not applied yet
    /// (the store's `inflight` module).
    InFlight,
}

impl IncidentKind {
    pub const ALL: [IncidentKind; 5] = [
        IncidentKind::Failed,
        IncidentKind::Reconciliation,
        IncidentKind::Poisoned,
        IncidentKind::Damaged,
        IncidentKind::InFlight,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IncidentKind::Failed => "failed",
            IncidentKind::Reconciliation => "reconciliation",
            IncidentKind::Poisoned => "poisoned",
            IncidentKind::Damaged => "damaged",
            IncidentKind::InFlight => "in-flight",
        }
    }

    pub fn parse(s: &str) -> Option<IncidentKind> {
        IncidentKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for IncidentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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

/// Where an outbox row stands (its `state` column), as the faces read it:
/// an enum, so a face matches on it instead of comparing the column's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxState {
    /// Not yet delivered: the relay will try it (again).
    Pending,
    Delivered,
    /// Its deliveries ran out, or a counterpart refused it for good.
    Poisoned,
    /// Will never be delivered: the attempt it belonged to is over.
    Abandoned,
}

impl OutboxState {
    /// The column's text (`pending`, `delivered`, `poisoned`, `abandoned`):
    /// what the JSON outputs and the tables print.
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxState::Pending => "pending",
            OutboxState::Delivered => "delivered",
            OutboxState::Poisoned => "poisoned",
            OutboxState::Abandoned => "abandoned",
        }
    }

    pub fn parse(s: &str) -> Option<OutboxState> {
        [
            OutboxState::Pending,
            OutboxState::Delivered,
            OutboxState::Poisoned,
            OutboxState::Abandoned,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }

    /// Poisoned or abandoned: a request that will never be delivered.
    pub fn is_undeliverable(self) -> bool {
        matches!(self, OutboxState::Poisoned | OutboxState::Abandoned)
    }
}

impl std::fmt::Display for OutboxState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The durable facts a decision reads.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub instance_id: &'a str,
    pub status: Status,
    pub started_ms: i64,
    pub snapshot: &'a Snapshot,
    /// Why the stored snapshot bytes do not decode, when they do not (then
    /// `snapshot` is empty): the decision fails the instance on it.
    pub damage: Option<&'a str>,
    /// The instance's armed timers.
    pub timers: &'a [TimerRow],
    /// The idempotency-key ledger: for each call node, the highest key
    /// number it has sent. Durable outside the snapshot, so a damaged or
    /// reset counter can never make a request reuse a key.
    pub keys_sent: &'a std::collections::BTreeMap<String, u32>,
}
