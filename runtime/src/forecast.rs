//! What the parked retries of a fleet will do if their dependency stays
//! down, decided before it happens: when each parked instance reaches
//! FAILED (the **exhaustion forecast**: how many in each coming hour), the
//! attempts per minute per dependency it makes until then, and the same
//! under an edited policy (the **what-if**: `qflow simulate --from DB
//! --model EDITED.bpmn`).
//!
//! Pure: from the parks a store holds (their attempt counters, first
//! attempts, due times and the failure that armed each, read by
//! [`qflow_store::stats::RetryPark`]), a policy per node and the clock,
//! with no store, no model file and no clock read. Every step is the
//! runtime's own decision after a failure
//! ([`RetryPolicy::next_after_failure`], the instance's jitter draw, delays
//! armed in whole milliseconds), so the forecast is the schedule the
//! engine keeps if every attempt from here on fails with the same failure.
//! A later failure's wait is the policy's own (a provider's retry-after is
//! taken only where one was recorded: the failure that armed the park).
//!
//! The per-minute counting is the ramp planner's ([`crate::ramp::Load`],
//! minute 0 at "now"), so a what-if's curve and a release preview's are the
//! same kind of curve.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::graph::{Graph, Kind};
use crate::ramp::{Load, MINUTE_MS};
use qflow_instance::history::{Attempt, HistoryEvent, Line};
use qflow_instance::snapshot::Snapshot;
use qflow_instance::FailureClass;
use qflow_model::policy::{ChannelPolicy, Next, RetryPolicy, StopReason};
use qflow_store::stats::RetryPark;

/// One hour, in ms.
pub const HOUR_MS: i64 = 3_600_000;

/// The hours a forecast counts (from now): a day. Instances that reach
/// FAILED later are counted together (`later`); the attempts-per-minute
/// curves span the same day.
pub const HOURS: u32 = 24;

/// At most this many further attempts are stepped per park: a policy that
/// has not exhausted by then is counted `later` (its end is past any
/// horizon an operator acts on).
pub const WALK_LIMIT: u32 = 10_000;

/// How far past now an exhaustion is still looked for (a year): beyond it,
/// `later`.
pub const LOOK_AHEAD_MS: i64 = 366 * 24 * HOUR_MS;

/// What a node's retry decisions need: its policy (`None`: a budget of one
/// attempt, the runtime's rule for a task without `<q:retry>`) and how long
/// one of its attempts lasts before it counts as failed (zero for a
/// registered task; a channel call's timeout, or its request's poisoning
/// when that comes first: the model's `earliest_failure`, as the
/// inspector's schedule plan counts it).
#[derive(Debug, Clone, Copy)]
pub struct NodePolicy<'a> {
    pub node: &'a str,
    pub policy: Option<&'a RetryPolicy>,
    pub attempt_takes: Duration,
}

impl<'a> NodePolicy<'a> {
    /// The policy of `node` in `graph`; `None` when the graph has no such
    /// node, or it is not a task (nothing there retries).
    pub fn of(graph: &'a Graph, node: &str) -> Option<NodePolicy<'a>> {
        let n = graph.node(node)?;
        let Kind::Task { policy, call, .. } = &n.kind else {
            return None;
        };
        let attempt_takes = match (call, policy) {
            (Some(c), Some(p)) => qflow_model::policy::earliest_failure(
                c.timeout,
                &ChannelPolicy {
                    max_deliveries: c.max_deliveries,
                    delivery_interval: c.delivery_interval,
                    ..Default::default()
                },
                p,
            ),
            (Some(c), None) => c.timeout.unwrap_or_default(),
            (None, _) => Duration::ZERO,
        };
        Some(NodePolicy {
            node: n.id.as_str(),
            policy: policy.as_ref(),
            attempt_takes,
        })
    }
}

/// The failure that armed a park, from its history line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// When it was decided (the store's clock, absolute ms).
    pub at_ms: i64,
    pub code: String,
    /// A rate-limited task failure's wait as recorded (the provider's
    /// retry-after, capped by the policy it was decided under).
    pub retry_after: Option<Duration>,
}

