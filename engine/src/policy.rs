//! Retry policies: what a `<q:retry>` element means, as numbers.
//!
//! The loader's rules turn a written [`RetrySpec`] into a [`RetryPolicy`] with
//! [`RetryPolicy::from_spec`] and report every [`SpecError`] as a diagnostic; the
//! runtime, the language server's hover and the console only ever see policies
//! of models the loader accepted, and they all compute delays here, so an
//! editor's schedule and the engine's behaviour cannot drift apart.
//!
//! # Semantics (also in `docs/retry-policy.md`)
//!
//! - **Attempts.** `maxAttempts` counts every attempt *including the first*:
//!   `maxAttempts="6"` is one attempt and five retries. Attempt numbers are
//!   1-based.
//! - **List form.** `backoff="PT1M PT5M PT25M"` lists the delays before attempt
//!   2, 3, 4, …; past the end of the list the last entry repeats.
//! - **Curve form.** `initial="PT1M" factor="5"`: the delay before attempt `n`
//!   (n ≥ 2) is `initial × factor^(n−2)`. `factor` defaults to 2 (Temporal's
//!   backoff coefficient) and must be at least 1.
//! - **No backoff.** A `<q:retry>` without `backoff` or `initial` retries at
//!   once (every delay is zero). The rules refuse that on channel calls (QF014).
//! - **maxDelay** caps every delay, in both forms, and a rate-limited failure's
//!   provider-given retry-after.
//! - **maxElapsed** is measured from the start of the first attempt: an attempt
//!   whose scheduled time would be later than `first attempt + maxElapsed` is
//!   not made, and the task fails with reason `expired`.
//! - **Jitter** (`none` by default) is deterministic: seeded from (instance id,
//!   node id, attempt) with a stable hash ([`jitter_unit`]), so a rerun of the
//!   same instance waits the same times. `full` draws uniformly in `[0, d]`,
//!   `equal` in `[d/2, d]`. Jitter only ever shortens a delay.
//! - **nonRetryableCodes**: a failure with one of these codes ends the task at
//!   once (reason `non-retryable`), budget or not.
//!
//! Times in [`RetryPolicy::schedule`] are measured between attempt *starts* and
//! treat attempts as failing instantly: the schedule is the policy's own
//! timetable, independent of how long a handler or counterpart takes.

use std::time::Duration;

use crate::diagnostic::Code;
use crate::duration;
use crate::model::{Attr, RetrySpec};
use crate::span::Span;

/// How long a schedule listing gets when the policy itself does not end it.
pub const SCHEDULE_LIMIT: usize = 100;

/// The factor of the curve form when `factor` is not written.
pub const DEFAULT_FACTOR: f64 = 2.0;

/// Delays saturate here (about 100 years) so that arithmetic on absurd curves
/// stays defined; no real schedule gets near it.
const SATURATED: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Bound on the work any schedule computation does, whatever the policy.
const MAX_STEPS: u64 = 1_000_000;

/// How the delay between attempts grows.
#[derive(Debug, Clone, PartialEq)]
pub enum Backoff {
    /// Delays before attempt 2, 3, …; the last repeats. Empty: no `backoff`
    /// attribute, every retry is immediate.
    List(Vec<Duration>),
    /// `initial × factor^(n−2)` before attempt `n`.
    Curve { initial: Duration, factor: f64 },
}

/// Randomisation of each delay, deterministic per (instance, node, attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// The delay as computed.
    None,
    /// Uniform in `[0, d]`.
    Full,
    /// `d/2` plus uniform in `[0, d/2]`.
    Equal,
}

impl Jitter {
    /// The attribute value that selects this mode (`jitter="full"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
        }
    }
}

/// A validated `<q:retry>`.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Every attempt including the first; `None`: not limited by count.
    pub max_attempts: Option<u32>,
    pub backoff: Backoff,
    /// Caps every delay (and a provider's retry-after).
    pub max_delay: Option<Duration>,
    /// Retry expiry, measured from the start of the first attempt.
    pub max_elapsed: Option<Duration>,
    pub jitter: Jitter,
    /// Failure codes that end the task at once.
    pub non_retryable_codes: Vec<String>,
}

