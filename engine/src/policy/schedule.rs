//! What a policy does over time: the delay before each attempt, the
//! timetable of an instance that keeps failing, the worst case, the load a
//! failing population schedules, and the decision after a failed attempt
//! (non-retryable code, spent budget, expiry).
//!
//! Times in [`RetryPolicy::schedule`] are measured between attempt *starts* and
//! treat attempts as failing instantly: the schedule is the policy's own
//! timetable, independent of how long a handler or counterpart takes.

use std::time::Duration;

use super::{Backoff, Jitter, RetryPolicy};
use crate::duration;

/// How long a schedule listing gets when the policy itself does not end it.
pub const SCHEDULE_LIMIT: usize = 100;

/// The local maximum of a provider's retry-after when the policy sets no
/// `maxDelay`: 24 hours. A rate-limit response is evidence about when capacity
/// may return, but a provider must not own unlimited use of our queue: a
/// `retryAfter` of 30 days parks the task for a day, not a month. `maxDelay`
/// overrides it (shorter or longer).
pub const DEFAULT_RETRY_AFTER_MAX: Duration = Duration::from_secs(24 * 3600);

/// Which cap bounds a provider-given retry-after ([`RetryPolicy::retry_after_cap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfterCap {
    /// The longest wait a retry-after can impose.
    pub cap: Duration,
    pub source: CapSource,
}

/// Where a [`RetryAfterCap`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapSource {
    /// The policy's `maxDelay`.
    MaxDelay,
    /// [`DEFAULT_RETRY_AFTER_MAX`]: the policy sets no `maxDelay`.
    Default,
}
/// Delays saturate here (about 100 years) so that arithmetic on absurd curves
/// stays defined; no real schedule gets near it.
const SATURATED: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Bound on the work any schedule computation does, whatever the policy.
const MAX_STEPS: u64 = 1_000_000;

/// One row of a policy's timetable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedAttempt {
    /// 1-based.
    pub attempt: u32,
    /// Wait before this attempt (zero for the first), unjittered and capped.
    pub delay: Duration,
    /// When it starts, after the first attempt's start, unjittered.
    pub since_first: Duration,
    /// The earliest it can start with this policy's jitter.
    pub since_first_min: Duration,
    /// The latest it can start (jitter only shortens: equals `since_first`).
    pub since_first_max: Duration,
}

/// Where a node's next attempt stands, as an instance's durable facts say:
/// the start of [`RetryPolicy::upcoming`]. Times are measured from the start
/// of the node's first attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextAttempt {
    /// Attempt `attempt` is eligible at `at`: an armed retry timer's due
    /// time, or now for a token about to run it.
    Due { attempt: u32, at: Duration },
    /// Attempt `attempt` is in flight and, should it fail, fails at `fails_at`
    /// at the latest (a channel call's timeout).
    InFlight { attempt: u32, fails_at: Duration },
}

/// One attempt an instance's node still has ahead, if every attempt fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpcomingAttempt {
    /// 1-based.
    pub attempt: u32,
    /// When it becomes eligible, after the first attempt's start, with this
    /// instance's jitter.
    pub since_first: Duration,
}

/// Why a failed task gets no further attempt; the `reason` of a FAILED instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `maxAttempts` spent.
    Exhausted,
    /// The next attempt would start after `first attempt + maxElapsed`.
    Expired,
    /// The failure's code is in `nonRetryableCodes`.
    NonRetryable,
}

impl StopReason {
    /// The reason as `qflow run --format json` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Exhausted => "exhausted",
            StopReason::Expired => "expired",
            StopReason::NonRetryable => "non-retryable",
        }
    }
}

/// What the policy says after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Park, and start attempt `attempt` after `delay`.
    Retry { attempt: u32, delay: Duration },
    /// No further attempt: the task fails for this reason.
    Stop(StopReason),
}

impl RetryPolicy {
    /// The wait before attempt `attempt` (1-based; zero for the first),
    /// unjittered, capped by `maxDelay`.
    pub fn delay_before(&self, attempt: u32) -> Duration {
        if attempt <= 1 {
            return Duration::ZERO;
        }
        let raw = match &self.backoff {
            Backoff::List(list) => match list.last() {
                None => Duration::ZERO,
                Some(last) => *list.get(attempt as usize - 2).unwrap_or(last),
            },
            Backoff::Curve { initial, factor } => curve(*initial, *factor, attempt - 2),
        };
        match self.max_delay {
            Some(cap) => raw.min(cap),
            None => raw,
        }
    }