/// One parked instance: what a forecast and a what-if decide from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    pub timer: i64,
    pub instance: String,
    pub deployment_id: i64,
    pub node: String,
    /// The dependency its park recorded ([`crate::ramp::NO_DEPENDENCY`]
    /// when none).
    pub dependency: String,
    /// Held by a pause or a quarantine: no attempt until released.
    pub held: bool,
    /// Attempts counted against its budget (the node's counter).
    pub made: u32,
    /// When its node's first attempt started: the origin of `maxElapsed`.
    pub first_ms: i64,
    /// Its next eligible time (the park's due time).
    pub due_ms: i64,
    /// The failure that armed the park (`None` when a migration re-armed
    /// it: the failure is not that transition's).
    pub failure: Option<Failure>,
}

impl Parked {
    /// The facts of a park as the store reads them. A snapshot that does
    /// not decode counts no attempt (the decision would fail it on its
    /// next step; the forecast still shows its park).
    pub fn of(row: &RetryPark) -> Parked {
        let snap = Snapshot::decode(&row.snapshot).unwrap_or_default();
        let failure = row
            .failure_line
            .as_deref()
            .and_then(Line::parse)
            .zip(row.failed_ms)
            .and_then(|(line, at_ms)| match line.event {
                HistoryEvent::Attempt(Attempt::Task(t)) => Some(Failure {
                    at_ms,
                    code: t.code.unwrap_or_default(),
                    retry_after: t
                        .park
                        .filter(|_| t.class == Some(FailureClass::RateLimited))
                        .map(|p| Duration::from_millis(p.delay_s.ms().max(0) as u64)),
                }),
                HistoryEvent::CallFailed { code, .. } => Some(Failure {
                    at_ms,
                    code,
                    retry_after: None,
                }),
                _ => None,
            });
        Parked {
            timer: row.timer,
            instance: row.instance.clone(),
            deployment_id: row.deployment_id,
            node: row.node.clone(),
            dependency: crate::ramp::dependency_name(&row.dependency).to_string(),
            held: row.held,
            made: snap.attempts(&row.node),
            first_ms: snap.first_attempt_ms(&row.node).unwrap_or(row.started_ms),
            due_ms: row.due_ms,
            failure,
        }
    }
}

/// When a parked instance reaches FAILED if every attempt from here on
/// fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "when", rename_all = "kebab-case")]
pub enum Exhaustion {
    /// At `at_ms` (the store's clock), after `attempts` more attempts.
    At {
        at_ms: i64,
        reason: &'static str,
        attempts: u32,
    },
    /// Not within [`WALK_LIMIT`] attempts or [`LOOK_AHEAD_MS`]: later than
    /// anything a forecast counts.
    Beyond,
    /// Never: the policy does not stop (no `maxAttempts`, no `maxElapsed`).
    Never,
}

impl Exhaustion {
    /// Ordering key: sooner first, `Beyond` after every instant, `Never`
    /// last.
    fn key(&self) -> (u8, i64) {
        match self {
            Exhaustion::At { at_ms, .. } => (0, *at_ms),
            Exhaustion::Beyond => (1, 0),
            Exhaustion::Never => (2, 0),
        }
    }

    /// The instant, if it has one.
    pub fn at_ms(&self) -> Option<i64> {
        match self {
            Exhaustion::At { at_ms, .. } => Some(*at_ms),
            _ => None,
        }
    }
}

/// Whether an edit makes an instance reach FAILED sooner or later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    Earlier,
    Later,
    Same,
}

impl Change {
    pub fn of(now: &Exhaustion, edit: &Exhaustion) -> Change {
        match edit.key().cmp(&now.key()) {
            std::cmp::Ordering::Less => Change::Earlier,
            std::cmp::Ordering::Greater => Change::Later,
            std::cmp::Ordering::Equal => Change::Same,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Change::Earlier => "earlier",
            Change::Later => "later",
            Change::Same => "same",
        }
    }
}

