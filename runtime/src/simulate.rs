//! A simulated outage over a fleet: N real instances of a model, started
//! together (or arriving evenly over a window), driven through the
//! decisions and the store by the fleet driver on the virtual clock. Every
//! dependency is down from the start until the outage ends and up after it:
//! a registered task's attempt fails transiently, a channel call's request
//! cannot be delivered (the outbox retries it until its channel's
//! `maxDeliveries` poisons it, or the call's `<q:timeout>` fails the attempt
//! first); after it, requests are delivered and the counterpart answers at
//! once.
//!
//! Two refinements shape the counterpart: a partial outage fails only a
//! share of the requests during the outage ([`Plan::error_rate`], drawn per
//! request from a stable hash, so a rerun fails the same ones), and a
//! capacity-limited counterpart answers 429 with a `Retry-After` to the
//! start of the next minute to every request above its rate in a minute of
//! virtual time ([`Plan::capacity`]), down or up.
//!
//! What it counts is what the seed asks a fleet to show: attempts executed,
//! remote requests (a task's attempt, a channel's delivery) by dependency
//! and by minute, instances completed, instances exhausted, and attempts per
//! minute of virtual time; [`expect`] holds a CI's expectations against it.
//! Nothing per instance is held in memory: the store holds the instances,
//! the driver one batch, the report one counter per minute of virtual time
//! (and per dependency) that saw an attempt.

pub mod expect;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use crate::decide;
use crate::driver::Decision;
use crate::fleet::{Fleet, World};
use crate::graph::{Graph, Kind};
use crate::{RunError, Scenario};
use qflow_instance::codes::handler::HTTP_429;
use qflow_instance::event::{ChannelOutcome, DeliveryOutcome, FailureClass, TaskOutcome};
use qflow_instance::history::{Attempt, HistoryEvent};
use qflow_instance::rows::OutboxRow;
use qflow_instance::Status;
use qflow_model::model::Definitions;
use qflow_store::Store;

/// The failure code every attempt during the outage gets.
pub const OUTAGE_CODE: &str = "DEPENDENCY_DOWN";

/// What to simulate.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Instances started.
    pub jobs: usize,
    /// How long every dependency (tasks and channels) is down, from
    /// virtual time 0.
    pub outage: Duration,
    /// Instances per group commit.
    pub batch: usize,
    /// The window the instances arrive over, evenly (instance `k` of `n`
    /// at `k × window / n`); zero: all at virtual time 0.
    pub arrivals: Duration,
    /// The share of requests that fail during the outage: 1 (the default)
    /// fails every one; per dependency where named.
    pub error_rate: ErrorRates,
    /// Requests per minute of virtual time a dependency serves; those above
    /// are answered 429 with a `Retry-After` to the next minute.
    pub capacity: BTreeMap<String, u64>,
    /// Mixed into the partial outage's draws: another seed fails other
    /// requests at the same rate.
    pub seed: u64,
    /// Circuit breakers by task name (a handlers file's `breaker` tables):
    /// run on the virtual clock with the same machine and the same durable
    /// writes as under `qflow serve` ([`crate::breaker::apply`]).
    pub breakers: BTreeMap<String, crate::breaker::BreakerConfig>,
}

impl Plan {
    /// Every dependency down for `outage`, every request failing in it, all
    /// `jobs` started at 0, no capacity limit.
    pub fn new(jobs: usize, outage: Duration, batch: usize) -> Plan {
        Plan {
            jobs,
            outage,
            batch,
            arrivals: Duration::ZERO,
            error_rate: ErrorRates::default(),
            capacity: BTreeMap::new(),
            seed: 0,
            breakers: BTreeMap::new(),
        }
    }

    /// Refuse a dependency the model does not have in `--error-rate` and
    /// `--capacity` (a misspelt name would silently do nothing).
    pub fn check(&self, known: &BTreeSet<String>) -> Result<(), String> {
        let named = self
            .error_rate
            .by_dependency
            .keys()
            .map(|d| ("--error-rate", d))
            .chain(self.capacity.keys().map(|d| ("--capacity", d)));
        for (flag, d) in named {
            if !known.contains(d) {
                return Err(format!(
                    "{flag} {d}=…: the model has no dependency `{d}`: {}",
                    if known.is_empty() {
                        "it has no registered task and no channel call".to_string()
                    } else {
                        format!(
                            "write one of its task names or channels: {}",
                            known.iter().cloned().collect::<Vec<_>>().join(", ")
                        )
                    }
                ));
            }
        }
        Ok(())
    }