    /// The policy's timetable for an instance whose every attempt fails: each
    /// attempt it makes, up to `maxAttempts` or the last one that starts within
    /// `maxElapsed` (nominal, unjittered times). When neither bounds it (or the
    /// bound is far away) the list stops at [`SCHEDULE_LIMIT`] entries;
    /// [`RetryPolicy::schedule_is_complete`] says whether that happened.
    pub fn schedule(&self) -> Vec<PlannedAttempt> {
        self.schedule_and_completeness().0
    }

    /// Whether [`RetryPolicy::schedule`] lists every attempt the policy can make.
    pub fn schedule_is_complete(&self) -> bool {
        self.schedule_and_completeness().1
    }

    fn schedule_and_completeness(&self) -> (Vec<PlannedAttempt>, bool) {
        let mut out: Vec<PlannedAttempt> = Vec::new();
        let (mut t, mut t_min) = (Duration::ZERO, Duration::ZERO);
        // Attempt 1 is "the attempt after attempt 0", at no delay: the same
        // step as every later one, so the timetable ends exactly where the
        // runtime's decision stops.
        let mut made: u32 = 0;
        loop {
            let Next::Retry { attempt, delay } =
                self.next_attempt(made, t, |a| self.delay_before(a))
            else {
                return (out, true);
            };
            if out.len() >= SCHEDULE_LIMIT {
                return (out, false);
            }
            t = t.saturating_add(delay);
            t_min = t_min.saturating_add(self.jitter_bounds(attempt).0);
            out.push(PlannedAttempt {
                attempt,
                delay,
                since_first: t,
                since_first_min: t_min,
                since_first_max: t,
            });
            made = attempt;
        }
    }

    /// The attempts one instance's node still has ahead if every attempt
    /// fails, each at the time it becomes eligible, jittered exactly as the
    /// runtime will wait it (the draw for this instance, node and attempt).
    /// Every step is the runtime's own decision after a failure
    /// ([`RetryPolicy::next_after_failure`] without a non-retryable code or a
    /// provider's retry-after), so the plan ends where the runtime would stop:
    /// budget spent or `maxElapsed` passed. An attempt fails `attempt_takes`
    /// after it starts (zero for a registered task; a channel call's timeout),
    /// and delays count in whole milliseconds, as the runtime arms its timers.
    /// At most `limit` entries.
    ///
    /// This is what a view of a running instance shows as "still to come"; the
    /// model-level timetable (nominal, for any instance) is
    /// [`RetryPolicy::schedule`].
    pub fn upcoming(
        &self,
        instance_id: &str,
        node_id: &str,
        next: NextAttempt,
        attempt_takes: Duration,
        limit: usize,
    ) -> Vec<UpcomingAttempt> {
        let mut out = Vec::new();
        let (mut made, mut fails_at) = match next {
            NextAttempt::Due { attempt, at } => {
                out.push(UpcomingAttempt {
                    attempt,
                    since_first: at,
                });
                (attempt, at.saturating_add(attempt_takes))
            }
            NextAttempt::InFlight { attempt, fails_at } => (attempt, fails_at),
        };
        while out.len() < limit {
            let step = self.next_attempt(made, fails_at, |a| {
                whole_ms(self.delay_with_jitter(a, instance_id, node_id))
            });
            let Next::Retry { attempt, delay } = step else {
                break;
            };
            let at = fails_at.saturating_add(delay);
            out.push(UpcomingAttempt {
                attempt,
                since_first: at,
            });
            made = attempt;
            fails_at = at.saturating_add(attempt_takes);
        }
        out.truncate(limit);
        out
    }