fn whole_ms(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// Step one parked instance's attempts from `next_ms` (never before
/// `now_ms`: a park due already runs now), every attempt failing as the
/// one that armed the park did (its code), each decided by the policy as
/// the runtime decides it; `on_attempt` sees each attempt's start. The
/// park's attempts made count already.
pub fn walk(
    p: &NodePolicy<'_>,
    park: &Parked,
    next_ms: i64,
    now_ms: i64,
    mut on_attempt: impl FnMut(i64),
) -> Exhaustion {
    let code = park.failure.as_ref().map_or("", |f| f.code.as_str());
    let (instance, made, first_ms) = (park.instance.as_str(), park.made, park.first_ms);
    let takes = whole_ms(p.attempt_takes);
    let mut t = next_ms.max(now_ms);
    let Some(policy) = p.policy else {
        // A budget of one attempt: this one is the last.
        on_attempt(t);
        return Exhaustion::At {
            at_ms: t + takes,
            reason: StopReason::Exhausted.as_str(),
            attempts: 1,
        };
    };
    let unbounded = policy.max_attempts.is_none()
        && policy.max_elapsed.is_none()
        && !policy.is_non_retryable(code);
    let mut attempt = made.saturating_add(1);
    let mut attempts = 0u32;
    loop {
        if attempts >= WALK_LIMIT || t - now_ms > LOOK_AHEAD_MS {
            return if unbounded {
                Exhaustion::Never
            } else {
                Exhaustion::Beyond
            };
        }
        on_attempt(t);
        attempts += 1;
        let fails = t.saturating_add(takes);
        let elapsed = Duration::from_millis((fails - first_ms).max(0) as u64);
        match policy.next_after_failure(attempt, code, None, elapsed, instance, p.node) {
            Next::Stop(reason) => {
                return Exhaustion::At {
                    at_ms: fails,
                    reason: reason.as_str(),
                    attempts,
                }
            }
            Next::Retry { attempt: a, delay } => {
                attempt = a;
                t = fails.saturating_add(whole_ms(delay));
            }
        }
        if unbounded && t - now_ms > HOURS as i64 * HOUR_MS {
            // Past the curve's day nothing more is counted, and it never
            // stops.
            return Exhaustion::Never;
        }
    }
}

/// The park's failure decided again under `p`: the next eligible time
/// (absolute ms) or why there is none. The same attempt count, first
/// attempt and failure (its code, its time, a recorded retry-after), as if
/// `p` had been the policy when it was decided.
pub fn redecide(p: &NodePolicy<'_>, park: &Parked, failure: &Failure) -> Result<i64, StopReason> {
    let Some(policy) = p.policy else {
        return Err(StopReason::Exhausted);
    };
    let elapsed = Duration::from_millis((failure.at_ms - park.first_ms).max(0) as u64);
    match policy.next_after_failure(
        park.made.max(1),
        &failure.code,
        failure.retry_after,
        elapsed,
        &park.instance,
        p.node,
    ) {
        Next::Retry { delay, .. } => Ok(failure.at_ms.saturating_add(whole_ms(delay))),
        Next::Stop(reason) => Err(reason),
    }
}

/// Instances reaching FAILED in one coming hour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HourCount {
    /// 0: the hour from now.
    pub hour: u32,
    pub hour_start_ms: i64,
    pub failed: u64,
}

/// One dependency's exhaustion forecast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DependencyForecast {
    pub dependency: String,
    /// Its parked instances (held ones included).
    pub parked: u64,
    /// Held by a pause or a quarantine: they make no attempt, so reach
    /// FAILED only after they are released; not in `hours`.
    pub held: u64,
    /// Hours in which some reach FAILED, in order (an hour not listed: none).
    pub hours: Vec<HourCount>,
    /// Reaching FAILED after the forecast's hours.
    pub later: u64,
    /// Never reaching FAILED: their policy does not stop.
    pub never: u64,
}

impl DependencyForecast {
    /// Those reaching FAILED within the forecast's hours.
    pub fn failed(&self) -> u64 {
        self.hours.iter().map(|h| h.failed).sum()
    }
}

/// How many parked instances reach FAILED in each coming hour if every
/// attempt keeps failing, per dependency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Forecast {
    /// Hour 0 starts here (the store's clock).
    pub now_ms: i64,
    pub hours: u32,
    pub dependencies: Vec<DependencyForecast>,
}

/// Counts a forecast as parks are walked.
#[derive(Default)]
struct Tally {
    by: BTreeMap<String, Counts>,
}

/// One dependency's counts: parked, held, failed by hour, later, never.
#[derive(Default)]
struct Counts(u64, u64, BTreeMap<u32, u64>, u64, u64);

impl Tally {
    fn add(&mut self, dependency: &str, held: bool, e: &Exhaustion, now_ms: i64) {
        let Counts(parked, h, hours, later, never) =
            self.by.entry(dependency.to_string()).or_default();
        *parked += 1;
        if held {
            *h += 1;
            return;
        }
        match e {
            Exhaustion::At { at_ms, .. } => {
                let hour = ((at_ms - now_ms).max(0) / HOUR_MS) as u64;
                if hour < u64::from(HOURS) {
                    *hours.entry(hour as u32).or_default() += 1;
                } else {
                    *later += 1;
                }
            }
            Exhaustion::Beyond => *later += 1,
            Exhaustion::Never => *never += 1,
        }
    }

