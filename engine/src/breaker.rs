//! A dependency's circuit breaker, as a service: what the serving loop
//! calls with each attempt outcome of a dependency that has a breaker
//! ([`observe`]) and as time passes ([`tick`]). Each call is one decision
//! of the runtime's pure machine ([`crate::runtime::breaker::step`]) taken
//! inside the store's transaction on the facts read there
//! ([`crate::runtime::breaker::apply`], `Store::breaker_step`): the
//! breaker's move, its pause, its canaries and the ramped release of a
//! close are written together, and every replica serving the database
//! moves the same breaker from the same row.

use crate::instance::TaskOutcome;
use crate::runtime::breaker::{self, BreakerConfig, Observed};
use crate::store::breaker::{BreakerApplied, Probe};
use crate::store::{Store, StoreError};

/// An attempt of `dependency` ended with `outcome`; `timer`: the retry
/// park it re-drove (`None`: a first attempt). Decided and written.
pub fn observe(
    store: &mut Store,
    dependency: &str,
    config: &BreakerConfig,
    timer: Option<i64>,
    outcome: &TaskOutcome,
    wall_now_ms: i64,
) -> Result<BreakerApplied, StoreError> {
    let failed = breaker::is_failure(outcome);
    let probe = timer.map_or(Probe::None, Probe::Timer);
    breaker::apply(
        store,
        dependency,
        config,
        probe,
        |canary| Observed::Outcome { failed, canary },
        wall_now_ms,
    )
}

/// Time passed: an open breaker whose open time is over half-opens (its
/// canaries chosen), a half-open one chooses the canaries it still lacks.
pub fn tick(
    store: &mut Store,
    dependency: &str,
    config: &BreakerConfig,
    wall_now_ms: i64,
) -> Result<BreakerApplied, StoreError> {
    breaker::apply(
        store,
        dependency,
        config,
        Probe::None,
        |_| Observed::Tick,
        wall_now_ms,
    )
}
