//! A dependency's circuit breaker as the store keeps it: its phase, since
//! when, and what it counts. No decision here: the machine that moves it is
//! `qflow_runtime::breaker` (pure: facts + clock → move), the store writes
//! what it returns in one transaction.

use serde::{Deserialize, Serialize};

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Requests flow; failures are counted.
    #[default]
    Closed,
    /// The dependency is paused (the same pause `qflow pause --dependency`
    /// makes): every request to it is held until the open time is over.
    Open,
    /// Still paused, but a few parked retries (the canaries) are let
    /// through on their own schedule; their outcomes close or reopen it.
    HalfOpen,
}

impl Phase {
    /// The word the store keeps and every face shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Closed => "closed",
            Phase::Open => "open",
            Phase::HalfOpen => "half-open",
        }
    }

    /// The phase a stored word names (only this qflow's three words are
    /// written; anything else reads as closed).
    pub fn parse(s: &str) -> Phase {
        match s {
            "open" => Phase::Open,
            "half-open" => Phase::HalfOpen,
            _ => Phase::Closed,
        }
    }
}

/// One slice of a failure-ratio window: the attempts that ended in it and
/// how many of them failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub start_ms: i64,
    pub attempts: u32,
    pub failures: u32,
}

/// A breaker's durable state.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BreakerState {
    pub phase: Phase,
    /// When it entered its phase (wall clock, ms since the epoch).
    pub since_ms: i64,
    /// Failures in a row since the last success (closed).
    #[serde(default)]
    pub consecutive: u32,
    /// The failure-ratio window's slices, oldest first (closed).
    #[serde(default)]
    pub buckets: Vec<Bucket>,
    /// Canaries that succeeded in this half-open phase.
    #[serde(default)]
    pub canaries_ok: u32,
    /// How many times it has opened.
    #[serde(default)]
    pub opened: u32,
}

/// A breaker's move from one phase to another, as the store records it
/// (`breaker_transitions`) and every face shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerMove {
    pub from: Phase,
    pub to: Phase,
    /// Why, in words (`5 consecutive failures`, `2 of 2 canaries succeeded`).
    pub reason: String,
}

/// What the machine decided on one observation: the state to keep, the
/// move it made (if any), and how many more parked retries to choose as
/// canaries (half-open).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerDecision {
    pub state: BreakerState,
    pub moved: Option<BreakerMove>,
    pub choose_canaries: u32,
}
