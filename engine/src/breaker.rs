//! A dependency's circuit breaker, as a service: what the serving loop
//! calls with each attempt outcome of a dependency that has a breaker
//! ([`observe`]) and as time passes ([`tick`]). Each call is one decision
//! of the runtime's pure machine ([`crate::runtime::breaker::step`]) taken
//! inside the store's transaction on the facts read there
//! ([`Store::breaker_step`]): the breaker's move, its pause, its canaries
//! and the ramped release of a close are written together, and every
//! replica serving the database moves the same breaker from the same row.

use crate::instance::TaskOutcome;
use crate::runtime::breaker::{self, BreakerConfig, Facts, Observed};
use crate::runtime::ramp::Shape;
use crate::store::breaker::BreakerApplied;
use crate::store::{Store, StoreError};

/// The release a close of `config`'s breaker plans: its ramp.
fn shape(config: &BreakerConfig) -> Shape {
    Shape {
        ramp: Some(config.ramp()),
        max_rate: Default::default(),
    }
}

fn decide(
    store: &mut Store,
    dependency: &str,
    config: &BreakerConfig,
    timer: Option<i64>,
    observed: impl FnOnce(bool) -> Observed,
    wall_now_ms: i64,
) -> Result<BreakerApplied, StoreError> {
    let shape = shape(config);
    let mut taken = None;
    store.breaker_step(
        dependency,
        timer,
        wall_now_ms,
        |state, f| {
            breaker::step(
                config,
                state,
                observed(f.canary),
                Facts {
                    parked: f.parked,
                    chosen: f.chosen,
                },
                wall_now_ms,
            )
        },
        &crate::release::shape_text(&shape),
        crate::release::planner(&shape, wall_now_ms, &mut taken),
    )
}

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
    decide(
        store,
        dependency,
        config,
        timer,
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
    decide(
        store,
        dependency,
        config,
        None,
        |_| Observed::Tick,
        wall_now_ms,
    )
}
