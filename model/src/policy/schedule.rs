//! What a policy does over time: the delay before each attempt, the
//! timetable of an instance that keeps failing, the worst case, the load a
//! failing population schedules, and the decision after a failed attempt
//! (non-retryable code, spent budget, expiry).
//!
//! A node's worst case ([`RetryPolicy::worst_case`]) counts how long each
//! attempt lasts before it counts as failed: nothing for a registered task
//! (the handler's failure ends the attempt), the `<q:timeout>` window for a
//! channel call (the call fails when its timeout fires). The next delay runs
//! from that failure, and `maxElapsed` is checked against the next attempt's
//! start, exactly as the runtime decides after a failure
//! ([`RetryPolicy::next_after_failure`]); both take the same step, so the
//! hover, the hints, the console and the runtime agree.

use std::time::Duration;

use super::{Backoff, Jitter, RetryPolicy};
use crate::duration;

/// How long deferrals may go on, from the first attempt, under a policy
/// without `maxElapsed` (docs/handlers.md, "A deferred failure").
pub const DEFERRAL_DEADLINE: Duration = Duration::from_secs(7 * 24 * 3600);

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
    /// Wait before this attempt (zero for the first), unjittered and capped:
    /// it runs from the previous attempt's failure.
    pub delay: Duration,
    /// When it starts, after the first attempt's start, unjittered.
    pub since_first: Duration,
    /// When it fails at the latest if it fails: its start plus the attempt's
    /// window (a channel call's timeout; the start itself for a registered
    /// task).
    pub fails_at: Duration,
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

/// A node's worst case: what its policy does to a task whose every attempt
/// fails (a registered task's handler failing at once, a channel call timing
/// out), computed by [`RetryPolicy::worst_case`]. The one answer the hover,
/// the rules' hints, the console and `qflow project` give; the runtime's
/// decisions after each failure take the same step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorstCase {
    /// How long one attempt lasts before it counts as failed (zero for a
    /// registered task; a channel call's `<q:timeout>` window).
    pub attempt_takes: Duration,
    /// The attempts, in order, at nominal delays (at most [`SCHEDULE_LIMIT`]).
    pub attempts: Vec<PlannedAttempt>,
    /// Whether [`WorstCase::attempts`] lists every attempt the policy makes.
    pub complete: bool,
    /// How many attempts the task makes (`None`: it never stops). With
    /// jitter, counted at the shortest delays: an upper bound.
    pub count: Option<u64>,
    /// When the task fails for good, after its first attempt's start: the
    /// last attempt's start plus its window (`None`: never). With jitter, an
    /// upper bound.
    pub fails_by: Option<Duration>,
    /// Why the attempts end (`None`: they never do).
    pub stop: Option<StopReason>,
    /// How far a provider's retry-after can stretch [`WorstCase::fails_by`]
    /// (a registered task's rate-limited failure waits it, capped): set by
    /// [`WorstCase::with_retry_after`], `None` where no failure carries one
    /// (a channel call).
    pub retry_after: Option<RetryAfterBound>,
}

/// The bound of a worst case when every wait is a provider's retry-after at
/// its cap ([`RetryPolicy::retry_after_cap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfterBound {
    pub cap: RetryAfterCap,
    /// When the task fails for good at the latest if every wait is the
    /// capped retry-after (`None`: never).
    pub fails_by: Option<Duration>,
}

impl WorstCase {
    /// "At most" is at most: the bound of a registered task's worst case
    /// when a provider's retry-after sets its waits. A rate-limited failure
    /// waits the provider's delay capped at `maxDelay` (else
    /// [`DEFAULT_RETRY_AFTER_MAX`]), which may be longer than the policy's
    /// own delays: each of the `count − 1` waits is at most the longer of
    /// the two, and `maxElapsed` still bounds the last start.
    pub fn with_retry_after(mut self, policy: &RetryPolicy) -> WorstCase {
        let cap = policy.retry_after_cap();
        let by_count = policy.max_attempts.map(|n| {
            let mut total = Duration::ZERO;
            let steps = u64::from(n).min(MAX_STEPS) as u32;
            for a in 2..=steps {
                total = total.saturating_add(whole_ms(policy.delay_before(a)).max(cap.cap));
            }
            // Past the steps counted, no wait is longer than the last
            // attempt's (delays never shrink).
            let rest = u64::from(n).saturating_sub(u64::from(steps));
            if rest > 0 {
                let last = whole_ms(policy.delay_before(n)).max(cap.cap);
                total = total.saturating_add(mul(last, rest));
            }
            total.saturating_add(mul(self.attempt_takes, u64::from(n)))
        });
        let by_time = policy
            .max_elapsed
            .map(|e| e.saturating_add(self.attempt_takes));
        let fails_by = match (by_count, by_time) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.retry_after = Some(RetryAfterBound { cap, fails_by });
        self
    }

