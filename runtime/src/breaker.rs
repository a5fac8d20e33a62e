//! A dependency's circuit breaker, pure: its declaration ([`BreakerConfig`],
//! from a handlers file's `breaker` table) and the machine that moves it
//! ([`step`]: the durable state, one observation, the facts the store read
//! and the wall clock in; the state to keep, the move and the canaries to
//! choose out). No I/O and no clock reads: the store writes what it returns
//! in one transaction (`Store::breaker_step`), and `simulate` runs the same
//! machine on its virtual clock.
//!
//! ```text
//! closed ──threshold──▶ open ──open_for──▶ half-open ──K canaries ok──▶ closed (ramped release)
//!                        ▲                     │
//!                        └──a canary failed────┘
//! ```
//!
//! Open is a real pause of the dependency (every replica holds every
//! request to it); half-open keeps that pause but lets K parked retries
//! through on their own schedule (the earliest due first).

use serde::Serialize;

use qflow_instance::breaker::{BreakerDecision, BreakerMove, BreakerState, Bucket, Phase};
use qflow_instance::{FailureClass, TaskOutcome};

use crate::ramp::Ramp;

/// What opens a breaker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trip {
    /// `consecutive_failures = N`: N failures in a row.
    Consecutive(u32),
    /// `failure_ratio = R` over `window`, once at least `min_attempts`
    /// attempts ended in the window. `per_mille`: R × 1000.
    Ratio {
        per_mille: u32,
        window_ms: i64,
        min_attempts: u32,
    },
}

/// A breaker as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakerConfig {
    pub trip: Trip,
    /// How long it stays open before its canaries go (`open_for`).
    pub open_for_ms: i64,
    /// How many canaries must succeed to close it (`canaries`).
    pub canaries: u32,
    /// The release when it closes (`release_ramp`): the parks let go in
    /// growing waves. `None`: [`DEFAULT_RELEASE_RAMP`].
    pub release_ramp: Option<Ramp>,
}

/// The release of a closing breaker when none is declared: growing waves,
/// so the parks that piled up while it was open do not all go at once.
pub const DEFAULT_RELEASE_RAMP: &[u64] = &[10, 50, 200];

/// Slices of a failure-ratio window: the window slides in steps of a
/// twentieth (at least a second), so its state stays small at any rate.
const SLICES: i64 = 20;

impl BreakerConfig {
    /// The ramp a close releases with.
    pub fn ramp(&self) -> Ramp {
        self.release_ramp
            .clone()
            .unwrap_or_else(|| Ramp::new(DEFAULT_RELEASE_RAMP.to_vec()))
    }

    /// `opens after 5 consecutive failures, open 30s, 2 canaries, release
    /// 10,50,200/min`: how every face says it.
    pub fn words(&self) -> String {
        let trip = match &self.trip {
            Trip::Consecutive(n) => format!("opens after {n} consecutive failures"),
            Trip::Ratio {
                per_mille,
                window_ms,
                min_attempts,
            } => format!(
                "opens at a failure ratio of {} over {} (at least {min_attempts} attempts)",
                *per_mille as f64 / 1000.0,
                secs(*window_ms)
            ),
        };
        format!(
            "{trip}, open {}, {} canar{}, release {}",
            secs(self.open_for_ms),
            self.canaries,
            if self.canaries == 1 { "y" } else { "ies" },
            self.ramp().text()
        )
    }
}

fn secs(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Whether an attempt's outcome counts against the dependency's health: a
/// transient failure, a rate limit or an unknown outcome (a timeout) says
/// the dependency is not answering well; a success, a permanent failure
/// (bad input: the dependency answered) or a BPMN error does not.
pub fn is_failure(outcome: &TaskOutcome) -> bool {
    matches!(
        outcome,
        TaskOutcome::Fail {
            class: FailureClass::Transient
                | FailureClass::RateLimited
                | FailureClass::UnknownOutcome,
            ..
        }
    )
}

/// One thing the breaker learns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// An attempt of the dependency ended (`failed`: [`is_failure`]);
    /// `canary`: it re-drove a park chosen as a canary.
    Outcome { failed: bool, canary: bool },
    /// Time passed (the serving loop's tick).
    Tick,
}

