//! A policy's arithmetic for a fleet: what N instances that start together
//! and keep failing through an outage *schedule*, at the policy's own delays.
//!
//! Every number here is a scheduled opportunity, not an observed request: it
//! is what the policy would run if capacity ran every attempt on time. Each
//! instance's timetable comes from the one schedule step the runtime takes
//! after a failure ([`RetryPolicy::upcoming`], [`RetryPolicy::worst_case`]),
//! so a projection, a simulation and a real run agree.
//!
//! The jittered figures draw each instance's delays exactly as the runtime
//! will, from its instance id: the ids a fresh store gives N instances of a
//! process (`<process>-1` … `<process>-N`, what `qflow simulate` starts), so
//! a projection of N jobs is the timetable a simulation of N jobs keeps.

use std::collections::BTreeMap;
use std::time::Duration;

use super::schedule::{NextAttempt, WorstCase};
use super::{Backoff, Jitter, RetryPolicy};
use crate::model::Definitions;

/// Beyond this many instance timetables' attempts, the jittered figures are
/// not computed (they cost one schedule step per attempt).
pub const JITTER_WORK_LIMIT: u64 = 20_000_000;

/// Beyond this many attempts in one instance's window, the per-minute
/// figures are not computed (an unbounded loop of tiny delays over years).
pub const MINUTES_WORK_LIMIT: u64 = 2_000_000;

/// The busiest minute of a fleet's schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PeakMinute {
    /// Minutes after the fleet's start (0: the first minute).
    pub minute: u64,
    pub attempts: u64,
}

/// What the policy's jitter does to the fleet.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Jittered {
    /// The jitter these figures were drawn with: the policy's own, or
    /// `full` when the policy has none (what adding it would do).
    pub jitter: &'static str,
    /// Whether that is the policy's own jitter.
    pub policy_own: bool,
    /// Scheduled attempts in the window, all instances (jitter only shortens
    /// delays, so at least the nominal count).
    pub scheduled: u64,
    pub peak: Option<PeakMinute>,
}

/// The projection of one policy over `jobs` instances and a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    pub jobs: u64,
    /// The outage: every attempt that starts within it fails.
    pub window: Duration,
    /// How long one attempt lasts before it counts as failed.
    pub attempt_takes: Duration,
    /// One always-failing instance, over the policy's whole life.
    pub worst_case: WorstCase,
    /// Attempts one instance schedules within the window (`None`: unbounded,
    /// immediate retries forever).
    pub per_instance: Option<u64>,
    /// `per_instance × jobs`.
    pub scheduled: Option<u64>,
    /// The attempts scheduled after the window: one per instance whose policy
    /// still has an attempt when the outage ends (that attempt succeeds).
    pub after: u64,
    /// Instances the policy gives up on within the window.
    pub given_up: u64,
    /// The busiest minute of the window at nominal delays (every instance
    /// in step): `None` when not computed.
    pub peak: Option<PeakMinute>,
    /// The same with jitter (`None`: unbounded or beyond
    /// [`JITTER_WORK_LIMIT`]).
    pub jittered: Option<Jittered>,
}

impl RetryPolicy {
    /// Project this policy over `jobs` instances of `process_id`'s node
    /// `node_id`, all starting at once, every attempt within `window`
    /// failing, each attempt lasting `attempt_takes` before it fails.
    pub fn project(
        &self,
        process_id: &str,
        node_id: &str,
        jobs: u64,
        window: Duration,
        attempt_takes: Duration,
    ) -> Projection {
        let worst_case = self.worst_case(attempt_takes);
        let nominal = RetryPolicy {
            jitter: Jitter::None,
            ..self.clone()
        };
        let per_instance = nominal.scheduled_attempts(1, window, attempt_takes);
        let scheduled = per_instance.map(|n| n.saturating_mul(jobs));
        let whole_life = worst_case.count;
        let (after, given_up) = match (per_instance, whole_life) {
            (Some(w), Some(all)) if w >= all => (0, jobs),
            (Some(_), _) => (jobs, 0),
            (None, _) => (0, 0),
        };
        let peak = per_instance
            .filter(|n| *n <= MINUTES_WORK_LIMIT)
            .and_then(|n| {
                let mut minutes = BTreeMap::new();
                nominal.count_minutes("", node_id, n, window, attempt_takes, &mut minutes);
                busiest(&minutes).map(|p| PeakMinute {
                    minute: p.minute,
                    attempts: p.attempts.saturating_mul(jobs),
                })
            });
        let jittered = self.jittered(process_id, node_id, jobs, window, attempt_takes);
        Projection {
            jobs,
            window,
            attempt_takes,
            worst_case,
            per_instance,
            scheduled,
            after,
            given_up,
            peak,
            jittered,
        }
    }