/// Why a `<q:retry>` as written is not a policy. The rules turn each into a
/// diagnostic with this code at this span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub code: Code,
    /// The offending text (an attribute value, or one entry of a list).
    pub span: Span,
    pub message: String,
    /// The primary label.
    pub label: String,
    pub help: String,
    /// Other places involved (the other half of a list/curve mix).
    pub related: Vec<(Span, String)>,
}

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

/// The failure codes qflow itself raises on channel calls (DESIGN §3).
pub const CHANNEL_FAILURE_CODES: [&str; 2] = ["q.timeout", "q.delivery.poisoned"];

impl RetryPolicy {
    /// Validate a `<q:retry>` as written. Every fault is reported (not just the
    /// first), each with the code of the rule it breaks: QF008 for durations,
    /// QF013 for `maxAttempts`, QF015 for a malformed backoff or jitter.
    ///
    /// Rules about the policy in its context (unbounded: QF012, zero backoff on
    /// a channel call: QF014, unusable entries: QF031, no jitter: QF033) are
    /// not faults of the text and live in the rules, which use the policy.
    pub fn from_spec(spec: &RetrySpec) -> Result<RetryPolicy, Vec<SpecError>> {
        let mut errs = Vec::new();
        let max_attempts = spec
            .max_attempts
            .as_ref()
            .and_then(|a| parse_max_attempts(a, &mut errs));
        let max_delay = spec
            .max_delay
            .as_ref()
            .and_then(|a| positive_duration(a, "maxDelay", &mut errs));
        let max_elapsed = spec
            .max_elapsed
            .as_ref()
            .and_then(|a| positive_duration(a, "maxElapsed", &mut errs));
        let backoff = parse_backoff(spec, &mut errs);
        let jitter = match &spec.jitter {
            None => Jitter::None,
            Some(a) => match a.value.trim() {
                "none" => Jitter::None,
                "full" => Jitter::Full,
                "equal" => Jitter::Equal,
                other => {
                    let mut help = "jitter is one of `none`, `full` (uniform in [0, d]) or `equal` (d/2 plus uniform in [0, d/2])".to_string();
                    if let Some(s) = crate::suggest::closest(other, ["none", "full", "equal"]) {
                        help = format!("did you mean `{s}`? {help}");
                    }
                    errs.push(SpecError {
                        code: Code::QF015,
                        span: a.span,
                        message: format!("unknown jitter `{other}`"),
                        label: "not a jitter mode".into(),
                        help,
                        related: Vec::new(),
                    });
                    Jitter::None
                }
            },
        };
        let non_retryable_codes = spec
            .non_retryable_codes
            .as_ref()
            .map(|a| a.value.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        match (errs.is_empty(), backoff) {
            (true, Some(backoff)) => Ok(RetryPolicy {
                max_attempts,
                backoff,
                max_delay,
                max_elapsed,
                jitter,
                non_retryable_codes,
            }),
            _ => Err(errs),
        }
    }

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

    /// The wait before `attempt` for one instance's node, jittered as the
    /// runtime waits it. Deterministic: the same arguments give the same delay
    /// on every machine and every run.
    pub fn delay_with_jitter(&self, attempt: u32, instance_id: &str, node_id: &str) -> Duration {
        let d = self.delay_before(attempt);
        let u = jitter_unit(instance_id, node_id, attempt);
        match self.jitter {
            Jitter::None => d,
            Jitter::Full => scale(d, u),
            Jitter::Equal => {
                let half = d / 2;
                half + scale(d - half, u)
            }
        }
    }

    /// The smallest and largest wait before `attempt` this policy's jitter allows.
    pub fn jitter_bounds(&self, attempt: u32) -> (Duration, Duration) {
        let d = self.delay_before(attempt);
        match self.jitter {
            Jitter::None => (d, d),
            Jitter::Full => (Duration::ZERO, d),
            Jitter::Equal => (d / 2, d),
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
        let mut attempt: u32 = 1;
        loop {
            if self.max_attempts.is_some_and(|m| attempt > m) {
                return (out, true);
            }
            let delay = self.delay_before(attempt);
            let next = t.saturating_add(delay);
            if self.max_elapsed.is_some_and(|e| next > e) {
                return (out, true);
            }
            if out.len() >= SCHEDULE_LIMIT {
                return (out, false);
            }
            t = next;
            t_min = t_min.saturating_add(self.jitter_bounds(attempt).0);
            out.push(PlannedAttempt {
                attempt,
                delay,
                since_first: t,
                since_first_min: t_min,
                since_first_max: t,
            });
            if attempt == u32::MAX {
                return (out, true);
            }
            attempt += 1;
        }
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

    /// The load projection of retries-multiply.txt: attempts scheduled within
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
    /// by `maxDelay` (a provider must not own unlimited use of our capacity).
    pub fn rate_limited_delay(&self, retry_after: Duration) -> Duration {
        match self.max_delay {
            Some(cap) => retry_after.min(cap),
            None => retry_after,
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
        let attempt = failed_attempt.saturating_add(1);
        if self.max_attempts.is_some_and(|m| failed_attempt >= m) || failed_attempt == u32::MAX {
            return Next::Stop(StopReason::Exhausted);
        }
        let delay = match retry_after {
            Some(after) => self.rate_limited_delay(after),
            None => self.delay_with_jitter(attempt, instance_id, node_id),
        };
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

fn from_nanos_saturating(nanos: u128) -> Duration {
    let cap = SATURATED.as_nanos();
    let n = nanos.min(cap);
    Duration::new((n / 1_000_000_000) as u64, (n % 1_000_000_000) as u32)
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

/// `d × u` for `u` in `[0, 1]` given as a 64-bit fraction (`u / 2^64`, with
/// `u64::MAX` mapping to all of `d`).
fn scale(d: Duration, u: u64) -> Duration {
    let span = d.as_nanos();
    let n = (u128::from(u) * (span + 1)) >> 64;
    from_nanos_saturating(n.min(span))
}

/// The jitter draw for (instance, node, attempt): 64 uniform bits from a
/// stable hash (FNV-1a over the three, then the SplitMix64 finaliser). Stable
/// across Rust versions, platforms and runs, unlike std's `RandomState`; part
/// of qflow's contract, since a rerun must wait the same times.
pub fn jitter_unit(instance_id: &str, node_id: &str, attempt: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    feed(instance_id.as_bytes());
    feed(&[0xff]);
    feed(node_id.as_bytes());
    feed(&[0xff]);
    feed(&attempt.to_le_bytes());
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn parse_max_attempts(a: &Attr, errs: &mut Vec<SpecError>) -> Option<u32> {
    let v = a.value.trim();
    let problem = match v.parse::<i64>() {
        Ok(n) if n >= 1 && n <= i64::from(u32::MAX) => return Some(n as u32),
        Ok(n) if n < 1 => format!("maxAttempts is {n}: it counts every attempt including the first, so it must be at least 1"),
        Ok(_) => format!("maxAttempts `{v}` is too large (at most {})", u32::MAX),
        Err(_) => format!("maxAttempts `{v}` is not a whole number"),
    };
    errs.push(SpecError {
        code: Code::QF013,
        span: a.span,
        message: problem,
        label: "not a positive integer".into(),
        help: "write the total number of attempts, including the first, e.g. maxAttempts=\"3\""
            .into(),
        related: Vec::new(),
    });
    None
}

/// A duration attribute that must be positive (QF008 otherwise).
fn positive_duration(a: &Attr, name: &str, errs: &mut Vec<SpecError>) -> Option<Duration> {
    match duration::parse(&a.value) {
        Ok(d) if !d.is_zero() => Some(d),
        Ok(_) => {
            errs.push(SpecError {
                code: Code::QF008,
                span: a.span,
                message: format!("{name} is zero: it must be a positive duration"),
                label: "zero duration".into(),
                help: format!("give {name} a positive ISO-8601 duration, e.g. PT30S, PT1H, P2D"),
                related: Vec::new(),
            });
            None
        }
        Err(e) => {
            errs.push(invalid_duration(a.span, name, &a.value, &e));
            None
        }
    }
}

fn invalid_duration(span: Span, name: &str, text: &str, e: &duration::DurationError) -> SpecError {
    SpecError {
        code: Code::QF008,
        span,
        message: format!("{name} `{}` is not an ISO-8601 duration", text.trim()),
        label: e.message.clone(),
        help: format!(
            "{}; ISO-8601 durations look like PT30S, PT5M, PT1H30M, P2D",
            e.message
        ),
        related: Vec::new(),
    }
}

/// Spans of each whitespace-separated entry of an attribute value. Exact when
/// the value was written without entity references (always, in practice);
/// otherwise each entry gets the whole value's span.
pub fn list_entries(a: &Attr) -> Vec<(&str, Span)> {
    let exact = a.span.len() == a.value.len();
    let base = a.value.as_ptr() as usize;
    a.value
        .split_whitespace()
        .map(|w| {
            let off = w.as_ptr() as usize - base;
            let span = if exact {
                Span::new(a.span.start + off, a.span.start + off + w.len())
            } else {
                a.span
            };
            (w, span)
        })
        .collect()
}

fn parse_backoff(spec: &RetrySpec, errs: &mut Vec<SpecError>) -> Option<Backoff> {
    let curve_attrs: Vec<(&str, &Attr)> = [("initial", &spec.initial), ("factor", &spec.factor)]
        .into_iter()
        .filter_map(|(n, a)| a.as_ref().map(|a| (n, a)))
        .collect();
    if let (Some(list), Some((name, other))) = (&spec.backoff, curve_attrs.first()) {
        errs.push(SpecError {
            code: Code::QF015,
            span: list.full_span,
            message: format!("backoff mixes the list form (`backoff`) with the curve form (`{name}`)"),
            label: "the list form".into(),
            help: "keep one form: either backoff=\"PT1M PT5M …\" (a list) or initial=\"PT1M\" factor=\"5\" (a curve)".into(),
            related: vec![(other.full_span, "the curve form".into())],
        });
        return None;
    }
    if let Some(list) = &spec.backoff {
        let entries = list_entries(list);
        if entries.is_empty() {
            errs.push(SpecError {
                code: Code::QF015,
                span: list.full_span,
                message: "backoff is empty".into(),
                label: "no delays listed".into(),
                help: "list the delays before attempt 2, 3, … (e.g. backoff=\"PT1M PT5M PT25M\"), or remove the attribute for immediate retries".into(),
                related: Vec::new(),
            });
            return None;
        }
        let mut delays = Vec::new();
        let before = errs.len();
        for (i, (w, span)) in entries.iter().enumerate() {
            match duration::parse(w) {
                Ok(d) => delays.push(d),
                Err(e) => errs.push(invalid_duration(
                    *span,
                    &format!("backoff entry {}", i + 1),
                    w,
                    &e,
                )),
            }
        }
        return (errs.len() == before).then_some(Backoff::List(delays));
    }
    if curve_attrs.is_empty() {
        return Some(Backoff::List(Vec::new()));
    }
    let Some(initial_attr) = &spec.initial else {
        let f = spec
            .factor
            .as_ref()
            .expect("curve attrs are initial or factor");
        errs.push(SpecError {
            code: Code::QF015,
            span: f.full_span,
            message: "factor without initial: the curve has no first delay".into(),
            label: "needs initial".into(),
            help: "add initial=\"PT1M\" (the delay before attempt 2), or use the list form backoff=\"…\"".into(),
            related: Vec::new(),
        });
        return None;
    };
    let initial = positive_duration(initial_attr, "initial", errs);
    let factor = match &spec.factor {
        None => Some(DEFAULT_FACTOR),
        Some(f) => {
            match f.value.trim().parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 1.0 => Some(x),
                Ok(x) if x.is_finite() => {
                    errs.push(SpecError {
                    code: Code::QF015,
                    span: f.span,
                    message: format!("factor {x} is below 1: each delay would be shorter than the one before"),
                    label: "factor below 1".into(),
                    help: "use a factor of at least 1 (1 keeps the delay constant; 2 doubles it)".into(),
                    related: Vec::new(),
                });
                    None
                }
                _ => {
                    errs.push(SpecError {
                    code: Code::QF015,
                    span: f.span,
                    message: format!("factor `{}` is not a number", f.value.trim()),
                    label: "not a number".into(),
                    help: "write the growth factor as a number of at least 1, e.g. factor=\"2\" or factor=\"1.5\"".into(),
                    related: Vec::new(),
                });
                    None
                }
            }
        }
    };
    Some(Backoff::Curve {
        initial: initial?,
        factor: factor?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(v: &str) -> Option<Attr> {
        Some(Attr {
            value: v.to_string(),
            span: Span::new(0, v.len()),
            full_span: Span::new(0, v.len()),
        })
    }

    fn dbg08_list() -> RetryPolicy {
        RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("6"),
            backoff: attr("PT1M PT5M PT25M PT125M PT625M"),
            jitter: attr("none"),
            ..RetrySpec::default()
        })
        .unwrap()
    }

    fn dbg08_curve() -> RetryPolicy {
        RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("6"),
            initial: attr("PT1M"),
            factor: attr("5"),
            ..RetrySpec::default()
        })
        .unwrap()
    }

    fn starts(p: &RetryPolicy) -> Vec<u64> {
        p.schedule()
            .iter()
            .map(|a| a.since_first.as_secs())
            .collect()
    }

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

    #[test]
    fn jitter_is_deterministic_and_bounded() {
        let mut p = dbg08_list();
        p.jitter = Jitter::Full;
        let a = p.delay_with_jitter(3, "inst-1", "charge");
        assert_eq!(a, p.delay_with_jitter(3, "inst-1", "charge"));
        assert!(a <= Duration::from_secs(300));
        // Different instances spread out.
        let spread: std::collections::BTreeSet<Duration> = (0..50)
            .map(|i| p.delay_with_jitter(3, &format!("inst-{i}"), "charge"))
            .collect();
        assert!(spread.len() > 40);
        p.jitter = Jitter::Equal;
        for i in 0..50 {
            let d = p.delay_with_jitter(3, &format!("inst-{i}"), "charge");
            assert!(d >= Duration::from_secs(150) && d <= Duration::from_secs(300));
        }
        assert_eq!(
            p.jitter_bounds(3),
            (Duration::from_secs(150), Duration::from_secs(300))
        );
        let s = p.schedule();
        assert_eq!(s[2].since_first_min, Duration::from_secs(30 + 150));
        assert_eq!(s[2].since_first_max, Duration::from_secs(360));
        // A pinned value: the hash is part of the contract (reruns wait the same).
        assert_eq!(
            jitter_unit("inst-1", "charge", 2),
            jitter_unit("inst-1", "charge", 2)
        );
        assert_ne!(
            jitter_unit("inst-1", "charge", 2),
            jitter_unit("inst-1", "charge", 3)
        );
        assert_eq!(jitter_unit("a", "b", 1), 0x08d3_7b2e_c652_ccc1);
    }

    fn errors(spec: RetrySpec) -> Vec<(Code, String)> {
        RetryPolicy::from_spec(&spec)
            .unwrap_err()
            .into_iter()
            .map(|e| (e.code, e.message))
            .collect()
    }

    #[test]
    fn spec_errors_carry_their_codes() {
        let e = errors(RetrySpec {
            max_attempts: attr("0"),
            backoff: attr("PT1M 5M"),
            max_elapsed: attr("PT0S"),
            jitter: attr("ful"),
            ..RetrySpec::default()
        });
        let codes: Vec<Code> = e.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            codes,
            vec![Code::QF013, Code::QF008, Code::QF008, Code::QF015]
        );
        assert!(e[2].1.contains("backoff entry 2"), "{e:?}");
        let mixed = errors(RetrySpec {
            backoff: attr("PT1M"),
            factor: attr("2"),
            ..RetrySpec::default()
        });
        assert_eq!(mixed[0].0, Code::QF015);
        assert!(mixed[0].1.contains("mixes"));
        let low = errors(RetrySpec {
            initial: attr("PT1M"),
            factor: attr("0.5"),
            ..RetrySpec::default()
        });
        assert!(low[0].1.contains("below 1"));
        let lone = errors(RetrySpec {
            factor: attr("2"),
            ..RetrySpec::default()
        });
        assert!(lone[0].1.contains("without initial"));
        assert_eq!(
            errors(RetrySpec {
                max_attempts: attr("2.5"),
                ..RetrySpec::default()
            })[0]
                .0,
            Code::QF013
        );
    }

    #[test]
    fn list_entry_spans_point_at_each_entry() {
        let src = r#"backoff="PT1M  PT5M""#;
        let a = Attr {
            value: "PT1M  PT5M".into(),
            span: Span::new(9, 19),
            full_span: Span::new(0, 20),
        };
        let e = list_entries(&a);
        assert_eq!(&src[e[1].1.start..e[1].1.end], "PT5M");
    }
}