/// What the store read for the decision, in its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    /// Armed retry parks of the dependency not chosen as canaries yet.
    pub parked: u64,
    /// Canaries chosen in this half-open phase whose outcome is not in yet.
    pub chosen: u32,
}

/// Decide one observation. `state`: as stored (a breaker never stored is
/// [`BreakerState::default`], closed); `now_ms`: the wall clock.
pub fn step(
    config: &BreakerConfig,
    state: &BreakerState,
    observed: Observed,
    facts: Facts,
    now_ms: i64,
) -> BreakerDecision {
    let mut s = state.clone();
    let mut moved = None;
    let mut choose = 0;
    let go = |s: &mut BreakerState, to: Phase, reason: String| {
        let from = s.phase;
        s.phase = to;
        s.since_ms = now_ms;
        s.consecutive = 0;
        s.buckets.clear();
        s.canaries_ok = 0;
        if to == Phase::Open {
            s.opened += 1;
        }
        BreakerMove { from, to, reason }
    };
    match (state.phase, observed) {
        (Phase::Closed, Observed::Outcome { failed, .. }) => {
            if let Some(reason) = count(config, &mut s, failed, now_ms) {
                moved = Some(go(&mut s, Phase::Open, reason));
            }
        }
        (Phase::Closed, Observed::Tick) => {
            if let Trip::Ratio { window_ms, .. } = config.trip {
                slide(&mut s.buckets, window_ms, now_ms);
            }
        }
        // Outcomes of attempts that were running when it opened say
        // nothing new: the pause already holds.
        (Phase::Open, Observed::Outcome { .. }) => {}
        (Phase::Open, Observed::Tick) => {
            if now_ms >= state.since_ms + config.open_for_ms {
                if facts.parked == 0 {
                    // Nothing parked to probe with: nothing but first
                    // attempts are held, and a close lets them go on the
                    // ramp; the next failures open it again.
                    moved = Some(go(
                        &mut s,
                        Phase::Closed,
                        format!(
                            "open for {}, nothing parked to send as a canary: closed",
                            secs(config.open_for_ms)
                        ),
                    ));
                } else {
                    let k = config
                        .canaries
                        .min(facts.parked.min(u32::MAX as u64) as u32);
                    moved = Some(go(
                        &mut s,
                        Phase::HalfOpen,
                        format!(
                            "open for {}: {k} canar{} let through",
                            secs(config.open_for_ms),
                            if k == 1 { "y" } else { "ies" }
                        ),
                    ));
                    choose = k;
                }
            }
        }
        (Phase::HalfOpen, Observed::Outcome { canary: false, .. }) => {}
        (Phase::HalfOpen, Observed::Outcome { failed: true, .. }) => {
            moved = Some(go(
                &mut s,
                Phase::Open,
                format!(
                    "a canary failed after {} of {} succeeded: open again",
                    state.canaries_ok, config.canaries
                ),
            ));
        }
        (Phase::HalfOpen, Observed::Outcome { failed: false, .. }) => {
            s.canaries_ok += 1;
            if s.canaries_ok >= config.canaries {
                let n = s.canaries_ok;
                moved = Some(go(
                    &mut s,
                    Phase::Closed,
                    // The release (its pause lifted on the ramp) is the
                    // store's to apply, and its schedule is recorded
                    // with the move: no pause of its own, no release.
                    format!("{n} of {} canaries succeeded: closed", config.canaries),
                ));
            }
        }
        (Phase::HalfOpen, Observed::Tick) if facts.parked == 0 && facts.chosen == 0 => {
            // No canary out and none to choose (what was parked ran, or
            // finished, under an operator's unpause): nothing is left to
            // probe with, as when it half-opened with nothing parked.
            moved = Some(go(
                &mut s,
                Phase::Closed,
                format!(
                    "half-open with {} of {} canaries succeeded and nothing parked to send as a canary: closed",
                    state.canaries_ok, config.canaries
                ),
            ));
        }
        (Phase::HalfOpen, Observed::Tick) => {
            // Fewer parks than canaries when it half-opened (or a canary
            // parked again with a failure that does not count): more are
            // chosen as they park, until K have succeeded.
            let wanted = config
                .canaries
                .saturating_sub(state.canaries_ok + facts.chosen);
            choose = wanted.min(facts.parked.min(u32::MAX as u64) as u32);
        }
    }
    BreakerDecision {
        state: s,
        moved,
        choose_canaries: choose,
    }
}