    fn jittered(
        &self,
        process_id: &str,
        node_id: &str,
        jobs: u64,
        window: Duration,
        takes: Duration,
    ) -> Option<Jittered> {
        let (policy, policy_own) = match self.jitter {
            Jitter::None => (
                RetryPolicy {
                    jitter: Jitter::Full,
                    ..self.clone()
                },
                false,
            ),
            _ => (self.clone(), true),
        };
        // The most attempts one instance can fit: every delay at its shortest.
        let most = policy.walk(Some(window), true, takes).count?;
        if most.saturating_mul(jobs) > JITTER_WORK_LIMIT {
            return None;
        }
        let mut minutes = BTreeMap::new();
        let mut scheduled = 0;
        for n in 1..=jobs {
            let id = format!("{process_id}-{n}");
            scheduled += policy.count_minutes(&id, node_id, most, window, takes, &mut minutes);
        }
        Some(Jittered {
            jitter: policy.jitter.as_str(),
            policy_own,
            scheduled,
            peak: busiest(&minutes),
        })
    }

    /// Add one instance's attempt starts within `window` (at most `most`) to
    /// `minutes` (minute → attempts); returns how many it added.
    fn count_minutes(
        &self,
        instance_id: &str,
        node_id: &str,
        most: u64,
        window: Duration,
        takes: Duration,
        minutes: &mut BTreeMap<u64, u64>,
    ) -> u64 {
        let first = NextAttempt::Due {
            attempt: 1,
            at: Duration::ZERO,
        };
        let limit = usize::try_from(most).unwrap_or(usize::MAX);
        let mut n = 0;
        for a in self.upcoming(instance_id, node_id, first, takes, limit) {
            if a.since_first >= window {
                break;
            }
            *minutes.entry(a.since_first.as_secs() / 60).or_insert(0) += 1;
            n += 1;
        }
        n
    }
}

/// The busiest minute (the earliest of equals).
fn busiest(minutes: &BTreeMap<u64, u64>) -> Option<PeakMinute> {
    let mut best: Option<PeakMinute> = None;
    for (m, n) in minutes {
        if best.is_none_or(|b| *n > b.attempts) {
            best = Some(PeakMinute {
                minute: *m,
                attempts: *n,
            });
        }
    }
    best
}

/// One node's policy projected: what `qflow project` prints per policy.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeProjection {
    pub process_id: String,
    pub node: String,
    /// The node's name, if it has one.
    pub name: Option<String>,
    /// What it calls: a registered task's name, or `channel.operation`.
    pub dependency: String,
    pub policy: RetryPolicy,
    pub projection: Projection,
    /// Remote requests one attempt sends its dependency at most: 1 for a
    /// registered task (its handler's one run), a channel call's deliveries
    /// per attempt ([`super::delivery_load`]; `None`: unbounded). The load on
    /// a dependency is attempts × this, not attempts.
    pub requests_per_attempt: Option<u64>,
    /// The worst-case remote requests of one business operation through
    /// this node, every layer counted ([`super::bound`]).
    pub bound: Option<super::bound::RequestBound>,
}

impl NodeProjection {
    /// Remote requests the outage's scheduled attempts send at most.
    pub fn requests_scheduled(&self) -> Option<u64> {
        Some(
            self.projection
                .scheduled?
                .saturating_mul(self.requests_per_attempt?),
        )
    }

    /// Remote requests of the busiest minute at most (every delivery of the
    /// minute's attempts counted in it).
    pub fn requests_peak(&self) -> Option<u64> {
        Some(
            self.projection
                .peak?
                .attempts
                .saturating_mul(self.requests_per_attempt?),
        )
    }
}

/// Every `<q:retry>` of the model's executable processes, in document order,
/// projected over `jobs` instances and `window` (a node whose policy does
/// not load is skipped: the loader refuses such a model anyway).
pub fn of_model(defs: &Definitions, jobs: u64, window: Duration) -> Vec<NodeProjection> {
    let mut out = Vec::new();
    for p in defs.executable_processes() {
        let process_id = p.id.as_ref().map_or("process", |a| a.value.as_str());
        for node in &p.nodes {
            let Some(spec) = node.retries.first() else {
                continue;
            };
            let Ok(policy) = RetryPolicy::from_spec(spec) else {
                continue;
            };
            let Some(dependency) = super::bound::dependency(node) else {
                continue;
            };
            let takes = super::attempt_window(defs, node, &policy);
            let mut projection = policy.project(process_id, node.id(), jobs, window, takes);
            // The bound every face states: a call's attempts lasting until
            // their timeout, a task's waits stretched by a retry-after.
            projection.worst_case = super::node_worst_case(defs, node, &policy);
            out.push(NodeProjection {
                process_id: process_id.to_string(),
                node: node.id().to_string(),
                name: node.name.as_ref().map(|n| n.value.to_string()),
                dependency,
                policy,
                projection,
                requests_per_attempt: match super::delivery_load(defs, node) {
                    Some(load) => load.per_attempt,
                    None => Some(1),
                },
                bound: super::bound::request_bound(defs, p, node),
            });
        }
    }
    out
}