    fn finish(self, now_ms: i64) -> Forecast {
        Forecast {
            now_ms,
            hours: HOURS,
            dependencies: self
                .by
                .into_iter()
                .map(
                    |(dependency, Counts(parked, held, hours, later, never))| DependencyForecast {
                        dependency,
                        parked,
                        held,
                        hours: hours
                            .into_iter()
                            .map(|(hour, failed)| HourCount {
                                hour,
                                hour_start_ms: now_ms + i64::from(hour) * HOUR_MS,
                                failed,
                            })
                            .collect(),
                        later,
                        never,
                    },
                )
                .collect(),
        }
    }
}

/// Count an attempt at `at_ms` in `load` when it falls within the
/// forecast's day from `now_ms`.
fn count(load: &mut Load, dependency: &str, now_ms: i64, at_ms: i64) {
    let m = (at_ms - now_ms).max(0) / MINUTE_MS;
    if m < i64::from(HOURS) * 60 {
        load.add(dependency, m as usize);
    }
}

/// The exhaustion forecast of `parks` at `now_ms`, each under the policy
/// `policy_of` gives its node (a park whose node has none is left out), and
/// the attempts per minute per dependency they make until then (minute 0
/// at `now_ms`, over the forecast's day; held parks make none).
pub fn forecast<'a>(
    parks: &[Parked],
    policy_of: impl Fn(&Parked) -> Option<NodePolicy<'a>>,
    now_ms: i64,
) -> (Forecast, Load) {
    let mut tally = Tally::default();
    let mut load = Load::default();
    for p in parks {
        let Some(np) = policy_of(p) else { continue };
        let e = walk(&np, p, p.due_ms, now_ms, |t| {
            if !p.held {
                count(&mut load, &p.dependency, now_ms, t)
            }
        });
        tally.add(&p.dependency, p.held, &e, now_ms);
    }
    (tally.finish(now_ms), load)
}

/// One parked instance, now and under an edited policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstanceWhatIf {
    pub instance: String,
    pub deployment: i64,
    pub node: String,
    /// The node of the edited model it maps to.
    pub edit_node: String,
    pub dependency: String,
    pub held: bool,
    /// Attempts counted against its budget so far.
    pub attempts: u32,
    /// Its next eligible time now, and under the edit (`None`: the edit
    /// gives it no further attempt: it fails at its next decision).
    pub next_ms: i64,
    pub edit_next_ms: Option<i64>,
    /// Why the edit gives it no further attempt.
    pub edit_stop: Option<&'static str>,
    /// Its park was armed by a migration, not by a failure: the edit keeps
    /// its instant (as a migration does) and applies from its next failure.
    pub kept: bool,
    pub exhausts: Exhaustion,
    pub edit_exhausts: Exhaustion,
    pub change: Change,
}

/// A fleet's parked instances re-decided under an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhatIf {
    pub now_ms: i64,
    pub instances: Vec<InstanceWhatIf>,
    pub load_now: Load,
    pub load_edit: Load,
    pub forecast_now: Forecast,
    pub forecast_edit: Forecast,
}