    /// When instance `k` (0-based) arrives, ms of virtual time.
    pub fn arrival_ms(&self, k: usize) -> i64 {
        if self.jobs == 0 {
            return 0;
        }
        let window = self.arrivals.as_millis();
        (window * k as u128 / self.jobs as u128).min(i64::MAX as u128) as i64
    }
}

/// The share of requests that fail during the outage.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorRates {
    /// For every dependency not named below.
    pub default: f64,
    pub by_dependency: BTreeMap<String, f64>,
}

impl Default for ErrorRates {
    fn default() -> ErrorRates {
        ErrorRates {
            default: 1.0,
            by_dependency: BTreeMap::new(),
        }
    }
}

impl ErrorRates {
    pub fn of(&self, dependency: &str) -> f64 {
        self.by_dependency
            .get(dependency)
            .copied()
            .unwrap_or(self.default)
    }

    /// Add one `--error-rate` (`0.3`, `30%`, or `DEPENDENCY=0.3`).
    pub fn add(&mut self, text: &str) -> Result<(), String> {
        let (dependency, rate) = match text.split_once('=') {
            Some((d, r)) => (Some(d.trim()), r.trim()),
            None => (None, text.trim()),
        };
        if dependency == Some("") {
            return Err(format!(
                "--error-rate {text}: no dependency before `=`: write NAME={rate} or {rate} for all"
            ));
        }
        let value = match rate.strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
            None => rate.parse::<f64>(),
        };
        let value = match value {
            Ok(v) if (0.0..=1.0).contains(&v) => v,
            _ => {
                return Err(format!(
                    "--error-rate {text}: `{rate}` is not a share of requests: write one from 0 to 1 (0.3) or a percentage (30%){}",
                    dependency.map_or(String::new(), |d| format!(", as in {d}=0.3"))
                ))
            }
        };
        match dependency {
            Some(d) => {
                self.by_dependency.insert(d.to_string(), value);
            }
            None => self.default = value,
        }
        Ok(())
    }
}

/// One `--capacity DEPENDENCY=N/min` (or `N/s`): the dependency and the
/// requests per minute it serves.
pub fn parse_capacity(text: &str) -> Result<(String, u64), String> {
    let usage = "write DEPENDENCY=N/min, as in bank=100/min";
    let Some((dependency, rate)) = text.split_once('=') else {
        return Err(format!("--capacity {text}: no dependency named: {usage}"));
    };
    let dependency = dependency.trim();
    if dependency.is_empty() {
        return Err(format!(
            "--capacity {text}: no dependency before `=`: {usage}"
        ));
    }
    let rate = rate.trim();
    let (n, per) = match rate.split_once('/') {
        Some((n, per)) => (n.trim(), per.trim()),
        None => {
            return Err(format!(
                "--capacity {text}: `{rate}` has no unit: write {dependency}={rate}/min"
            ))
        }
    };
    let n: u64 = n.replace(['_', ','], "").parse().map_err(|_| {
        format!("--capacity {text}: `{n}` is not a whole number of requests: {usage}")
    })?;
    let per_minute = match per {
        "min" | "m" => n,
        "s" | "sec" => n.saturating_mul(60),
        other => {
            return Err(format!(
                "--capacity {text}: `/{other}` is not a unit: write /min or /s"
            ))
        }
    };
    if per_minute == 0 {
        return Err(format!(
            "--capacity {text}: a capacity of zero serves nothing: give at least 1/min (a dependency that is down is --outage)"
        ));
    }
    Ok((dependency.to_string(), per_minute))
}