    /// The most this policy can cost one task that never succeeds: the number
    /// of attempts (`None`: no bound) and the latest start of its last attempt
    /// after the first (`None`: no bound). With jitter, attempts are counted at
    /// the shortest delays and the time is an upper bound.
    ///
    /// DBG-08 (`maxAttempts="6" backoff="PT1M PT5M PT25M PT125M PT625M"`) gives
    /// `(Some(6), Some(13 h 1 min))`.
    pub fn worst_case(&self) -> (Option<u64>, Option<Duration>) {
        let attempts = self.walk(None, true).count;
        let elapsed = if self.jitter == Jitter::None {
            self.walk(None, false).last
        } else {
            let by_count = if self.max_attempts.is_some() {
                RetryPolicy {
                    max_elapsed: None,
                    ..self.clone()
                }
                .walk(None, false)
                .last
            } else {
                None
            };
            match (by_count, self.max_elapsed) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        (attempts, elapsed)
    }

    /// Attempts one always-failing instance makes over the policy's whole life,
    /// at nominal delays (`None`: it never stops).
    pub fn attempts_per_failing_instance(&self) -> Option<u64> {
        self.walk(None, false).count
    }

    /// The load projection (docs/retry-policy.md): attempts scheduled within
    /// `window` (from each first attempt) by `instances` instances that all keep
    /// failing, at nominal delays. An upper bound, not a measurement: it is what
    /// the policy *schedules*, if capacity could run it. `None`: unbounded
    /// (immediate retries with no attempt limit).
    ///
    /// The old DBG-08 loop (an unbounded `backoff="PT1M"`) over 1,440 minutes
    /// for 50,000 jobs: 72,000,000.
    pub fn scheduled_attempts(&self, instances: u64, window: Duration) -> Option<u64> {
        let per = self.walk(Some(window), false).count?;
        Some(per.saturating_mul(instances))
    }

    /// Whether a failure code ends the task at once.
    pub fn is_non_retryable(&self, code: &str) -> bool {
        self.non_retryable_codes.iter().any(|c| c == code)
    }

    /// The wait after a rate-limited failure: the provider's retry-after, capped
    /// by [`RetryPolicy::retry_after_cap`] (a provider must not own unlimited
    /// use of our capacity).
    pub fn rate_limited_delay(&self, retry_after: Duration) -> Duration {
        retry_after.min(self.retry_after_cap().cap)
    }

    /// The local maximum of a provider-given retry-after, and where it comes
    /// from: `maxDelay` when the policy sets it, else
    /// [`DEFAULT_RETRY_AFTER_MAX`]. One answer for the runtime's park and the
    /// editor's hover, so the hover cannot promise a wait the runtime does not
    /// keep.
    pub fn retry_after_cap(&self) -> RetryAfterCap {
        match self.max_delay {
            Some(cap) => RetryAfterCap {
                cap,
                source: CapSource::MaxDelay,
            },
            None => RetryAfterCap {
                cap: DEFAULT_RETRY_AFTER_MAX,
                source: CapSource::Default,
            },
        }
    }

    /// The decision after attempt `failed_attempt` failed with `code`,
    /// `elapsed_since_first` after the first attempt started: retry (with the
    /// jittered delay, or the capped `retry_after` of a rate-limited failure),
    /// or stop and why. Checks, in order: non-retryable code, spent budget,
    /// expiry of the next attempt's scheduled time.
    pub fn next_after_failure(
        &self,
        failed_attempt: u32,
        code: &str,
        retry_after: Option<Duration>,
        elapsed_since_first: Duration,
        instance_id: &str,
        node_id: &str,
    ) -> Next {
        if self.is_non_retryable(code) {
            return Next::Stop(StopReason::NonRetryable);
        }
        self.next_attempt(
            failed_attempt,
            elapsed_since_first,
            |attempt| match retry_after {
                Some(after) => self.rate_limited_delay(after),
                None => self.delay_with_jitter(attempt, instance_id, node_id),
            },
        )
    }

    /// The one step every schedule takes, the runtime's included: after
    /// attempt `made` (0: none yet), at `elapsed_since_first`, is there
    /// another attempt, and after what delay (`delay_of` the attempt's
    /// number)? Budget first, then expiry of that attempt's start; an attempt
    /// starting exactly at `first + maxElapsed` is still made.
    fn next_attempt(
        &self,
        made: u32,
        elapsed_since_first: Duration,
        delay_of: impl FnOnce(u32) -> Duration,
    ) -> Next {
        if self.max_attempts.is_some_and(|m| made >= m) || made == u32::MAX {
            return Next::Stop(StopReason::Exhausted);
        }
        let attempt = made + 1;
        let delay = delay_of(attempt);
        if self
            .max_elapsed
            .is_some_and(|e| elapsed_since_first.saturating_add(delay) > e)
        {
            return Next::Stop(StopReason::Expired);
        }
        Next::Retry { attempt, delay }
    }

    /// One line for hovers and reports: `6 attempts over at most 13 h 1 min`.
    pub fn summary(&self) -> String {
        let (attempts, elapsed) = self.worst_case();
        match (attempts, elapsed) {
            (Some(1), _) => "1 attempt, no retries".to_string(),
            (Some(n), Some(e)) => format!("{n} attempts over at most {}", duration::to_words(e)),
            (Some(n), None) => format!("{n} attempts"),
            (None, Some(e)) => format!("attempts until {} after the first", duration::to_words(e)),
            (None, None) => "unbounded: attempts never stop".to_string(),
        }
    }

    /// Whether every delay from `attempt` on equals `delay_before(attempt)`.
    fn stable_from(&self, attempt: u32, low: bool) -> bool {
        if low && self.jitter == Jitter::Full {
            return true;
        }
        let d = self.delay_before(attempt);
        match &self.backoff {
            Backoff::List(list) => attempt as usize > list.len(),
            Backoff::Curve { factor, .. } => {
                *factor == 1.0 || self.max_delay.is_some_and(|m| d >= m) || d >= SATURATED
            }
        }
    }

    /// Count the attempts of an always-failing task and the start time of the
    /// last, bounded by `maxAttempts`, `maxElapsed` (inclusive) and `window`
    /// (exclusive); `low`: at the shortest jittered delays. Constant tails are
    /// computed, not iterated, so policies with millions of attempts are cheap.
    fn walk(&self, window: Option<Duration>, low: bool) -> Walk {
        // Exclusive end: an attempt at time t is made iff t < end.
        let elapsed_end = self.max_elapsed.map(|e| e + Duration::from_nanos(1));
        let end = match (window, elapsed_end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if end == Some(Duration::ZERO) {
            return Walk {
                count: Some(0),
                last: None,
            };
        }
        let cap: u64 = self.max_attempts.map(u64::from).unwrap_or(u64::MAX);
        let mut t = Duration::ZERO;
        let mut count: u64 = 1;
        let mut attempt: u32 = 2;
        let mut steps = 0u64;
        loop {
            if count >= cap {
                return Walk {
                    count: Some(count),
                    last: Some(t),
                };
            }
            let d = if low {
                self.jitter_bounds(attempt).0
            } else {
                self.delay_before(attempt)
            };
            steps += 1;
            if self.stable_from(attempt, low) || steps >= MAX_STEPS || attempt == u32::MAX {
                let remaining = cap - count;
                let fit = match end {
                    None => None,
                    Some(_) if d.is_zero() => None,
                    Some(end) => {
                        let room = end.saturating_sub(t).as_nanos().saturating_sub(1);
                        Some((room / d.as_nanos()) as u64)
                    }
                };
                let more = match fit {
                    Some(f) => f.min(remaining),
                    None if cap == u64::MAX => {
                        return Walk {
                            count: None,
                            last: if d.is_zero() && end.is_none() {
                                None
                            } else {
                                end.map(|e| e.saturating_sub(Duration::from_nanos(1)))
                            },
                        }
                    }
                    None => remaining,
                };
                let last = t.saturating_add(mul(d, more));
                return Walk {
                    count: Some(count + more),
                    last: Some(last),
                };
            }
            let next = t.saturating_add(d);
            if end.is_some_and(|e| next >= e) {
                return Walk {
                    count: Some(count),
                    last: Some(t),
                };
            }
            t = next;
            count += 1;
            attempt += 1;
        }
    }
}

struct Walk {
    count: Option<u64>,
    last: Option<Duration>,
}

fn mul(d: Duration, n: u64) -> Duration {
    let nanos = d.as_nanos().saturating_mul(n as u128);
    from_nanos_saturating(nanos)
}

pub(super) fn from_nanos_saturating(nanos: u128) -> Duration {
    let cap = SATURATED.as_nanos();
    let n = nanos.min(cap);
    Duration::new((n / 1_000_000_000) as u64, (n % 1_000_000_000) as u32)
}

/// `d` truncated to whole milliseconds: the resolution of the runtime's timers.
fn whole_ms(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `initial × factor^k`, rounded to the nanosecond, saturating.
fn curve(initial: Duration, factor: f64, k: u32) -> Duration {
    let exp = i32::try_from(k).unwrap_or(i32::MAX);
    let nanos = initial.as_nanos() as f64 * factor.powi(exp);
    if !nanos.is_finite() || nanos >= SATURATED.as_nanos() as f64 {
        return SATURATED;
    }
    from_nanos_saturating(nanos.round() as u128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RetrySpec;
    use crate::policy::testing::{attr, dbg08_curve, dbg08_list, starts};

    #[test]
    fn dbg08_list_and_curve_give_the_same_schedule() {
        for p in [dbg08_list(), dbg08_curve()] {
            assert_eq!(starts(&p), vec![0, 60, 360, 1860, 9360, 46860]);
            let delays: Vec<u64> = p.schedule().iter().map(|a| a.delay.as_secs()).collect();
            assert_eq!(delays, vec![0, 60, 300, 1500, 7500, 37500]);
            assert!(p.schedule_is_complete());
            let (attempts, elapsed) = p.worst_case();
            assert_eq!(attempts, Some(6));
            assert_eq!(crate::duration::to_words(elapsed.unwrap()), "13 h 1 min");
            assert_eq!(p.summary(), "6 attempts over at most 13 h 1 min");
            assert_eq!(p.attempts_per_failing_instance(), Some(6));
        }
    }

    #[test]
    fn the_old_unbounded_loop_projects_72_million_attempts_a_day() {
        let old = RetryPolicy::from_spec(&RetrySpec {
            backoff: attr("PT1M"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert_eq!(old.attempts_per_failing_instance(), None);
        assert_eq!(old.worst_case(), (None, None));
        assert_eq!(
            old.scheduled_attempts(50_000, Duration::from_secs(1_440 * 60)),
            Some(72_000_000)
        );
        assert_eq!(old.schedule().len(), SCHEDULE_LIMIT);
        assert!(!old.schedule_is_complete());
        // DBG-08's finite schedule over the same day: 6 attempts each.
        assert_eq!(
            dbg08_list().scheduled_attempts(50_000, Duration::from_secs(86_400)),
            Some(300_000)
        );
    }

    #[test]
    fn list_repeats_last_and_max_delay_caps() {
        let p = RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("5"),
            backoff: attr("PT10S PT1M"),
            max_delay: attr("PT30S"),
            ..RetrySpec::default()
        })
        .unwrap();
        let d: Vec<u64> = (1..=5).map(|n| p.delay_before(n).as_secs()).collect();
        assert_eq!(d, vec![0, 10, 30, 30, 30]);
        let c = RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("10"),
            initial: attr("PT1S"),
            max_delay: attr("PT1M"),
            ..RetrySpec::default()
        })
        .unwrap();
        let d: Vec<u64> = (2..=9).map(|n| c.delay_before(n).as_secs()).collect();
        assert_eq!(d, vec![1, 2, 4, 8, 16, 32, 60, 60]);
    }

    #[test]
    fn a_retry_after_is_capped_by_max_delay_else_by_the_default_maximum() {
        let month = Duration::from_secs(30 * 86_400);
        let p = dbg08_list();
        assert_eq!(
            p.retry_after_cap(),
            RetryAfterCap {
                cap: DEFAULT_RETRY_AFTER_MAX,
                source: CapSource::Default
            }
        );
        assert_eq!(p.rate_limited_delay(month), DEFAULT_RETRY_AFTER_MAX);
        assert_eq!(
            p.rate_limited_delay(Duration::from_secs(600)).as_secs(),
            600
        );
        // maxDelay overrides the default, longer as well as shorter.
        for (max, secs) in [("PT5M", 300), ("P7D", 7 * 86_400)] {
            let q = RetryPolicy::from_spec(&RetrySpec {
                max_attempts: attr("3"),
                backoff: attr("PT1M"),
                max_delay: attr(max),
                ..RetrySpec::default()
            })
            .unwrap();
            assert_eq!(q.retry_after_cap().source, CapSource::MaxDelay);
            assert_eq!(q.rate_limited_delay(month).as_secs(), secs);
        }
    }

    #[test]
    fn no_backoff_means_immediate_retries() {
        let p = RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("3"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert_eq!(p.backoff, Backoff::List(Vec::new()));
        assert_eq!(starts(&p), vec![0, 0, 0]);
        // Zero delays bounded only by time never stop counting.
        let q = RetryPolicy::from_spec(&RetrySpec {
            max_elapsed: attr("PT1H"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert_eq!(q.attempts_per_failing_instance(), None);
    }

    #[test]
    fn max_elapsed_expires_the_attempt_past_it() {
        let p = RetryPolicy::from_spec(&RetrySpec {
            backoff: attr("PT1M PT5M PT25M PT125M PT625M"),
            max_elapsed: attr("PT1H"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert_eq!(starts(&p), vec![0, 60, 360, 1860]);
        assert_eq!(p.worst_case(), (Some(4), Some(Duration::from_secs(1860))));
        // Exactly at the limit is still made.
        let q = RetryPolicy::from_spec(&RetrySpec {
            backoff: attr("PT30M"),
            max_elapsed: attr("PT1H"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert_eq!(starts(&q), vec![0, 1800, 3600]);
        assert_eq!(q.attempts_per_failing_instance(), Some(3));
        assert_eq!(
            q.next_after_failure(3, "X", None, Duration::from_secs(3600), "i", "n"),
            Next::Stop(StopReason::Expired)
        );
        assert_eq!(
            q.next_after_failure(2, "X", None, Duration::from_secs(1800), "i", "n"),
            Next::Retry {
                attempt: 3,
                delay: Duration::from_secs(1800)
            }
        );
    }

    #[test]
    fn long_constant_tails_are_computed_not_iterated() {
        let p = RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("4000000000"),
            backoff: attr("PT1S"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert_eq!(p.worst_case().0, Some(4_000_000_000));
        let q = RetryPolicy::from_spec(&RetrySpec {
            initial: attr("PT0.001S"),
            factor: attr("1.0000000001"),
            max_elapsed: attr("P3650D"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert!(q.attempts_per_failing_instance().is_some());
    }

    #[test]
    fn decisions_in_order_non_retryable_then_budget_then_expiry() {
        let p = RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("3"),
            backoff: attr("PT1M"),
            max_delay: attr("PT5M"),
            non_retryable_codes: attr("INVALID_INPUT q.timeout"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert!(p.is_non_retryable("q.timeout"));
        assert!(!p.is_non_retryable("q.delivery.poisoned"));
        let z = Duration::ZERO;
        assert_eq!(
            p.next_after_failure(1, "INVALID_INPUT", None, z, "i", "n"),
            Next::Stop(StopReason::NonRetryable)
        );
        assert_eq!(
            p.next_after_failure(3, "DOWN", None, z, "i", "n"),
            Next::Stop(StopReason::Exhausted)
        );
        assert_eq!(
            p.next_after_failure(1, "RATE", Some(Duration::from_secs(600)), z, "i", "n"),
            Next::Retry {
                attempt: 2,
                delay: Duration::from_secs(300)
            }
        );
        assert_eq!(StopReason::NonRetryable.as_str(), "non-retryable");
    }

    /// What the runtime itself decides, attempt after failed attempt, for one
    /// instance's node whose every attempt fails at once.
    fn runtime_walk(p: &RetryPolicy, instance: &str, node: &str) -> Vec<(u32, u64)> {
        let mut out = vec![(1, 0)];
        let (mut made, mut t) = (1, Duration::ZERO);
        while let Next::Retry { attempt, delay } =
            p.next_after_failure(made, "DOWN", None, t, instance, node)
        {
            // The runtime arms the retry timer in whole milliseconds.
            t += Duration::from_millis(delay.as_millis() as u64);
            made = attempt;
            out.push((attempt, t.as_millis() as u64));
        }
        out
    }

    fn upcoming_ms(p: &RetryPolicy, next: NextAttempt, limit: usize) -> Vec<(u32, u64)> {
        p.upcoming("inst-7", "charge", next, Duration::ZERO, limit)
            .iter()
            .map(|u| (u.attempt, u.since_first.as_millis() as u64))
            .collect()
    }

    #[test]
    fn upcoming_attempts_are_the_runtimes_own_decisions_with_jitter() {
        let start = NextAttempt::Due {
            attempt: 1,
            at: Duration::ZERO,
        };
        let mut policies = vec![dbg08_list(), dbg08_curve()];
        for jitter in [Jitter::Full, Jitter::Equal] {
            let mut p = dbg08_list();
            p.jitter = jitter;
            policies.push(p);
        }
        let mut expiring = dbg08_list();
        expiring.max_attempts = None;
        expiring.max_elapsed = Some(Duration::from_secs(3600));
        expiring.jitter = Jitter::Full;
        policies.push(expiring);
        for p in &policies {
            assert_eq!(
                upcoming_ms(p, start, 100),
                runtime_walk(p, "inst-7", "charge"),
                "{p:?}"
            );
        }
        // Unjittered, the plan is the model's timetable.
        let nominal: Vec<(u32, u64)> = dbg08_list()
            .schedule()
            .iter()
            .map(|a| (a.attempt, a.since_first.as_millis() as u64))
            .collect();
        assert_eq!(upcoming_ms(&dbg08_list(), start, 100), nominal);
        // Jittered, it is not: each delay is this instance's draw.
        let mut full = dbg08_list();
        full.jitter = Jitter::Full;
        let jittered = upcoming_ms(&full, start, 100);
        assert_eq!(jittered.len(), 6);
        assert_ne!(jittered, nominal);
        assert!(jittered.iter().zip(&nominal).all(|(j, n)| j.1 <= n.1));
    }

    #[test]
    fn upcoming_from_a_retry_timer_or_a_live_attempt() {
        // A retry timer for attempt 3 due at 6 min: 3 at 6 min, then 4, 5, 6.
        let due = NextAttempt::Due {
            attempt: 3,
            at: Duration::from_secs(360),
        };
        assert_eq!(
            upcoming_ms(&dbg08_list(), due, 100),
            vec![
                (3, 360_000),
                (4, 1_860_000),
                (5, 9_360_000),
                (6, 46_860_000)
            ]
        );
        assert_eq!(upcoming_ms(&dbg08_list(), due, 2).len(), 2);
        assert!(upcoming_ms(&dbg08_list(), due, 0).is_empty());
        // Attempt 2 in flight, failing at 90 s at the latest (a timeout):
        // attempt 3 comes 5 min after that.
        let live = NextAttempt::InFlight {
            attempt: 2,
            fails_at: Duration::from_secs(90),
        };
        assert_eq!(upcoming_ms(&dbg08_list(), live, 100)[0], (3, 390_000));
        // A call whose attempts each fail at a 30 s timeout: the next one
        // comes a delay after that failure.
        let calls: Vec<(u32, u64)> = dbg08_list()
            .upcoming("inst-7", "charge", due, Duration::from_secs(30), 3)
            .iter()
            .map(|u| (u.attempt, u.since_first.as_millis() as u64))
            .collect();
        assert_eq!(calls, vec![(3, 360_000), (4, 1_890_000), (5, 9_420_000)]);
        // The last attempt in flight: nothing after it.
        let last = NextAttempt::InFlight {
            attempt: 6,
            fails_at: Duration::from_secs(46_900),
        };
        assert!(upcoming_ms(&dbg08_list(), last, 100).is_empty());
        // maxElapsed ends the plan where the runtime expires the task.
        let mut p = dbg08_list();
        p.max_elapsed = Some(Duration::from_secs(2000));
        assert_eq!(
            upcoming_ms(&p, due, 100),
            vec![(3, 360_000), (4, 1_860_000)]
        );
        assert_eq!(
            p.next_after_failure(
                4,
                "DOWN",
                None,
                Duration::from_secs(1860),
                "inst-7",
                "charge"
            ),
            Next::Stop(StopReason::Expired)
        );
    }
}
