//! Retry and delivery policies: what a `<q:retry>` and a `<q:channelConfig>`
//! mean, as numbers.
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
//!   provider-given retry-after. Without `maxDelay` a retry-after is still
//!   capped, at [`DEFAULT_RETRY_AFTER_MAX`] (24 h).
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
//! A node's worst case ([`RetryPolicy::worst_case`]) counts each attempt's
//! window ([`attempt_window`]): a registered task's attempt fails when its
//! handler says so (no window), a channel call's when its `<q:timeout>`
//! fires or, earlier, when the outbox poisons its request, and the next
//! delay runs from that failure. The hover, the rules'
//! hints, the console, `qflow project` and the runtime's expiry all agree
//! because they take the same step.
//!
//! One module per seam:
//!
//! - [`spec`]: the text of a `<q:retry>` into a [`RetryPolicy`], or the
//!   [`SpecError`]s the rules report.
//! - [`schedule`]: delays, the timetable, the worst case, the load projection
//!   and the decision after a failed attempt (budget, expiry).
//! - [`jitter`]: the deterministic per-(instance, node, attempt) draw.
//! - [`projection`]: what a policy schedules for N instances failing
//!   together through an outage (`qflow project`).
//! - [`channel`]: the outbox's delivery curve of a channel (`<q:channelConfig>`).
//! - [`bound`]: the cross-layer bound, the worst-case remote requests one
//!   business operation costs through a call (attempts × deliveries ×
//!   the counterpart's own attempts), which QF045 holds to a ceiling.

use std::time::Duration;

pub mod bound;
pub mod channel;
pub mod jitter;
pub mod projection;
pub mod schedule;
pub mod spec;

pub use channel::{
    delivery_load, ChannelPolicy, DeliveryLoad, CHANNEL_FAILURE_CODES, DEFAULT_DELIVERY_INTERVAL,
};
pub use jitter::{jitter_unit, Jitter};
pub use schedule::{
    CapSource, Next, NextAttempt, PlannedAttempt, RetryAfterBound, RetryAfterCap, StopReason,
    UpcomingAttempt, WorstCase, DEFAULT_RETRY_AFTER_MAX, SCHEDULE_LIMIT,
};
pub use spec::{list_entries, SpecError};

/// How long one attempt of `node` lasts at the earliest before it counts as
/// failed: zero for a registered task, whose handler ends its own attempt;
/// for a channel call, the earlier of its `<q:timeout>` window (its first
/// one; the rules refuse a second) and the moment the outbox can poison its
/// request (the channel's last delivery, `(maxDeliveries − 1) ×
/// deliveryInterval` after the first: [`ChannelPolicy::last_delivery`]).
/// When a dependency is down its deliveries fail, so the earlier of the two
/// is when the attempt really fails; a schedule computed from the timeout
/// alone would promise fewer attempts, later, than the runtime makes. A
/// call timed out only by a timer boundary, with no ceiling on deliveries,
/// has no window: the boundary ends the task rather than failing an attempt.
/// A way of failing that `policy` does not retry (`q.delivery.poisoned` or
/// `q.timeout` in its `nonRetryableCodes`) ends the task instead, so the
/// retried attempts are the other way's.
pub fn attempt_window(
    defs: &crate::model::Definitions,
    node: &crate::model::Node,
    policy: &RetryPolicy,
) -> Duration {
    let Some(channel) = node.channel_call() else {
        return Duration::ZERO;
    };
    let timeout = node
        .timeouts
        .first()
        .and_then(|t| t.duration.as_ref())
        .and_then(|d| crate::duration::parse(d.value.trim()).ok());
    // The editor hovers models the loader refuses too: a configuration that
    // does not load counts as the default curve (no ceiling).
    let channel_policy = ChannelPolicy::of_channel(defs, &channel.value).unwrap_or_default();
    earliest_failure(timeout, &channel_policy, policy)
}