/// Count one outcome while closed; the reason to open, if it trips.
fn count(
    config: &BreakerConfig,
    s: &mut BreakerState,
    failed: bool,
    now_ms: i64,
) -> Option<String> {
    match config.trip {
        Trip::Consecutive(n) => {
            s.consecutive = if failed { s.consecutive + 1 } else { 0 };
            (s.consecutive >= n).then(|| format!("{n} consecutive failures"))
        }
        Trip::Ratio {
            per_mille,
            window_ms,
            min_attempts,
        } => {
            slide(&mut s.buckets, window_ms, now_ms);
            let slice = (window_ms / SLICES).max(1000);
            let start = now_ms - now_ms.rem_euclid(slice);
            match s.buckets.last_mut() {
                Some(b) if b.start_ms == start => {
                    b.attempts += 1;
                    b.failures += failed as u32;
                }
                _ => s.buckets.push(Bucket {
                    start_ms: start,
                    attempts: 1,
                    failures: failed as u32,
                }),
            }
            let attempts: u64 = s.buckets.iter().map(|b| b.attempts as u64).sum();
            let failures: u64 = s.buckets.iter().map(|b| b.failures as u64).sum();
            (attempts >= min_attempts as u64 && failures * 1000 >= per_mille as u64 * attempts)
                .then(|| {
                    format!(
                        "{failures} of {attempts} attempts failed in {} (ratio {} at least {})",
                        secs(window_ms),
                        (failures * 1000 / attempts) as f64 / 1000.0,
                        per_mille as f64 / 1000.0
                    )
                })
        }
    }
}

/// Drop the slices that ended before the window.
fn slide(buckets: &mut Vec<Bucket>, window_ms: i64, now_ms: i64) {
    let slice = (window_ms / SLICES).max(1000);
    buckets.retain(|b| b.start_ms + slice > now_ms - window_ms);
}

/// When the breaker next needs a tick to move on its own (open: when its
/// open time is over; half-open with canaries still to choose: soon).
pub fn next_tick_ms(config: &BreakerConfig, state: &BreakerState) -> Option<i64> {
    match state.phase {
        Phase::Open => Some(state.since_ms + config.open_for_ms),
        Phase::HalfOpen | Phase::Closed => None,
    }
}

