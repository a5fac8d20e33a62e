//! A simulated outage over a fleet: N real instances of a model, started
//! together, driven through the decisions and the store by the fleet driver
//! on the virtual clock. Every dependency is down from the start until the
//! outage ends and up after it: a registered task's attempt fails
//! transiently, a channel call's request cannot be delivered (the outbox
//! retries it until its channel's `maxDeliveries` poisons it, or the call's
//! `<q:timeout>` fails the attempt first); after it, requests are delivered
//! and the counterpart answers at once.
//!
//! What it counts is what the seed asks a fleet to show: attempts executed,
//! instances completed, instances exhausted, and attempts per minute of
//! virtual time. Nothing per instance is held in memory: the store holds the
//! instances, the driver one batch, the report one counter per minute of
//! virtual time that saw an attempt.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::decide;
use crate::fleet::{Fleet, World};
use crate::graph::Graph;
use crate::{RunError, Scenario};
use qflow_instance::event::{ChannelOutcome, DeliveryOutcome, FailureClass, TaskOutcome};
use qflow_instance::history::{Attempt, HistoryEvent};
use qflow_instance::Status;
use qflow_model::model::Definitions;
use qflow_store::Store;

/// The failure code every attempt during the outage gets.
pub const OUTAGE_CODE: &str = "DEPENDENCY_DOWN";

/// What to simulate.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Instances started together at virtual time 0.
    pub jobs: usize,
    /// How long every dependency (tasks and channels) is down, from
    /// virtual time 0.
    pub outage: Duration,
    /// Instances per group commit.
    pub batch: usize,
}

/// Where a simulation is, reported after each batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    pub jobs: usize,
    /// Instances started so far (seeding comes first).
    pub started: usize,
    /// Attempts executed: a registered task's handler runs and a channel
    /// call's requests.
    pub attempts: u64,
    pub completed: u64,
    /// Instances FAILED with their retry budget spent.
    pub exhausted: u64,
    /// Instances FAILED for another reason (a non-retryable code, an
    /// uncaught error).
    pub failed: u64,
    /// The latest virtual instant decided, ms since the start.
    pub virtual_ms: i64,
}

impl Progress {
    /// Instances that reached an end (completed or failed).
    pub fn finished(&self) -> u64 {
        self.completed + self.exhausted + self.failed
    }
}

/// What a simulation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub totals: Progress,
    /// Attempts per minute of virtual time (minute index → attempts); only
    /// minutes that saw an attempt.
    pub per_minute: BTreeMap<i64, u64>,
    /// Instances that finished (completed or failed) per minute of virtual
    /// time (minute index → instances); only minutes where one did. The
    /// backlog series ([`Report::backlog`]) is read from it.
    pub finished_per_minute: BTreeMap<i64, u64>,
    /// Attempts by dependency (a registered task's name, or a call's
    /// channel).
    pub by_dependency: BTreeMap<String, u64>,
    /// Group commits applied.
    pub batches: u64,
}

impl Report {
    /// The pending backlog over the simulation, as steps: (minute, pending)
    /// where pending is the number of instances started and not finished
    /// (parked for a retry, or waiting) at the end of that minute of
    /// virtual time, once for minute 0 and then once for each minute where
    /// it changes; it holds until the next step. Ends at the minute of the
    /// last decision. Every instance starts at 0, so it only falls.
    pub fn backlog(&self) -> Vec<(i64, u64)> {
        let jobs = self.totals.jobs as u64;
        let mut out = vec![(0, jobs)];
        let mut pending = jobs;
        for (m, n) in &self.finished_per_minute {
            pending = pending.saturating_sub(*n);
            let m = (*m).max(0);
            match out.last_mut() {
                Some((at, p)) if *at == m => *p = pending,
                _ => out.push((m, pending)),
            }
        }
        out
    }

    /// The pending backlog at the end of every minute from 0 to the last
    /// decision's minute (one entry per minute: what a chart plots).
    pub fn backlog_per_minute(&self) -> Vec<(i64, u64)> {
        let steps = self.backlog();
        let last = self
            .totals
            .virtual_ms
            .div_euclid(60_000)
            .max(steps.last().map_or(0, |s| s.0));
        let mut out = Vec::with_capacity(last as usize + 1);
        let mut i = 0;
        for m in 0..=last {
            while i + 1 < steps.len() && steps[i + 1].0 <= m {
                i += 1;
            }
            out.push((m, steps[i].1));
        }
        out
    }

    /// The busiest minute: (minute index, attempts).
    pub fn peak(&self) -> Option<(i64, u64)> {
        self.per_minute
            .iter()
            .map(|(m, n)| (*m, *n))
            .max_by_key(|(m, n)| (*n, -m))
    }
}

/// The dependency: down until `until_ms`, up after.
struct Outage {
    until_ms: i64,
}