/// The node's worst case as every face shows it: the schedule from the
/// earliest way an attempt fails ([`attempt_window`]); its "at most" bound
/// covering a call's attempts that last until their timeout instead, and a
/// registered task's waits stretched by a provider's retry-after.
pub fn node_worst_case(
    defs: &crate::model::Definitions,
    node: &crate::model::Node,
    policy: &RetryPolicy,
) -> WorstCase {
    let wc = policy.worst_case(attempt_window(defs, node, policy));
    if node.channel_call().is_none() {
        return wc.with_retry_after(policy);
    }
    let timeout = node
        .timeouts
        .first()
        .and_then(|t| t.duration.as_ref())
        .and_then(|d| crate::duration::parse(d.value.trim()).ok());
    match timeout {
        Some(t) => wc.with_latest_window(policy, t),
        None => wc,
    }
}

/// The earliest a channel call's attempt can fail and be retried: its
/// timeout, or its request's poisoning when that comes first (see
/// [`attempt_window`]); one rule for a model's node and a deployed graph's
/// call.
pub fn earliest_failure(
    timeout: Option<Duration>,
    channel: &ChannelPolicy,
    policy: &RetryPolicy,
) -> Duration {
    use qflow_instance::codes::{POISONED, TIMEOUT};
    let ways = [
        (timeout, policy.is_non_retryable(TIMEOUT)),
        (channel.last_delivery(), policy.is_non_retryable(POISONED)),
    ];
    let earliest = |retried_only: bool| {
        ways.iter()
            .filter(|(_, terminal)| !(retried_only && *terminal))
            .filter_map(|(d, _)| *d)
            .min()
    };
    earliest(true)
        .or_else(|| earliest(false))
        .unwrap_or(Duration::ZERO)
}

/// The factor of the curve form when `factor` is not written.
pub const DEFAULT_FACTOR: f64 = 2.0;
/// How the delay between attempts grows.
#[derive(Debug, Clone, PartialEq)]
pub enum Backoff {
    /// Delays before attempt 2, 3, …; the last repeats. Empty: no `backoff`
    /// attribute, every retry is immediate.
    List(Vec<Duration>),
    /// `initial × factor^(n−2)` before attempt `n`.
    Curve { initial: Duration, factor: f64 },
}

/// A validated `<q:retry>`.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Every attempt including the first; `None`: not limited by count.
    pub max_attempts: Option<u32>,
    pub backoff: Backoff,
    /// Caps every delay (and a provider's retry-after, which
    /// [`DEFAULT_RETRY_AFTER_MAX`] caps when this is `None`).
    pub max_delay: Option<Duration>,
    /// Retry expiry, measured from the start of the first attempt.
    pub max_elapsed: Option<Duration>,
    pub jitter: Jitter,
    /// Failure codes that end the task at once.
    pub non_retryable_codes: Vec<String>,
}

#[cfg(test)]
pub(crate) mod testing {
    //! Policies the tests of every seam share.
    use super::RetryPolicy;
    use crate::model::{Attr, RetrySpec};
    use crate::span::Span;

    pub(crate) fn attr(v: &str) -> Option<Attr> {
        Some(Attr {
            value: v.into(),
            span: Span::new(0, v.len()),
            full_span: Span::new(0, v.len()),
        })
    }

    pub(crate) fn dbg08_list() -> RetryPolicy {
        RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("6"),
            backoff: attr("PT1M PT5M PT25M PT125M PT625M"),
            jitter: attr("none"),
            ..RetrySpec::default()
        })
        .unwrap()
    }

    pub(crate) fn dbg08_curve() -> RetryPolicy {
        RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("6"),
            initial: attr("PT1M"),
            factor: attr("5"),
            ..RetrySpec::default()
        })
        .unwrap()
    }

    pub(crate) fn starts(p: &RetryPolicy) -> Vec<u64> {
        p.worst_case(std::time::Duration::ZERO)
            .attempts
            .iter()
            .map(|a| a.since_first.as_secs())
            .collect()
    }
}
