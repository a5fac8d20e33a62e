//! A serving loop through a database outage: how long it waits between
//! tries, and the store's state as the loop last saw it (what `qflow
//! serve`'s `/ready` answers).
//!
//! A lost connection is retried, never fatal: the loop stops deciding,
//! waits a capped, jittered backoff ([`reconnect_wait`]), and tries again;
//! the store connects afresh on its next use (`qflow-store`'s PostgreSQL
//! backend reconnects by itself). Attempts and deliveries already on lanes
//! go on meanwhile; their outcomes wait in memory (their in-flight records
//! stay open in the store) and are decided, each under a fresh claim, once
//! the database answers again. Nothing is decided twice around a
//! reconnect: a commit whose answer was lost is not assumed either way —
//! the next decision reads the instance again, and its version check
//! refuses anything decided on facts that moved.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use qflow_model::policy::jitter_unit;

/// The first wait after a failed try.
pub const FIRST_WAIT: Duration = Duration::from_millis(250);

/// The longest wait between two tries: a database back after a restart is
/// used within this.
pub const MAX_WAIT: Duration = Duration::from_secs(10);

/// How long to wait before try `attempt` (1 for the first retry): doubling
/// from [`FIRST_WAIT`] up to [`MAX_WAIT`], then drawn in its upper half
/// (`[w/2, w]`) from a hash of `owner` and the attempt, so replicas that
/// lost the same server do not come back in lockstep. Pure: the same
/// owner and attempt wait the same.
pub fn reconnect_wait(owner: &str, attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(1).min(16);
    let full = FIRST_WAIT.saturating_mul(1u32 << doublings).min(MAX_WAIT);
    let half = full / 2;
    let unit = jitter_unit(owner, "store.reconnect", attempt);
    // half + half × u, u in [0, 1].
    let extra = (u128::from(unit) * half.as_nanos()) >> 64;
    half + Duration::from_nanos(extra as u64)
}

/// The store's state as a serving loop (or an endpoint worker) last met it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreState {
    /// The last use of the store succeeded.
    Up,
    /// The store could not be reached since `since` (wall clock, ms): `error`
    /// is what the last try met, `tries` how many failed in a row.
    Down {
        since_ms: i64,
        error: String,
        tries: u32,
    },
}

/// A shared view of [`StoreState`]: the serving loop writes it, a health
/// endpoint reads it. Cheap to clone; never blocks for long.
#[derive(Debug, Clone)]
pub struct StoreHealth(Arc<Mutex<StoreState>>);

impl Default for StoreHealth {
    fn default() -> Self {
        StoreHealth(Arc::new(Mutex::new(StoreState::Up)))
    }
}

impl StoreHealth {
    /// The state now.
    pub fn state(&self) -> StoreState {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether the store answered its last use.
    pub fn is_up(&self) -> bool {
        self.state() == StoreState::Up
    }

    /// The store answered: returns the outage that ended, if one did.
    pub fn up(&self) -> Option<StoreState> {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match std::mem::replace(&mut *s, StoreState::Up) {
            StoreState::Up => None,
            down => Some(down),
        }
    }

    /// The store could not be reached: returns how many tries in a row
    /// have failed now (1 for the first).
    pub fn down(&self, error: &str) -> u32 {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let tries = match &*s {
            StoreState::Up => 1,
            StoreState::Down { tries, .. } => tries + 1,
        };
        let since_ms = match &*s {
            StoreState::Down { since_ms, .. } => *since_ms,
            StoreState::Up => now_ms(),
        };
        *s = StoreState::Down {
            since_ms,
            error: error.to_string(),
            tries,
        };
        tries
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Whoever is told of an outage (`Engine::on_store_outage`).
pub(super) type OutageReport = Box<dyn FnMut(&OutageEvent) + Send>;

/// What a serving loop reports about an outage, as it happens.
#[derive(Debug, Clone)]
pub enum OutageEvent {
    /// A try failed; the next is in `wait`.
    Retrying {
        error: String,
        tries: u32,
        wait: Duration,
    },
    /// The store answers again after `down_for`.
    Recovered { down_for: Duration, tries: u32 },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_stay_in_their_upper_half() {
        let mut last_full = Duration::ZERO;
        for attempt in 1..40 {
            let w = reconnect_wait("host:1", attempt);
            let full = FIRST_WAIT
                .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
                .min(MAX_WAIT);
            assert!(
                w >= full / 2 && w <= full,
                "attempt {attempt}: {w:?} of {full:?}"
            );
            assert!(full >= last_full);
            last_full = full;
        }
        assert_eq!(last_full, MAX_WAIT);
        assert_eq!(reconnect_wait("a", 3), reconnect_wait("a", 3));
    }

    #[test]
    fn replicas_draw_different_waits() {
        let waits: std::collections::BTreeSet<_> = (0..8)
            .map(|i| reconnect_wait(&format!("host:{i}"), 5))
            .collect();
        assert!(waits.len() > 4, "{waits:?}");
    }

    #[test]
    fn health_counts_tries_and_keeps_the_start_of_an_outage() {
        let h = StoreHealth::default();
        assert!(h.is_up());
        assert_eq!(h.up(), None);
        assert_eq!(h.down("refused"), 1);
        let StoreState::Down { since_ms, .. } = h.state() else {
            panic!("down");
        };
        assert_eq!(h.down("refused again"), 2);
        match h.state() {
            StoreState::Down {
                since_ms: s,
                error,
                tries,
            } => {
                assert_eq!((s, error.as_str(), tries), (since_ms, "refused again", 2));
            }
            StoreState::Up => panic!("still down"),
        }
        assert!(matches!(h.up(), Some(StoreState::Down { tries: 2, .. })));
        assert!(h.is_up());
    }
}