/// The dependencies of a model's executable processes: each registered
/// task's name and each channel call's channel.
pub fn dependencies(defs: &Definitions) -> Result<BTreeSet<String>, RunError> {
    let graph = Graph::compile(defs)?;
    Ok(graph
        .nodes
        .values()
        .filter_map(|n| match &n.kind {
            Kind::Task { call: Some(c), .. } => Some(c.channel.clone()),
            Kind::Task { task, .. } => Some(task.clone()),
            _ => None,
        })
        .collect())
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
    /// Instances started per minute of virtual time (all in minute 0
    /// without arrivals).
    pub started_per_minute: BTreeMap<i64, u64>,
    /// Attempts by dependency (a registered task's name, or a call's
    /// channel).
    pub by_dependency: BTreeMap<String, u64>,
    /// Remote requests by dependency: a task's attempts, a channel's
    /// deliveries (each try of the outbox is one request on the wire).
    pub requests_by_dependency: BTreeMap<String, u64>,
    /// Requests per minute of virtual time, by dependency.
    pub requests_per_minute: BTreeMap<String, BTreeMap<i64, u64>>,
    /// Requests answered 429 by a capacity-limited counterpart, by
    /// dependency.
    pub rate_limited: BTreeMap<String, u64>,
    /// Group commits applied.
    pub batches: u64,
    /// Every move the breakers made ([`Plan::breakers`]), at the virtual
    /// instant it was made (ms since the start), in order.
    pub breaker_moves: Vec<qflow_store::breaker::BreakerLogged>,
    /// With breakers: the requests by dependency of the same plan run
    /// without them (what the breakers saved is the difference), if that
    /// run was made.
    pub requests_without_breakers: Option<BTreeMap<String, u64>>,
}

impl Report {
    /// A report of nothing yet, for `jobs` instances.
    pub fn empty(jobs: usize) -> Report {
        Report {
            totals: Progress {
                jobs,
                ..Progress::default()
            },
            per_minute: BTreeMap::new(),
            finished_per_minute: BTreeMap::new(),
            started_per_minute: BTreeMap::new(),
            by_dependency: BTreeMap::new(),
            requests_by_dependency: BTreeMap::new(),
            requests_per_minute: BTreeMap::new(),
            rate_limited: BTreeMap::new(),
            batches: 0,
            breaker_moves: Vec::new(),
            requests_without_breakers: None,
        }
    }