    /// "At most" covers every way a call's attempt can end: the schedule
    /// counts each attempt failing at its earliest (a poisoned request),
    /// but one whose deliveries get through and go unanswered lasts until
    /// its timeout, `latest` after it starts. The bound of
    /// [`WorstCase::fails_by`] then holds for any mix of the two: with
    /// `maxAttempts` every attempt lasting `latest`, and `maxElapsed`
    /// bounding the last start.
    pub fn with_latest_window(mut self, policy: &RetryPolicy, latest: Duration) -> WorstCase {
        if latest <= self.attempt_takes {
            return self;
        }
        let by_count = policy.max_attempts.map(|_| {
            RetryPolicy {
                max_elapsed: None,
                ..policy.clone()
            }
            .walk(None, false, latest)
            .last
            .unwrap_or_default()
            .saturating_add(latest)
        });
        let by_time = policy.max_elapsed.map(|e| e.saturating_add(latest));
        let bound = match (by_count, by_time) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.fails_by = match (self.fails_by, bound) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        self
    }

    /// One line for hovers and reports: `6 attempts over at most 13 h 1 min`
    /// (from the first attempt's start to the last attempt's failure); for
    /// a registered task, what a provider's retry-after can stretch it to.
    pub fn summary(&self) -> String {
        let mut s = self.base_summary();
        if let Some(more) = self.retry_after_clause() {
            s.push_str("; ");
            s.push_str(&more);
        }
        s
    }

    /// How far a provider's retry-after can stretch the bound, in words:
    /// `a provider's retry-after can stretch each wait to 1 d (the default
    /// cap; maxDelay sets it): at most 5 d` (`None`: it cannot, or no
    /// failure carries one).
    pub fn retry_after_clause(&self) -> Option<String> {
        let r = self.retry_after?;
        if self.count == Some(1) {
            return None;
        }
        let by = r.fails_by?;
        if self.fails_by.is_some_and(|f| by <= f) {
            return None;
        }
        let source = match r.cap.source {
            CapSource::MaxDelay => "its maxDelay",
            CapSource::Default => "the default cap; maxDelay sets it",
        };
        Some(format!(
            "a provider's retry-after can stretch each wait to {} ({source}): at most {}",
            duration::to_words(r.cap.cap),
            duration::to_words(by)
        ))
    }