/// Re-decide every park of `parks` under the edited policy `edit_of` gives
/// it (the node of the edited model it maps to, with its policy) beside
/// the policy it parked under (`now_of`): per instance, its next eligible
/// time and when it exhausts, both ways; for the fleet, the attempts per
/// minute per dependency and the exhaustion forecast, both ways. A park
/// either closure has no policy for is left out.
pub fn what_if<'a, 'b>(
    parks: &[Parked],
    now_of: impl Fn(&Parked) -> Option<NodePolicy<'a>>,
    edit_of: impl Fn(&Parked) -> Option<NodePolicy<'b>>,
    now_ms: i64,
) -> WhatIf {
    let (mut tally_now, mut tally_edit) = (Tally::default(), Tally::default());
    let (mut load_now, mut load_edit) = (Load::default(), Load::default());
    let mut instances = Vec::with_capacity(parks.len());
    for p in parks {
        let (Some(old), Some(new)) = (now_of(p), edit_of(p)) else {
            continue;
        };
        let held = p.held;
        let exhausts = walk(&old, p, p.due_ms, now_ms, |t| {
            if !held {
                count(&mut load_now, &p.dependency, now_ms, t)
            }
        });
        let redecided = match &p.failure {
            Some(f) => redecide(&new, p, f),
            None => Ok(p.due_ms),
        };
        let (edit_next_ms, edit_stop, edit_exhausts) = match redecided {
            Ok(next) => (
                Some(next),
                None,
                walk(&new, p, next, now_ms, |t| {
                    if !held {
                        count(&mut load_edit, &p.dependency, now_ms, t)
                    }
                }),
            ),
            Err(reason) => (
                None,
                Some(reason.as_str()),
                Exhaustion::At {
                    at_ms: now_ms,
                    reason: reason.as_str(),
                    attempts: 0,
                },
            ),
        };
        tally_now.add(&p.dependency, held, &exhausts, now_ms);
        tally_edit.add(&p.dependency, held, &edit_exhausts, now_ms);
        instances.push(InstanceWhatIf {
            instance: p.instance.clone(),
            deployment: p.deployment_id,
            node: p.node.clone(),
            edit_node: new.node.to_string(),
            dependency: p.dependency.clone(),
            held,
            attempts: p.made,
            next_ms: p.due_ms,
            edit_next_ms,
            edit_stop,
            kept: p.failure.is_none(),
            change: Change::of(&exhausts, &edit_exhausts),
            exhausts,
            edit_exhausts,
        });
    }
    WhatIf {
        now_ms,
        instances,
        load_now,
        load_edit,
        forecast_now: tally_now.finish(now_ms),
        forecast_edit: tally_edit.finish(now_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qflow_model::model::{Attr, RetrySpec};
    use qflow_model::span::Span;

    fn attr(v: &str) -> Option<Attr> {
        Some(Attr {
            value: v.into(),
            span: Span::new(0, v.len()),
            full_span: Span::new(0, v.len()),
        })
    }

    fn policy(max: &str, backoff: &str) -> RetryPolicy {
        RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr(max),
            backoff: attr(backoff),
            jitter: attr("none"),
            ..RetrySpec::default()
        })
        .unwrap()
    }

    fn np(p: &RetryPolicy) -> NodePolicy<'_> {
        NodePolicy {
            node: "charge",
            policy: Some(p),
            attempt_takes: Duration::ZERO,
        }
    }

    /// DBG-08's first failure at 0, parked until 60 s.
    fn parked(id: &str, made: u32, failed_s: i64, due_s: i64) -> Parked {
        Parked {
            timer: 1,
            instance: id.into(),
            deployment_id: 1,
            node: "charge".into(),
            dependency: "payments.charge".into(),
            held: false,
            made,
            first_ms: 0,
            due_ms: due_s * 1000,
            failure: Some(Failure {
                at_ms: failed_s * 1000,
                code: "DOWN".into(),
                retry_after: None,
            }),
        }
    }

    #[test]
    fn dbg08_parks_exhaust_at_13_h_1_min_after_the_first_attempt() {
        let dbg08 = policy("6", "PT1M PT5M PT25M PT125M PT625M");
        let parks = [parked("a", 1, 0, 60), parked("b", 2, 60, 360)];
        let (f, load) = forecast(&parks, |_| Some(np(&dbg08)), 60_000);
        let d = &f.dependencies[0];
        assert_eq!((d.parked, d.later, d.never, d.held), (2, 0, 0, 0));
        // 46,860 s after the first attempt: 13 h after now (60 s).
        assert_eq!(
            d.hours,
            [HourCount {
                hour: 13,
                hour_start_ms: 60_000 + 13 * HOUR_MS,
                failed: 2
            }]
        );
        // a's attempts 2..6, b's 3..6: minute 0 holds a's second.
        assert_eq!(load.at("payments.charge", 0), 1);
        assert_eq!(load.at("payments.charge", 5), 2);
        assert_eq!(load.per_minute["payments.charge"].iter().sum::<u64>(), 9);
    }

    #[test]
    fn an_edit_re_decides_the_last_failure_and_exhausts_earlier_or_later() {
        let dbg08 = policy("6", "PT1M PT5M PT25M PT125M PT625M");
        let edit = policy("6", "PT3H");
        let parks = [parked("a", 1, 0, 60), parked("b", 2, 60, 360)];
        let w = what_if(&parks, |_| Some(np(&dbg08)), |_| Some(np(&edit)), 60_000);
        let a = &w.instances[0];
        assert_eq!(a.edit_next_ms, Some(3 * HOUR_MS));
        assert_eq!(a.exhausts.at_ms(), Some(46_860_000));
        assert_eq!(a.edit_exhausts.at_ms(), Some(15 * HOUR_MS));
        assert_eq!(a.change, Change::Later);
        let b = &w.instances[1];
        assert_eq!(b.edit_next_ms, Some(60_000 + 3 * HOUR_MS));
        assert_eq!(b.edit_exhausts.at_ms(), Some(60_000 + 12 * HOUR_MS));
        assert_eq!(b.change, Change::Earlier);
        // Fewer attempts a minute: one every three hours each.
        assert_eq!(w.load_edit.peak("payments.charge"), 1);
        assert_eq!(w.load_now.peak("payments.charge"), 2);
        let hours: Vec<(u32, u64)> = w.forecast_edit.dependencies[0]
            .hours
            .iter()
            .map(|h| (h.hour, h.failed))
            .collect();
        assert_eq!(hours, [(12, 1), (14, 1)]);
        // A budget the edit has spent already: no further attempt.
        let two = policy("2", "PT1M");
        let w = what_if(&parks, |_| Some(np(&dbg08)), |_| Some(np(&two)), 60_000);
        assert_eq!(w.instances[1].edit_next_ms, None);
        assert_eq!(w.instances[1].edit_stop, Some("exhausted"));
        assert_eq!(w.instances[1].edit_exhausts.at_ms(), Some(60_000));
        assert_eq!(w.instances[0].edit_next_ms, Some(60_000));
    }

    #[test]
    fn held_parks_and_endless_policies_are_counted_apart() {
        let endless = RetryPolicy::from_spec(&RetrySpec {
            backoff: attr("PT1M"),
            ..RetrySpec::default()
        })
        .unwrap();
        let mut held = parked("h", 1, 0, 60);
        held.held = true;
        let parks = [parked("a", 1, 0, 60), held];
        let (f, load) = forecast(&parks, |_| Some(np(&endless)), 60_000);
        let d = &f.dependencies[0];
        assert_eq!((d.parked, d.held, d.never, d.failed()), (2, 1, 1, 0));
        // One attempt a minute over the day, the held park's none.
        assert_eq!(load.peak("payments.charge"), 1);
        assert_eq!(load.minutes(), 24 * 60);
    }

    /// A rate-limited failure's recorded wait is the provider's: re-decided,
    /// it is capped by the edited policy's cap, not replaced by its backoff.
    #[test]
    fn a_rate_limited_park_keeps_its_providers_wait_under_the_edits_cap() {
        use qflow_instance::history::{AttemptOutcome, Park, TaskAttempt, Then};
        use qflow_instance::Secs;
        let line = Line {
            at_s: Secs(0),
            node: Some("charge".into()),
            event: HistoryEvent::Attempt(Attempt::Task(TaskAttempt {
                attempt: 1,
                task: "payments.charge".into(),
                outcome: AttemptOutcome::Failed,
                code: Some("q.handler.http-429".into()),
                class: Some(FailureClass::RateLimited),
                then: Some(Then::Backoff),
                park: Some(Park {
                    next_attempt: 2,
                    next_at_s: Secs(600_000),
                    delay_s: Secs(600_000),
                }),
                to: None,
                message: None,
            })),
        };
        let mut snap = Snapshot::default();
        snap.set_attempts("charge", 1);
        snap.set_first_attempt_ms("charge", 0);
        let row = RetryPark {
            timer: 7,
            instance: "i-1".into(),
            deployment_id: 1,
            process_id: "dbg08".into(),
            node: "charge".into(),
            due_ms: 600_000,
            dependency: Some("payments.charge".into()),
            class: Some("rate-limited".into()),
            held: false,
            snapshot: snap.encode(),
            started_ms: 0,
            failed_ms: Some(0),
            failure_line: Some(serde_json::to_string(&line).unwrap()),
        };
        let park = Parked::of(&row);
        assert_eq!((park.made, park.first_ms), (1, 0));
        let f = park.failure.clone().unwrap();
        assert_eq!(f.retry_after, Some(Duration::from_secs(600)));
        let mut capped = policy("6", "PT1M");
        capped.max_delay = Some(Duration::from_secs(300));
        assert_eq!(redecide(&np(&capped), &park, &f), Ok(300_000));
        assert_eq!(redecide(&np(&policy("6", "PT1M")), &park, &f), Ok(600_000));
    }
}
