//! The durable vocabulary of an instance: everything the store persists and
//! reads back, typed, with no decision in it. The store depends on this
//! module and nothing above it; the runtime decides in these terms.
//!
//! - [`snapshot`]: the canonical open-keyed snapshot and a typed accessor
//!   for each key family (variables, frontier, attempt counters, first
//!   attempt times, the backoff marker, idempotency-key bookkeeping,
//!   reconciliation, failure).
//! - [`history`]: the history's typed lines, one variant per `kind`.
//! - [`event`]: what happens to an instance (events in, effect outcomes).
//! - [`rows`]: status, timer and outbox rows, and the facts a decision reads.
//! - [`effects`]: what one decision writes (a [`effects::Transition`]).
//! - [`codes`]: the failure codes the runtime itself raises.
//! - [`breaker`]: a dependency's circuit breaker as the store keeps it.

pub mod breaker;
pub mod codes;
pub mod effects;
pub mod event;
pub mod history;
pub mod rows;
pub mod snapshot;

pub use effects::{
    Abandon, CallEffects, NewIncident, NewRequest, NewTimer, OutboxChange, Transition,
};
pub use event::{
    ChannelOutcome, DeliveryOutcome, Event, ExternalEvent, FailureClass, Resolution, TaskOutcome,
};
pub use history::{Entry, HistoryEvent, Line, Secs};
pub use rows::{Facts, IncidentKind, OutboxRow, OutboxState, Purpose, Status, TimerRow};
pub use snapshot::{Failure, Family, Marker, Snapshot, Token, TokenState};