/// Take one decision of `dependency`'s breaker durably: the machine
/// ([`step`]) run inside the store's transaction on the facts read there
/// ([`qflow_store::Store::breaker_step`]), a close releasing the held
/// parks on the breaker's ramp (the plan taken there too, by
/// [`crate::ramp::plan`]). `probe`: what the observed attempt re-drove, to
/// tell a canary. What the serving loop and `simulate` both call.
pub fn apply(
    store: &mut qflow_store::Store,
    dependency: &str,
    config: &BreakerConfig,
    probe: qflow_store::breaker::Probe<'_>,
    observed: impl FnOnce(bool) -> Observed,
    now_ms: i64,
) -> Result<qflow_store::breaker::BreakerApplied, qflow_store::StoreError> {
    use crate::ramp::{self, Parked, Shape};
    let shape = Shape {
        ramp: Some(config.ramp()),
        max_rate: Default::default(),
    };
    let text = qflow_store::release::ShapeText {
        ramp: Some(config.ramp().text()),
        max_rate: None,
    };
    store.breaker_step(
        dependency,
        probe,
        now_ms,
        |state, f| {
            step(
                config,
                state,
                observed(f.canary),
                Facts {
                    parked: f.parked,
                    chosen: f.chosen,
                },
                now_ms,
            )
        },
        &text,
        |parks, latest| {
            let parked: Vec<Parked> = parks
                .iter()
                .map(|p| Parked {
                    timer: p.timer,
                    instance: p.instance.clone(),
                    dependency: p.dependency.clone(),
                    due_ms: p.due_ms,
                })
                .collect();
            let plan = ramp::plan(&parked, ramp::start_ms(latest, now_ms), &shape);
            qflow_store::release::Planned {
                start_ms: plan.start_ms,
                slots: plan
                    .releases
                    .iter()
                    .map(|r| (r.timer, r.release_ms))
                    .collect(),
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consecutive(n: u32) -> BreakerConfig {
        BreakerConfig {
            trip: Trip::Consecutive(n),
            open_for_ms: 30_000,
            canaries: 2,
            release_ramp: None,
        }
    }

    fn outcome(failed: bool, canary: bool) -> Observed {
        Observed::Outcome { failed, canary }
    }

    #[test]
    fn opens_after_consecutive_failures_and_a_success_resets_the_count() {
        let c = consecutive(3);
        let mut s = BreakerState::default();
        for (i, failed) in [true, true, false, true, true].into_iter().enumerate() {
            let d = step(&c, &s, outcome(failed, false), Facts::default(), i as i64);
            assert!(d.moved.is_none(), "moved at {i}");
            s = d.state;
        }
        let d = step(&c, &s, outcome(true, false), Facts::default(), 10);
        let m = d.moved.expect("opens");
        assert_eq!((m.from, m.to), (Phase::Closed, Phase::Open));
        assert_eq!(m.reason, "3 consecutive failures");
        assert_eq!((d.state.since_ms, d.state.opened), (10, 1));
    }

    #[test]
    fn half_opens_after_open_for_with_k_canaries_then_closes_on_their_success() {
        let c = consecutive(1);
        let s = step(
            &c,
            &BreakerState::default(),
            outcome(true, false),
            Facts::default(),
            0,
        )
        .state;
        let parked = Facts {
            parked: 7,
            chosen: 0,
        };
        // Not yet: open for 30 s.
        let d = step(&c, &s, Observed::Tick, parked, 29_999);
        assert!(d.moved.is_none() && d.choose_canaries == 0);
        let d = step(&c, &s, Observed::Tick, parked, 30_000);
        assert_eq!(d.moved.as_ref().unwrap().to, Phase::HalfOpen);
        assert_eq!(d.choose_canaries, 2);
        let s = d.state;
        // An attempt that is not a canary (running when it opened) is ignored.
        let d = step(&c, &s, outcome(true, false), parked, 30_001);
        assert!(d.moved.is_none());
        let d = step(&c, &s, outcome(false, true), parked, 31_000);
        assert!(d.moved.is_none());
        let d = step(&c, &d.state, outcome(false, true), parked, 32_000);
        let m = d.moved.unwrap();
        assert_eq!((m.from, m.to), (Phase::HalfOpen, Phase::Closed));
        assert!(
            m.reason.starts_with("2 of 2 canaries succeeded"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn a_failed_canary_opens_it_again() {
        let c = consecutive(1);
        let s = step(
            &c,
            &BreakerState::default(),
            outcome(true, false),
            Facts::default(),
            0,
        )
        .state;
        let parked = Facts {
            parked: 3,
            chosen: 0,
        };
        let s = step(&c, &s, Observed::Tick, parked, 30_000).state;
        let s = step(&c, &s, outcome(false, true), parked, 30_500).state;
        let d = step(&c, &s, outcome(true, true), parked, 31_000);
        let m = d.moved.unwrap();
        assert_eq!((m.from, m.to), (Phase::HalfOpen, Phase::Open));
        assert_eq!(
            m.reason,
            "a canary failed after 1 of 2 succeeded: open again"
        );
        assert_eq!((d.state.since_ms, d.state.opened), (31_000, 2));
    }

    #[test]
    fn with_nothing_parked_it_closes_at_the_end_of_open_for() {
        let c = consecutive(1);
        let s = step(
            &c,
            &BreakerState::default(),
            outcome(true, false),
            Facts::default(),
            0,
        )
        .state;
        let d = step(&c, &s, Observed::Tick, Facts::default(), 30_000);
        assert_eq!(d.moved.unwrap().to, Phase::Closed);
    }

    #[test]
    fn half_open_tops_up_its_canaries_as_retries_park() {
        let c = consecutive(1);
        let s = step(
            &c,
            &BreakerState::default(),
            outcome(true, false),
            Facts::default(),
            0,
        )
        .state;
        let d = step(
            &c,
            &s,
            Observed::Tick,
            Facts {
                parked: 1,
                chosen: 0,
            },
            30_000,
        );
        assert_eq!(d.choose_canaries, 1);
        let d = step(
            &c,
            &d.state,
            Observed::Tick,
            Facts {
                parked: 4,
                chosen: 1,
            },
            30_100,
        );
        assert_eq!((d.choose_canaries, d.moved), (1, None));
        let d = step(
            &c,
            &d.state,
            Observed::Tick,
            Facts {
                parked: 4,
                chosen: 2,
            },
            30_200,
        );
        assert_eq!(d.choose_canaries, 0);
        // One succeeded (its row gone): none more is wanted, one is out.
        let f = |chosen| Facts { parked: 4, chosen };
        let s = step(&c, &d.state, outcome(false, true), f(2), 30_300).state;
        let d = step(&c, &s, Observed::Tick, f(1), 30_400);
        assert_eq!(d.choose_canaries, 0);
    }

    #[test]
    fn half_open_with_nothing_out_and_nothing_parked_closes() {
        let c = consecutive(1);
        let s = step(
            &c,
            &BreakerState::default(),
            outcome(true, false),
            Facts::default(),
            0,
        )
        .state;
        let s = step(
            &c,
            &s,
            Observed::Tick,
            Facts {
                parked: 1,
                chosen: 0,
            },
            30_000,
        )
        .state;
        // The canary is out: it waits.
        let d = step(
            &c,
            &s,
            Observed::Tick,
            Facts {
                parked: 0,
                chosen: 1,
            },
            30_100,
        );
        assert!(d.moved.is_none());
        let d = step(&c, &s, Observed::Tick, Facts::default(), 30_200);
        assert_eq!(d.moved.unwrap().to, Phase::Closed);
    }

    #[test]
    fn a_failure_ratio_opens_over_its_window_once_enough_attempts_ended() {
        let c = BreakerConfig {
            trip: Trip::Ratio {
                per_mille: 500,
                window_ms: 60_000,
                min_attempts: 4,
            },
            open_for_ms: 10_000,
            canaries: 1,
            release_ramp: None,
        };
        let mut s = BreakerState::default();
        // Three failures: under the minimum of attempts.
        for t in [0, 1_000, 2_000] {
            let d = step(&c, &s, outcome(true, false), Facts::default(), t);
            assert!(d.moved.is_none());
            s = d.state;
        }
        // The window slides past them: two successes and a failure, 1 of 3.
        for (t, failed) in [(70_000, false), (71_000, false), (72_000, true)] {
            let d = step(&c, &s, outcome(failed, false), Facts::default(), t);
            assert!(d.moved.is_none(), "{t}");
            s = d.state;
        }
        let d = step(&c, &s, outcome(true, false), Facts::default(), 73_000);
        let m = d.moved.expect("2 of 4 is 0.5");
        assert_eq!(
            m.reason,
            "2 of 4 attempts failed in 60s (ratio 0.5 at least 0.5)"
        );
    }

    #[test]
    fn only_failures_that_speak_of_the_dependency_count() {
        let fail = |class| TaskOutcome::Fail {
            code: "x".into(),
            class,
            retry_after: None,
            message: None,
        };
        assert!(is_failure(&fail(FailureClass::Transient)));
        assert!(is_failure(&fail(FailureClass::UnknownOutcome)));
        assert!(is_failure(&fail(FailureClass::RateLimited)));
        assert!(!is_failure(&fail(FailureClass::Permanent)));
        assert!(!is_failure(&TaskOutcome::BpmnError { code: "E".into() }));
        assert!(!is_failure(&TaskOutcome::Ok(Default::default())));
    }

    #[test]
    fn words() {
        assert_eq!(
            consecutive(5).words(),
            "opens after 5 consecutive failures, open 30s, 2 canaries, release 10,50,200/min"
        );
    }
}