impl World for Outage {
    fn attempt(&self, _task: &str, _run: usize, at_ms: i64) -> TaskOutcome {
        if at_ms < self.until_ms {
            TaskOutcome::Fail {
                code: OUTAGE_CODE.into(),
                class: FailureClass::Transient,
                retry_after: None,
                message: Some("the dependency is down (simulated outage)".into()),
            }
        } else {
            TaskOutcome::Ok(BTreeMap::new())
        }
    }

    fn deliver(
        &self,
        _channel: &str,
        at_ms: i64,
    ) -> Option<(DeliveryOutcome, Option<ChannelOutcome>)> {
        Some(if at_ms < self.until_ms {
            (DeliveryOutcome::Fail(OUTAGE_CODE.into()), None)
        } else {
            (
                DeliveryOutcome::Ok,
                Some(ChannelOutcome::Respond {
                    body: serde_json::Value::Object(Default::default()),
                    after: None,
                }),
            )
        })
    }
}

/// Deploy `source` into `store`, start `plan.jobs` instances at virtual time
/// 0 and drive them all to an end (or to what they wait for outside the
/// simulation). `progress` is called after seeding steps and every batch.
pub fn simulate(
    mut store: Store,
    source: &str,
    defs: &Definitions,
    plan: &Plan,
    mut progress: impl FnMut(&Progress),
) -> Result<(Report, Store), RunError> {
    let graph = Graph::compile(defs)?;
    let deployment = store.deploy(&graph.process_id, source, 0)?;
    let start = decide::start(&graph, &BTreeMap::new(), 0);
    let mut p = Progress {
        jobs: plan.jobs,
        ..Progress::default()
    };
    const SEED_CHUNK: usize = 5_000;
    while p.started < plan.jobs {
        let n = (plan.jobs - p.started).min(SEED_CHUNK);
        store.start_instances(&deployment, &start, 0, n)?;
        p.started += n;
        progress(&p);
    }
    let mut fleet = Fleet::new(store, Scenario::default(), qflow_store::local_owner());
    fleet.batch(plan.batch);
    fleet.world(Box::new(Outage {
        until_ms: plan.outage.as_millis().min(i64::MAX as u128) as i64,
    }));
    let mut per_minute = BTreeMap::new();
    let mut finished_per_minute = BTreeMap::new();
    let mut by_dependency: BTreeMap<String, u64> = BTreeMap::new();
    loop {
        let looked = fleet.step(|_, d| {
            p.virtual_ms = p.virtual_ms.max(d.at_ms);
            for line in &d.events {
                match &line.event {
                    HistoryEvent::Attempt(a) => {
                        p.attempts += 1;
                        *per_minute.entry(d.at_ms.div_euclid(60_000)).or_insert(0) += 1;
                        let dependency = match a {
                            Attempt::Task(t) => &t.task,
                            Attempt::Call(c) => &c.channel,
                        };
                        match by_dependency.get_mut(dependency) {
                            Some(n) => *n += 1,
                            None => {
                                by_dependency.insert(dependency.clone(), 1);
                            }
                        }
                    }
                    HistoryEvent::Failed { reason, .. } if reason == "exhausted" => {
                        p.exhausted += 1
                    }
                    HistoryEvent::Failed { .. } => p.failed += 1,
                    _ => {}
                }
            }
            if d.status == Status::Completed {
                p.completed += 1;
            }
            if d.status.is_terminal() {
                *finished_per_minute
                    .entry(d.at_ms.div_euclid(60_000))
                    .or_insert(0) += 1;
            }
        })?;
        progress(&p);
        if looked == 0 {
            break;
        }
    }
    let batches = fleet.stats().batches;
    Ok((
        Report {
            totals: p,
            per_minute,
            finished_per_minute,
            by_dependency,
            batches,
        },
        fleet.into_store(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(jobs: usize, finished: &[(i64, u64)], virtual_ms: i64) -> Report {
        Report {
            totals: Progress {
                jobs,
                virtual_ms,
                ..Progress::default()
            },
            per_minute: BTreeMap::new(),
            finished_per_minute: finished.iter().copied().collect(),
            by_dependency: BTreeMap::new(),
            batches: 0,
        }
    }

    #[test]
    fn the_backlog_falls_by_the_instances_finished_in_each_minute() {
        let r = report(30, &[(156, 25), (781, 5)], 46_860_000);
        assert_eq!(r.backlog(), [(0, 30), (156, 5), (781, 0)]);
        let dense = r.backlog_per_minute();
        assert_eq!(dense.len(), 782);
        assert_eq!(dense[155], (155, 30));
        assert_eq!(dense[156], (156, 5));
        assert_eq!(dense[780], (780, 5));
        assert_eq!(dense[781], (781, 0));
    }

    #[test]
    fn what_finishes_in_minute_zero_is_not_pending_at_its_end() {
        let r = report(4, &[(0, 3)], 10_000);
        assert_eq!(r.backlog(), [(0, 1)]);
        assert_eq!(r.backlog_per_minute(), [(0, 1)]);
        // Nothing finished: the whole fleet pends until the last decision.
        let r = report(4, &[], 130_000);
        assert_eq!(r.backlog_per_minute(), [(0, 4), (1, 4), (2, 4)]);
    }
}