    /// The pending backlog over the simulation, as steps: (minute, pending)
    /// where pending is the number of instances started and not finished
    /// (parked for a retry, or waiting) at the end of that minute of
    /// virtual time, once for minute 0 and then once for each minute where
    /// it changes; it holds until the next step. Ends at the minute of the
    /// last decision. Without arrivals every instance starts at 0, so it
    /// only falls.
    pub fn backlog(&self) -> Vec<(i64, u64)> {
        let started: BTreeMap<i64, u64> = if self.started_per_minute.is_empty() {
            BTreeMap::from([(0, self.totals.jobs as u64)])
        } else {
            self.started_per_minute.clone()
        };
        let minutes: BTreeSet<i64> = started
            .keys()
            .chain(self.finished_per_minute.keys())
            .map(|m| (*m).max(0))
            .chain([0])
            .collect();
        let mut out: Vec<(i64, u64)> = Vec::new();
        let mut pending: u64 = 0;
        for m in minutes {
            pending += started.get(&m).copied().unwrap_or(0);
            pending =
                pending.saturating_sub(self.finished_per_minute.get(&m).copied().unwrap_or(0));
            match out.last() {
                Some((_, p)) if *p == pending => {}
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
        busiest(&self.per_minute)
    }

    /// The busiest minute of requests, of one dependency or of all
    /// together: (minute index, requests).
    pub fn peak_requests(&self, dependency: Option<&str>) -> Option<(i64, u64)> {
        match dependency {
            Some(d) => self.requests_per_minute.get(d).and_then(busiest),
            None => {
                let mut all: BTreeMap<i64, u64> = BTreeMap::new();
                for minutes in self.requests_per_minute.values() {
                    for (m, n) in minutes {
                        *all.entry(*m).or_insert(0) += n;
                    }
                }
                busiest(&all)
            }
        }
    }
}

fn busiest(per_minute: &BTreeMap<i64, u64>) -> Option<(i64, u64)> {
    per_minute
        .iter()
        .map(|(m, n)| (*m, *n))
        .max_by_key(|(m, n)| (*n, -m))
}

/// The counterparts of a simulation: down (wholly or in part) until
/// `until_ms`, up after, each behind its capacity.
struct Counterparts {
    until_ms: i64,
    error_rate: ErrorRates,
    capacity: BTreeMap<String, u64>,
    seed: u64,
    /// Requests served (not refused) per (dependency, minute).
    served: RefCell<BTreeMap<(String, i64), u64>>,
    /// Requests answered 429, by dependency.
    refused: RefCell<BTreeMap<String, u64>>,
}

/// What a counterpart does with one request.
enum Answer {
    /// Over capacity: 429, come back after this long.
    TooMany(Duration),
    Down,
    Up,
}

impl Counterparts {
    /// The answer to a request to `dependency` at `at_ms`; `draw` names the
    /// request for the partial outage's draw (the same request, the same
    /// luck).
    fn answer(&self, dependency: &str, draw: (&str, u32), at_ms: i64) -> Answer {
        if let Some(&cap) = self.capacity.get(dependency) {
            let minute = at_ms.div_euclid(60_000);
            let mut served = self.served.borrow_mut();
            let n = served.entry((dependency.to_string(), minute)).or_insert(0);
            if *n >= cap {
                *self
                    .refused
                    .borrow_mut()
                    .entry(dependency.to_string())
                    .or_insert(0) += 1;
                // Retry-After is whole seconds: to the next minute, at least 1.
                let wait_ms = (minute + 1) * 60_000 - at_ms;
                let secs = (wait_ms + 999).div_euclid(1000).max(1) as u64;
                return Answer::TooMany(Duration::from_secs(secs));
            }
            *n += 1;
        }
        if at_ms >= self.until_ms {
            return Answer::Up;
        }
        let rate = self.error_rate.of(dependency);
        if rate >= 1.0 {
            return Answer::Down;
        }
        let seeded = format!("{}#{}", draw.0, self.seed);
        let u = qflow_model::policy::jitter_unit(&seeded, dependency, draw.1);
        // u / 2^64 < rate
        if (u as f64) < rate * 18_446_744_073_709_551_616.0 {
            Answer::Down
        } else {
            Answer::Up
        }
    }
}

/// The world the fleet asks, sharing the counterparts with the report.
struct Shared(Rc<Counterparts>);

impl World for Shared {
    fn attempt(&self, instance: &str, task: &str, run: usize, at_ms: i64) -> TaskOutcome {
        match self.0.answer(task, (instance, run as u32), at_ms) {
            Answer::TooMany(after) => TaskOutcome::Fail {
                code: HTTP_429.into(),
                class: FailureClass::RateLimited,
                retry_after: Some(after),
                message: Some(format!(
                    "the dependency is over its capacity of {}/min (simulated)",
                    self.0.capacity.get(task).copied().unwrap_or(0)
                )),
            },
            Answer::Down => TaskOutcome::Fail {
                code: OUTAGE_CODE.into(),
                class: FailureClass::Transient,
                retry_after: None,
                message: Some("the dependency is down (simulated outage)".into()),
            },
            Answer::Up => TaskOutcome::Ok(BTreeMap::new()),
        }
    }

    fn deliver(
        &self,
        _instance: &str,
        row: &OutboxRow,
        at_ms: i64,
    ) -> Option<(DeliveryOutcome, Option<ChannelOutcome>)> {
        Some(
            match self
                .0
                .answer(&row.channel, (&row.idempotency_key, row.deliveries), at_ms)
            {
                Answer::TooMany(after) => (
                    DeliveryOutcome::Later(
                        format!(
                            "429 Too Many Requests (simulated capacity {}/min)",
                            self.0.capacity.get(&row.channel).copied().unwrap_or(0)
                        ),
                        after,
                    ),
                    None,
                ),
                Answer::Down => (DeliveryOutcome::Fail(OUTAGE_CODE.into()), None),
                Answer::Up => (
                    DeliveryOutcome::Ok,
                    Some(ChannelOutcome::Respond {
                        body: serde_json::Value::Object(Default::default()),
                        after: None,
                    }),
                ),
            },
        )
    }
}

/// Deploy `source` into `store`, start `plan.jobs` instances (at virtual
/// time 0, or over `plan.arrivals`) and drive them all to an end (or to what
/// they wait for outside the simulation). `progress` is called after
/// seeding steps and every batch; `on_decision` with every decision applied
/// (the instance and the decision: a trace).
pub fn simulate(
    mut store: Store,
    source: &str,
    defs: &Definitions,
    plan: &Plan,
    mut progress: impl FnMut(&Progress),
    mut on_decision: impl FnMut(&str, &Decision),
) -> Result<(Report, Store), RunError> {
    let graph = Graph::compile(defs)?;
    let deployment = store.deploy(&graph.process_id, source, 0)?;
    let mut report = Report::empty(plan.jobs);
    let mut p = Progress {
        jobs: plan.jobs,
        ..Progress::default()
    };
    const SEED_CHUNK: usize = 5_000;
    if plan.arrivals.is_zero() {
        let start = decide::start(&graph, &BTreeMap::new(), 0);
        while p.started < plan.jobs {
            let n = (plan.jobs - p.started).min(SEED_CHUNK);
            store.start_instances(&deployment, &start, 0, n)?;
            p.started += n;
            progress(&p);
        }
        report.started_per_minute.insert(0, plan.jobs as u64);
    }
    let counterparts = Rc::new(Counterparts {
        until_ms: plan.outage.as_millis().min(i64::MAX as u128) as i64,
        error_rate: plan.error_rate.clone(),
        capacity: plan.capacity.clone(),
        seed: plan.seed,
        served: RefCell::new(BTreeMap::new()),
        refused: RefCell::new(BTreeMap::new()),
    });
    let mut fleet = Fleet::new(store, Scenario::default(), qflow_store::local_owner());
    fleet.batch(plan.batch);
    fleet.world(Box::new(Shared(counterparts.clone())));
    // Whether the last step found nothing to do: the next arrivals then
    // start whatever else is due (nothing the fleet picks is).
    let mut idle = false;
    let mut stalled = 0u32;
    loop {
        if p.started < plan.jobs {
            // Arrivals join when the fleet's work reaches their instant:
            // everything due earlier is decided first, so the counterparts
            // see requests in the order of virtual time.
            let (_, next_due) = fleet.store().due_instances(None, -1, 1)?;
            let next_arrival = plan.arrival_ms(p.started);
            let horizon = match next_due {
                Some(due) if !idle => due,
                Some(due) => due.max(next_arrival),
                None => next_arrival,
            };
            let mut starts = Vec::new();
            while p.started < plan.jobs
                && plan.arrival_ms(p.started) <= horizon
                && starts.len() < SEED_CHUNK
            {
                let at = plan.arrival_ms(p.started);
                starts.push((decide::start(&graph, &BTreeMap::new(), at), at));
                *report
                    .started_per_minute
                    .entry(at.div_euclid(60_000))
                    .or_insert(0) += 1;
                p.started += 1;
            }
            if !starts.is_empty() {
                fleet.store_mut().start_instances_at(&deployment, &starts)?;
                progress(&p);
            }
        }
        let mut observed: Vec<(String, String, bool)> = Vec::new();
        let decided_before = fleet.stats().decisions;
        let looked = fleet.step(|id, d| {
            p.virtual_ms = p.virtual_ms.max(d.at_ms);
            let minute = d.at_ms.div_euclid(60_000);
            for line in &d.events {
                if let HistoryEvent::Attempt(Attempt::Task(t)) = &line.event {
                    if plan.breakers.contains_key(&t.task) {
                        let failed = matches!(
                            t.class,
                            Some(
                                FailureClass::Transient
                                    | FailureClass::RateLimited
                                    | FailureClass::UnknownOutcome
                            )
                        );
                        observed.push((id.to_string(), t.task.clone(), failed));
                    }
                }
                let request = match &line.event {
                    HistoryEvent::Attempt(a) => {
                        p.attempts += 1;
                        *report.per_minute.entry(minute).or_insert(0) += 1;
                        let dependency = match a {
                            Attempt::Task(t) => &t.task,
                            Attempt::Call(c) => &c.channel,
                        };
                        count(&mut report.by_dependency, dependency);
                        match a {
                            Attempt::Task(t) => Some(&t.task),
                            Attempt::Call(_) => None,
                        }
                    }
                    HistoryEvent::Delivery { channel, .. } => Some(channel),
                    HistoryEvent::Failed { reason, .. } if reason == "exhausted" => {
                        p.exhausted += 1;
                        None
                    }
                    HistoryEvent::Failed { .. } => {
                        p.failed += 1;
                        None
                    }
                    _ => None,
                };
                if let Some(dependency) = request {
                    count(&mut report.requests_by_dependency, dependency);
                    let minutes = match report.requests_per_minute.get_mut(dependency) {
                        Some(m) => m,
                        None => report
                            .requests_per_minute
                            .entry(dependency.clone())
                            .or_default(),
                    };
                    *minutes.entry(minute).or_insert(0) += 1;
                }
            }
            if d.status == Status::Completed {
                p.completed += 1;
            }
            if d.status.is_terminal() {
                *report.finished_per_minute.entry(minute).or_insert(0) += 1;
            }
            on_decision(id, d);
        })?;
        progress(&p);
        // Instances picked with nothing decided are held (a breaker's
        // pause holds their first attempts): twice in a row (the fleet
        // tries the ready ones, then the timers), nothing can move but a
        // breaker.
        if fleet.stats().decisions > decided_before {
            stalled = 0;
        } else if looked > 0 {
            stalled += 1;
        }
        let looked = if stalled >= 2 { 0 } else { looked };
        let mut moved = false;
        if !plan.breakers.is_empty() {
            let now = p.virtual_ms;
            let store = fleet.store_mut();
            moved |= breakers_observe(store, plan, observed, now, &mut report)?;
            moved |= breakers_tick(store, plan, now, &mut report)?;
            if looked == 0 && !moved && p.started >= plan.jobs {
                // Nothing due: an open breaker's open time is the next
                // thing to happen (its canaries go then).
                let next = store
                    .breakers()?
                    .iter()
                    .filter_map(|b| {
                        plan.breakers
                            .get(&b.dependency)
                            .and_then(|c| crate::breaker::next_tick_ms(c, &b.state))
                    })
                    .min();
                if let Some(at) = next.filter(|at| *at > now) {
                    p.virtual_ms = at;
                    moved |= breakers_tick(store, plan, at, &mut report)?;
                }
            }
            if moved {
                // What the breaker let go runs from its move on.
                fleet.floor(p.virtual_ms);
            }
        }
        if looked == 0 && !moved && p.started >= plan.jobs {
            break;
        }
        if moved {
            // What a breaker let go (canaries, a release) is looked for afresh.
            stalled = 0;
        }
        idle = looked == 0 && !moved;
    }
    report.batches = fleet.stats().batches;
    report.totals = p;
    report.rate_limited = counterparts.refused.borrow().clone();
    Ok((report, fleet.into_store()))
}

/// Feed each breaker the outcomes of its dependency's attempts decided in
/// the last batch, at `now_ms` (virtual). True when one moved.
fn breakers_observe(
    store: &mut Store,
    plan: &Plan,
    observed: Vec<(String, String, bool)>,
    now_ms: i64,
    report: &mut Report,
) -> Result<bool, RunError> {
    let mut moved = false;
    // An open breaker ignores outcomes (only a half-open one's canaries
    // and a closed one's attempts count): one fleet is the only writer
    // here, so the phase last written is the phase, and the outcomes of a
    // batch that opened it cost no further transaction.
    let mut open: BTreeSet<String> = store
        .breakers()?
        .into_iter()
        .filter(|b| b.state.phase == qflow_instance::breaker::Phase::Open)
        .map(|b| b.dependency)
        .collect();
    for (instance, task, failed) in observed {
        let Some(config) = plan.breakers.get(&task) else {
            continue;
        };
        if open.contains(&task) {
            continue;
        }
        let a = crate::breaker::apply(
            store,
            &task,
            config,
            qflow_store::breaker::Probe::Instance(&instance),
            |canary| crate::breaker::Observed::Outcome { failed, canary },
            now_ms,
        )?;
        if a.state.phase == qflow_instance::breaker::Phase::Open {
            open.insert(task.clone());
        }
        moved |= record(store, &task, a, now_ms, report)?;
    }
    Ok(moved)
}

/// Let time move every breaker to `now_ms` (virtual). True when one moved
/// or chose canaries.
fn breakers_tick(
    store: &mut Store,
    plan: &Plan,
    now_ms: i64,
    report: &mut Report,
) -> Result<bool, RunError> {
    let mut moved = false;
    for (dependency, config) in &plan.breakers {
        let a = crate::breaker::apply(
            store,
            dependency,
            config,
            qflow_store::breaker::Probe::None,
            |_| crate::breaker::Observed::Tick,
            now_ms,
        )?;
        moved |= record(store, dependency, a, now_ms, report)?;
    }
    Ok(moved)
}

/// Keep a breaker's move in the report; canaries chosen run at `now_ms`
/// (each instance keeps its own virtual time: a canary parked long ago
/// would otherwise run in the past).
fn record(
    store: &mut Store,
    dependency: &str,
    a: qflow_store::breaker::BreakerApplied,
    now_ms: i64,
    report: &mut Report,
) -> Result<bool, RunError> {
    if a.chose > 0 {
        store.breaker_canaries_due(dependency, now_ms)?;
    }
    let moved = a.chose > 0 || a.moved.is_some();
    if let Some(m) = a.moved {
        report.breaker_moves.push(m);
    }
    Ok(moved)
}

fn count(map: &mut BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_string(), 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(jobs: usize, finished: &[(i64, u64)], virtual_ms: i64) -> Report {
        let mut r = Report::empty(jobs);
        r.totals.virtual_ms = virtual_ms;
        r.finished_per_minute = finished.iter().copied().collect();
        r
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