/// The seed's old loop: retry every 60 seconds, forever (no attempt limit,
/// no expiry, no jitter). The baseline every projection is shown beside.
pub fn unbounded_loop() -> RetryPolicy {
    RetryPolicy {
        max_attempts: None,
        backoff: Backoff::List(vec![Duration::from_secs(60)]),
        max_delay: None,
        max_elapsed: None,
        jitter: Jitter::None,
        non_retryable_codes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RetrySpec;
    use crate::policy::testing::{attr, dbg08_list};

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn dbg08_schedules_300000_attempts_for_50000_jobs_with_a_worst_case_of_46860_s() {
        let p = dbg08_list().project("dbg08", "charge", 50_000, DAY, Duration::ZERO);
        assert_eq!(p.per_instance, Some(6));
        assert_eq!(p.scheduled, Some(300_000));
        assert_eq!(p.worst_case.fails_by, Some(Duration::from_secs(46_860)));
        assert_eq!((p.after, p.given_up), (0, 50_000));
        // Every instance in step: each attempt of all 50,000 in one minute.
        assert_eq!(
            p.peak,
            Some(PeakMinute {
                minute: 0,
                attempts: 50_000
            })
        );
        // No jitter in the policy: what full jitter would do instead.
        let j = p.jittered.unwrap();
        assert_eq!((j.jitter, j.policy_own), ("full", false));
        assert!(j.scheduled >= 300_000, "{}", j.scheduled);
        // Full jitter draws the second attempt anywhere in its first 60 s:
        // minute 0 holds every first attempt and nearly every second one.
        let peak = j.peak.unwrap();
        assert_eq!(peak.minute, 0);
        assert!(peak.attempts > 95_000, "{peak:?}");
    }

    #[test]
    fn the_unbounded_loop_schedules_72_million_attempts_a_day() {
        let p = unbounded_loop().project("old", "job", 50_000, DAY, Duration::ZERO);
        assert_eq!(p.per_instance, Some(1_440));
        assert_eq!(p.scheduled, Some(72_000_000));
        assert_eq!(p.worst_case.count, None);
        assert_eq!((p.after, p.given_up), (50_000, 0));
        assert_eq!(p.peak.unwrap().attempts, 50_000);
        // Beyond the work limit for jitter (and it has none anyway).
        assert_eq!(p.jittered, None);
    }

    #[test]
    fn a_two_hour_outage_leaves_one_attempt_after_it() {
        let p = dbg08_list().project(
            "dbg08",
            "charge",
            10,
            Duration::from_secs(7_200),
            Duration::ZERO,
        );
        // 0, 60, 360 and 1,860 s fail; the fifth, at 9,360 s, is after it.
        assert_eq!(p.per_instance, Some(4));
        assert_eq!(p.scheduled, Some(40));
        assert_eq!((p.after, p.given_up), (10, 0));
    }

    #[test]
    fn equal_jitter_spreads_the_retries_but_never_past_the_nominal_time() {
        let p = RetryPolicy::from_spec(&RetrySpec {
            max_attempts: attr("6"),
            backoff: attr("PT1M PT5M PT25M PT125M PT625M"),
            jitter: attr("equal"),
            ..RetrySpec::default()
        })
        .unwrap()
        .project("dbg08", "charge", 1_000, DAY, Duration::ZERO);
        let j = p.jittered.unwrap();
        assert_eq!((j.jitter, j.policy_own), ("equal", true));
        // Six attempts each, all within the day either way.
        assert_eq!(j.scheduled, 6_000);
        assert_eq!(p.peak.unwrap().attempts, 1_000);
        // The second attempts (30 to 60 s) join the first in minute 0.
        assert_eq!(j.peak.unwrap().minute, 0);
        assert!(j.peak.unwrap().attempts > 1_900, "{:?}", j.peak);
    }

    #[test]
    fn a_model_projects_each_policy_with_its_dependency() {
        let src = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../samples/dbg08-long-outage.bpmn"
        ))
        .unwrap();
        let defs = crate::load(&src).unwrap();
        let all = of_model(&defs, 50_000, DAY);
        assert_eq!(all.len(), 1);
        let n = &all[0];
        assert_eq!(
            (n.process_id.as_str(), n.node.as_str()),
            ("dbg08", "charge")
        );
        assert_eq!(n.dependency, "payments.charge");
        assert_eq!(n.projection.scheduled, Some(300_000));
    }

    #[test]
    fn immediate_retries_forever_are_unbounded() {
        let p = RetryPolicy {
            backoff: Backoff::List(Vec::new()),
            ..unbounded_loop()
        }
        .project("p", "n", 10, DAY, Duration::ZERO);
        assert_eq!((p.per_instance, p.scheduled, p.peak), (None, None, None));
        assert_eq!(p.jittered, None);
    }
}
