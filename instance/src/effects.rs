//! What one decision writes: a [`Transition`], applied by the store in one
//! transaction under the instance claim and the snapshot version it was
//! decided from.

use std::collections::BTreeMap;

use serde_json::Value;

use super::history::Entry;
use super::rows::{Purpose, Status};
use super::snapshot::Snapshot;

/// A timer to arm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTimer {
    pub node: String,
    pub purpose: Purpose,
    pub due_ms: i64,
    pub attempt: Option<u32>,
}

/// An incident to open (closed when its node is left).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIncident {
    pub node: String,
    pub kind: crate::IncidentKind,
    pub message: String,
}

/// A request to put in the outbox (state pending, due now).
#[derive(Debug, Clone, PartialEq)]
pub struct NewRequest {
    pub node: String,
    pub channel: String,
    pub operation: Option<String>,
    pub attempt: u32,
    pub idempotency_key: String,
    /// The key's number (`instance/node/N`), recorded in the key ledger.
    pub key_number: u32,
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

/// Undelivered outbox rows to mark `abandoned` (never deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abandon {
    /// The call node whose rows are abandoned; `None`: every undelivered row
    /// of the instance (the fatal path).
    pub node: Option<String>,
    /// Why they will never be delivered, kept in the row.
    pub reason: String,
}

/// A decision's effects on the outbox and the correlations (channel calls).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallEffects {
    pub emit: Vec<NewRequest>,
    /// Nodes whose undelivered rows (pending and poisoned) are withdrawn
    /// (deleted): the dead attempt's, at a backoff park only, where the
    /// marker, the counter and the history keep what it was.
    pub withdraw: Vec<String>,
    /// Undelivered rows (pending and poisoned) that will never be delivered
    /// outside a backoff park: kept, marked `abandoned` with the reason, so
    /// an operator sees what was never sent and why.
    pub abandon: Vec<Abandon>,
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
    /// Close the open in-flight records of these nodes: an attempt's
    /// outcome, applied or found stale, is no longer in flight, in the same
    /// transaction as its decision.
    pub close_in_flight: Vec<String>,
    pub calls: CallEffects,
    /// Leave the stored snapshot bytes exactly as they are (a snapshot that
    /// cannot be decoded: `snapshot` is not written, the transition records
    /// the stored bytes).
    pub keep_stored_snapshot: bool,
}