    /// [`WorstCase::summary`] at the policy's own delays, without what a
    /// provider's retry-after adds.
    pub fn base_summary(&self) -> String {
        match (self.count, self.fails_by) {
            (Some(1), _) if self.attempt_takes.is_zero() => "1 attempt, no retries".to_string(),
            (Some(1), Some(e)) => format!(
                "1 attempt, no retries (fails after at most {})",
                duration::to_words(e)
            ),
            (Some(n), Some(e)) => format!("{n} attempts over at most {}", duration::to_words(e)),
            (Some(n), None) => format!("{n} attempts"),
            (None, Some(e)) => format!("attempts until {} after the first", duration::to_words(e)),
            (None, None) => "unbounded: attempts never stop".to_string(),
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

    /// The node's worst case ([`WorstCase`]) when each of its attempts lasts
    /// `attempt_takes` before it fails (zero for a registered task, the
    /// `<q:timeout>` window of a channel call: [`super::attempt_window`]):
    /// every attempt it makes, up to `maxAttempts` or the last one that starts
    /// within `maxElapsed` (nominal, unjittered times; at most
    /// [`SCHEDULE_LIMIT`] listed), how many there are, and when the last one
    /// fails.
    ///
    /// The listing steps with the runtime's own decision after a failure
    /// (the next delay from the failure, the next start checked against
    /// `maxElapsed`), so an instance whose every attempt fails makes exactly
    /// these attempts at these times.
    pub fn worst_case(&self, attempt_takes: Duration) -> WorstCase {
        let (attempts, complete, stop) = self.listing(attempt_takes);
        let count = self.walk(None, true, attempt_takes).count;
        let last_start = if self.jitter == Jitter::None {
            self.walk(None, false, attempt_takes).last
        } else {
            let by_count = if self.max_attempts.is_some() {
                RetryPolicy {
                    max_elapsed: None,
                    ..self.clone()
                }
                .walk(None, false, attempt_takes)
                .last
            } else {
                None
            };
            match (by_count, self.max_elapsed) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        let stop = stop.or(match count {
            None => None,
            Some(n) if self.max_attempts.is_some_and(|m| u64::from(m) == n) => {
                Some(StopReason::Exhausted)
            }
            Some(_) => Some(StopReason::Expired),
        });
        WorstCase {
            attempt_takes,
            attempts,
            complete,
            count,
            fails_by: last_start.map(|l| l.saturating_add(attempt_takes)),
            stop,
            retry_after: None,
        }
    }

    fn listing(&self, takes: Duration) -> (Vec<PlannedAttempt>, bool, Option<StopReason>) {
        let mut out: Vec<PlannedAttempt> = Vec::new();
        // `fails`: when the last attempt made failed (nominal and earliest).
        let (mut fails, mut fails_min) = (Duration::ZERO, Duration::ZERO);
        // Attempt 1 is "the attempt after attempt 0", at no delay: the same
        // step as every later one, so the timetable ends exactly where the
        // runtime's decision stops.
        let mut made: u32 = 0;
        loop {
            let step = self.next_attempt(made, fails, |a| whole_ms(self.delay_before(a)));
            let Next::Retry { attempt, delay } = step else {
                let Next::Stop(reason) = step else {
                    unreachable!()
                };
                return (out, true, Some(reason));
            };
            if out.len() >= SCHEDULE_LIMIT {
                return (out, false, None);
            }
            let start = fails.saturating_add(delay);
            let start_min = fails_min.saturating_add(whole_ms(self.jitter_bounds(attempt).0));
            out.push(PlannedAttempt {
                attempt,
                delay,
                since_first: start,
                fails_at: start.saturating_add(takes),
                since_first_min: start_min,
                since_first_max: start,
            });
            fails = start.saturating_add(takes);
            fails_min = start_min.saturating_add(takes);
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

    /// Attempts one always-failing instance makes over the policy's whole life,
    /// at nominal delays, each attempt lasting `attempt_takes` (`None`: it
    /// never stops).
    pub fn attempts_per_failing_instance(&self, attempt_takes: Duration) -> Option<u64> {
        self.walk(None, false, attempt_takes).count
    }

    /// The load projection (docs/retry-policy.md): attempts scheduled within
    /// `window` (from each first attempt) by `instances` instances that all keep
    /// failing, at nominal delays, each attempt lasting `attempt_takes`. An
    /// upper bound, not a measurement: it is what the policy *schedules*, if
    /// capacity could run it. `None`: unbounded (immediate retries with no
    /// attempt limit).
    ///
    /// The old DBG-08 loop (an unbounded `backoff="PT1M"`) over 1,440 minutes
    /// for 50,000 jobs: 72,000,000.
    pub fn scheduled_attempts(
        &self,
        instances: u64,
        window: Duration,
        attempt_takes: Duration,
    ) -> Option<u64> {
        let per = self.walk(Some(window), false, attempt_takes).count?;
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

    /// After attempt `deferred` said its failure is deferred for `delay`: the
    /// same attempt again after `delay`, burning no budget, unless the
    /// re-run would start past `maxElapsed`, or past
    /// [`DEFERRAL_DEADLINE`] from the first attempt when the policy has no
    /// `maxElapsed` (then the retry expires: a deferral never runs
    /// forever). `delay` is the handler's, not a backoff, so `maxDelay`
    /// does not cap it.
    pub fn next_after_deferral(
        &self,
        deferred: u32,
        delay: Duration,
        elapsed_since_first: Duration,
    ) -> Next {
        let deadline = self.max_elapsed.unwrap_or(DEFERRAL_DEADLINE);
        if elapsed_since_first.saturating_add(delay) > deadline {
            return Next::Stop(StopReason::Expired);
        }
        Next::Retry {
            attempt: deferred.max(1),
            delay,
        }
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
    /// (exclusive); `low`: at the shortest jittered delays; each attempt
    /// lasting `takes` before the next delay runs. Constant tails are
    /// computed, not iterated, so policies with millions of attempts are cheap.
    pub(super) fn walk(&self, window: Option<Duration>, low: bool, takes: Duration) -> Walk {
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
                whole_ms(self.jitter_bounds(attempt).0)
            } else {
                whole_ms(self.delay_before(attempt))
            }
            .saturating_add(takes);
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

pub(super) struct Walk {
    pub(super) count: Option<u64>,
    pub(super) last: Option<Duration>,
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
            let w = p.worst_case(Duration::ZERO);
            let delays: Vec<u64> = w.attempts.iter().map(|a| a.delay.as_secs()).collect();
            assert_eq!(delays, vec![0, 60, 300, 1500, 7500, 37500]);
            assert!(w.complete);
            assert_eq!(w.count, Some(6));
            assert_eq!(w.stop, Some(StopReason::Exhausted));
            assert_eq!(w.fails_by, Some(Duration::from_secs(46_860)));
            assert_eq!(crate::duration::to_words(w.fails_by.unwrap()), "13 h 1 min");
            assert_eq!(w.summary(), "6 attempts over at most 13 h 1 min");
            assert_eq!(p.attempts_per_failing_instance(Duration::ZERO), Some(6));
        }
    }

    #[test]
    fn the_old_unbounded_loop_projects_72_million_attempts_a_day() {
        let old = RetryPolicy::from_spec(&RetrySpec {
            backoff: attr("PT1M"),
            ..RetrySpec::default()
        })
        .unwrap();
        let z = Duration::ZERO;
        assert_eq!(old.attempts_per_failing_instance(z), None);
        let w = old.worst_case(z);
        assert_eq!((w.count, w.fails_by, w.stop), (None, None, None));
        assert_eq!(
            old.scheduled_attempts(50_000, Duration::from_secs(1_440 * 60), z),
            Some(72_000_000)
        );
        assert_eq!(w.attempts.len(), SCHEDULE_LIMIT);
        assert!(!w.complete);
        // DBG-08's finite schedule over the same day: 6 attempts each.
        assert_eq!(
            dbg08_list().scheduled_attempts(50_000, Duration::from_secs(86_400), z),
            Some(300_000)
        );
    }

    /// A call with a 5 min timeout: each attempt lasts until its timeout,
    /// and the next delay runs from there. `maxAttempts="10" backoff="PT1M"
    /// maxElapsed="PT10M"` makes 2 attempts (at 0 and 6 min) and fails
    /// `expired` at 11 min, as the runtime does; counting attempts as
    /// failing at once would promise 10 attempts over 9 min.
    #[test]
    fn a_call_attempt_lasts_its_timeout_window_in_the_worst_case() {
        let p = RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("10"),
            backoff: attr("PT1M"),
            max_elapsed: attr("PT10M"),
            ..RetrySpec::default()
        })
        .unwrap();
        let instant = p.worst_case(Duration::ZERO);
        assert_eq!(instant.count, Some(10));
        assert_eq!(instant.summary(), "10 attempts over at most 9 min");
        let call = p.worst_case(Duration::from_secs(300));
        let rows: Vec<(u32, u64, u64)> = call
            .attempts
            .iter()
            .map(|a| (a.attempt, a.since_first.as_secs(), a.fails_at.as_secs()))
            .collect();
        assert_eq!(rows, vec![(1, 0, 300), (2, 360, 660)]);
        assert_eq!(call.count, Some(2));
        assert_eq!(call.fails_by, Some(Duration::from_secs(660)));
        assert_eq!(call.stop, Some(StopReason::Expired));
        assert!(call.complete);
        assert_eq!(call.summary(), "2 attempts over at most 11 min");
        assert_eq!(
            p.attempts_per_failing_instance(Duration::from_secs(300)),
            Some(2)
        );
        // The runtime's own decision at the second failure (11 min): expired.
        assert_eq!(
            p.next_after_failure(2, "q.timeout", None, Duration::from_secs(660), "i", "n"),
            Next::Stop(StopReason::Expired)
        );
        // DBG-08 as a call with a 30 s timeout: 6 attempts, each delay after
        // the previous timeout; the last fails 6 x 30 s later than a task's.
        let d = dbg08_list().worst_case(Duration::from_secs(30));
        let starts: Vec<u64> = d.attempts.iter().map(|a| a.since_first.as_secs()).collect();
        assert_eq!(starts, vec![0, 90, 420, 1950, 9480, 47010]);
        assert_eq!(d.fails_by, Some(Duration::from_secs(47_040)));
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
        assert_eq!(q.attempts_per_failing_instance(Duration::ZERO), None);
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
        let w = p.worst_case(Duration::ZERO);
        assert_eq!(
            (w.count, w.fails_by),
            (Some(4), Some(Duration::from_secs(1860)))
        );
        assert_eq!(w.stop, Some(StopReason::Expired));
        // Exactly at the limit is still made.
        let q = RetryPolicy::from_spec(&RetrySpec {
            backoff: attr("PT30M"),
            max_elapsed: attr("PT1H"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert_eq!(starts(&q), vec![0, 1800, 3600]);
        assert_eq!(q.attempts_per_failing_instance(Duration::ZERO), Some(3));
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
        assert_eq!(p.worst_case(Duration::ZERO).count, Some(4_000_000_000));
        let q = RetryPolicy::from_spec(&RetrySpec {
            initial: attr("PT0.001S"),
            factor: attr("1.0000000001"),
            max_elapsed: attr("P3650D"),
            ..RetrySpec::default()
        })
        .unwrap();
        assert!(q.attempts_per_failing_instance(Duration::ZERO).is_some());
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
            .worst_case(Duration::ZERO)
            .attempts
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
