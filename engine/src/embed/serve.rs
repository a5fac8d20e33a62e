//! Serving on the wall clock with lanes ([`Engine::serve`]): the loop that
//! decides never runs a handler or a delivery; lanes do
//! ([`crate::runtime::lanes`]), and their outcomes come back to it.
//!
//! One round: decide what came back from the lanes (each under a fresh
//! claim, from the facts as they are now), the poison wakes, then every
//! instance with something due (due timers first, then due deliveries,
//! then ready tokens), handing attempts and deliveries to lanes. What came
//! back and what is due are each decided as one group
//! ([`shell::take_many`]): claims in one transaction, decisions applied in
//! another, each under its own claim and version check. Then wait
//! for the next thing: a lane's outcome, a wake-up ([`Waker`]: a start or
//! an answer on this process's endpoint), the next due timer or delivery,
//! or at the latest the safety poll (another process's writes). No wait
//! holds a lane and no lane holds a claim.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::instance::Event;
use crate::runtime::clock::{system_now_ms, SystemClock, VirtualClock};
use crate::runtime::driver::{Ctx, Next, RunError};
use crate::runtime::lanes::{Done, Job, LaneView, Msg, Outcome, Pool};
use crate::runtime::shell::{self, deployed_graph, Choice, Taken};
use crate::runtime::world::World;

use super::drive::clock_of;
use super::engine::{Engine, EngineError, Step, Time, ROUND};
use super::outage::{OutageEvent, StoreHealth, StoreState};

/// Prompts the serving loop to look again now (a new instance, an answer
/// taken on an endpoint): cheap, never blocks, harmless when the loop is
/// not serving.
#[derive(Clone, Debug)]
pub struct Waker(pub(super) mpsc::Sender<Msg>);

impl Waker {
    pub fn wake(&self) {
        let _ = self.0.send(Msg::Wake);
    }
}

/// A decision taken later than it was due, past the engine's threshold
/// ([`Engine::set_late_after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Late {
    pub instance: String,
    pub node: Option<String>,
    /// `timer`, `attempt` (a retry handed to a lane), `delivery`.
    pub kind: &'static str,
    pub due_ms: i64,
    pub decided_ms: i64,
}

/// What [`Engine::serve`] measured of its timed decisions: how late each
/// was taken after it was due (wall clock, ms).
#[derive(Debug, Clone, Default)]
pub struct Lateness {
    /// Every timed decision's lateness, in the order taken (bounded: the
    /// latest [`Lateness::KEEP`]).
    pub samples: Vec<i64>,
    pub decisions: u64,
    /// Taken more than the threshold after due.
    pub late: u64,
}

impl Lateness {
    pub const KEEP: usize = 100_000;

    /// The `p`-th percentile (0..=100) of the kept samples.
    pub fn percentile(&self, p: f64) -> Option<i64> {
        if self.samples.is_empty() {
            return None;
        }
        let mut s = self.samples.clone();
        s.sort_unstable();
        let i = ((p / 100.0) * (s.len() - 1) as f64).round() as usize;
        Some(s[i.min(s.len() - 1)])
    }
}

/// The lanes' bookkeeping of one serve.
struct InFlight {
    /// Task nodes with an attempt on a lane, by instance.
    nodes: BTreeMap<String, BTreeSet<String>>,
    /// Outbox rows on a lane.
    rows: BTreeSet<i64>,
}

impl InFlight {
    fn add(&mut self, job: &Job) {
        match job {
            Job::Attempt { instance, node, .. } => {
                self.nodes
                    .entry(instance.clone())
                    .or_default()
                    .insert(node.clone());
            }
            Job::Delivery { row, .. } => {
                self.rows.insert(row.id);
            }
        }
    }

    fn remove(&mut self, job: &Job) {
        match job {
            Job::Attempt { instance, node, .. } => {
                if let Some(s) = self.nodes.get_mut(instance) {
                    s.remove(node);
                    if s.is_empty() {
                        self.nodes.remove(instance);
                    }
                }
            }
            Job::Delivery { row, .. } => {
                self.rows.remove(&row.id);
            }
        }
    }
}

impl Engine {
    /// A handle that makes a serving loop look again at once.
    pub fn waker(&self) -> Waker {
        Waker(self.signal.0.clone())
    }

    /// Run at most `n` attempts and deliveries at once under
    /// [`Engine::serve`] (default [`crate::runtime::lanes::DEFAULT_CONCURRENCY`]).
    pub fn set_concurrency(&mut self, n: usize) -> &mut Engine {
        self.concurrency = n.max(1);
        self
    }

    /// A decision taken more than this after it was due counts as late
    /// (default 100 ms): counted, and recorded in the store for `qflow stats`.
    pub fn set_late_after(&mut self, d: Duration) -> &mut Engine {
        self.late_after = d;
        self
    }

    /// What the last [`Engine::serve`] measured.
    pub fn lateness(&self) -> &Lateness {
        &self.lateness
    }

    /// Serve with the wall clock until `between` says stop: take every
    /// decision due, running attempts and deliveries on lanes (at most
    /// [`Engine::set_concurrency`] at once, at most a dependency's
    /// [`super::Handlers::concurrency`] for one task name or channel),
    /// then call `between` (which may answer calls with
    /// [`Engine::respond`], start instances, …) and wait for the next
    /// thing to do, at most `idle` (the safety poll: another process's
    /// writes are seen then). Switches the engine to [`Time::System`].
    /// When `between` says stop, the attempts in flight are waited for and
    /// decided before it returns.
    pub fn serve(
        &mut self,
        idle: Duration,
        mut between: impl FnMut(&mut Engine) -> bool,
    ) -> Result<u64, EngineError> {
        self.serve_steps(idle, |e, _| between(e))
    }

    /// [`Engine::serve`], with the decisions of each round shown to `between`.
    pub fn serve_steps(
        &mut self,
        idle: Duration,
        mut between: impl FnMut(&mut Engine, &[Step]) -> bool,
    ) -> Result<u64, EngineError> {
        self.time = Time::System;
        let Some(rx) = self.signal.1.take() else {
            return Err(EngineError::Run(RunError::Io(std::io::Error::other(
                "this engine is serving already",
            ))));
        };
        let world: Arc<dyn World + Send + Sync> = Arc::new(self.handlers.clone());
        let mut pool = Pool::new(
            world,
            self.concurrency,
            self.handlers.bounds().clone(),
            self.signal.0.clone(),
        );
        let mut flight = InFlight {
            nodes: BTreeMap::new(),
            rows: BTreeSet::new(),
        };
        let mut state = LoopState::default();
        // On PostgreSQL, what other processes commit (a start, an answer,
        // an unpause, a release) wakes the loop through LISTEN/NOTIFY on a
        // connection of its own; `idle` is then only a safety net.
        let _listener = Listener::start(&self.store, &self.owner, self.signal.0.clone());
        // A database out of reach stops the deciding, never the serving:
        // wait, try again (super::outage).
        let result = loop {
            match self.serve_loop(&rx, &mut pool, &mut flight, &mut state, idle, &mut between) {
                Err(e) if e.is_unavailable() => {
                    self.wait_out_outage(&e, &rx, &mut pool, &mut state)
                }
                other => break other,
            }
        };
        self.signal.1 = Some(rx);
        result
    }

    /// One failed try of the database: recorded in the shared health,
    /// reported, and waited out for the backoff's time while the lanes'
    /// outcomes are collected (they are decided once the store answers).
    fn wait_out_outage(
        &mut self,
        e: &EngineError,
        rx: &mpsc::Receiver<Msg>,
        pool: &mut Pool,
        state: &mut LoopState,
    ) {
        let error = e.to_string();
        let tries = self.health.down(&error);
        let wait = super::outage::reconnect_wait(&self.owner, tries);
        if let Some(report) = &mut self.on_outage {
            report(&OutageEvent::Retrying { error, tries, wait });
        }
        let until = std::time::Instant::now() + wait;
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            match rx.recv_timeout(left) {
                Ok(Msg::Done(d)) => {
                    pool.finished(&d.job);
                    state.back.push(*d);
                }
                Ok(Msg::Wake | Msg::Notified) => {}
                Err(_) => return,
            }
        }
    }

    /// Whoever is told of a database outage as it happens (a try that
    /// failed and when the next is; the store answering again): a serving
    /// process's log. Without one, the loop retries silently.
    pub fn on_store_outage(
        &mut self,
        report: impl FnMut(&OutageEvent) + Send + 'static,
    ) -> &mut Engine {
        self.on_outage = Some(Box::new(report));
        self
    }

    /// Whoever is told each time new work another process committed woke
    /// the serving loop (PostgreSQL only: a serving process's log).
    pub fn on_notified(&mut self, report: impl FnMut() + Send + 'static) -> &mut Engine {
        self.on_notified = Some(Box::new(report));
        self
    }

    /// Whoever is told of each move of a breaker this loop made (opened,
    /// half-open with its canaries, closed with its release): a serving
    /// process's log.
    pub fn on_breaker(
        &mut self,
        report: impl FnMut(&crate::store::breaker::BreakerLogged) + Send + 'static,
    ) -> &mut Engine {
        self.on_breaker = Some(Box::new(report));
        self
    }

    /// Feed the breaker of each attempt's dependency (those with one) its
    /// outcome, then let time move every breaker (at most every
    /// [`BREAKER_TICK`]; `tick`: whether that much has passed). True when
    /// a breaker moved or chose canaries: what was found held must be read
    /// afresh.
    fn breakers_step(
        &mut self,
        observed: Vec<(String, Option<i64>, crate::instance::TaskOutcome)>,
        tick: bool,
    ) -> Result<bool, EngineError> {
        if self.handlers.breakers().is_empty() {
            return Ok(false);
        }
        let mut changed = false;
        let mut applied = Vec::new();
        for (task, timer, outcome) in observed {
            if let Some(config) = self.handlers.breakers().get(&task).cloned() {
                applied.push(crate::breaker::observe(
                    &mut self.store,
                    &task,
                    &config,
                    timer,
                    &outcome,
                    system_now_ms(),
                )?);
            }
        }
        if tick {
            let all: Vec<_> = self
                .handlers
                .breakers()
                .iter()
                .map(|(d, c)| (d.clone(), c.clone()))
                .collect();
            for (dependency, config) in all {
                applied.push(crate::breaker::tick(
                    &mut self.store,
                    &dependency,
                    &config,
                    system_now_ms(),
                )?);
            }
        }
        for a in applied {
            changed |= a.chose > 0 || a.moved.is_some();
            if let (Some(m), Some(report)) = (&a.moved, &mut self.on_breaker) {
                report(m);
            }
        }
        Ok(changed)
    }

    fn notified(&mut self) {
        if let Some(report) = &mut self.on_notified {
            report();
        }
    }

    /// The store's state as the serving loop last met it: a handle a
    /// health endpoint reads (`qflow serve`'s `/ready`).
    pub fn store_health(&self) -> StoreHealth {
        self.health.clone()
    }

    /// The store answered a whole round: an outage, if there was one, is over.
    fn store_answered(&mut self) {
        if let Some(StoreState::Down {
            since_ms, tries, ..
        }) = self.health.up()
        {
            let down_for = Duration::from_millis((system_now_ms() - since_ms).max(0) as u64);
            if let Some(report) = &mut self.on_outage {
                report(&OutageEvent::Recovered { down_for, tries });
            }
        }
    }

    fn serve_loop(
        &mut self,
        rx: &mpsc::Receiver<Msg>,
        pool: &mut Pool,
        flight: &mut InFlight,
        state: &mut LoopState,
        idle: Duration,
        between: &mut impl FnMut(&mut Engine, &[Step]) -> bool,
    ) -> Result<u64, EngineError> {
        let LoopState {
            back,
            decided: n,
            stopping,
        } = state;
        // Instances looked at (under their claims) and found with nothing
        // to do now, at the version they were read at: not read again
        // until they move, what they wait for falls due, a lane frees (a
        // held attempt may start) or the loop waited.
        let mut quiet: std::collections::HashMap<String, Quiet> = Default::default();
        let mut ticked = std::time::Instant::now() - BREAKER_TICK;
        loop {
            let mut steps = Vec::new();
            // Breakers move on their own as time passes (an open time
            // over): at most every tick, whichever replica gets there.
            if ticked.elapsed() >= BREAKER_TICK && !self.handlers.breakers().is_empty() {
                ticked = std::time::Instant::now();
                if self.breakers_step(Vec::new(), true)? {
                    quiet.clear();
                }
            }
            // What came back from the lanes, and what could not be decided
            // last round (its instance was claimed for a moment).
            // A finished job frees its lane at once, but stays in flight
            // here until its outcome is applied: its in-flight record is
            // open until then, and a look at the instance meanwhile (its
            // claim was taken for a moment by another process) must not
            // read the record as an attempt nobody runs any more.
            while let Ok(msg) = rx.try_recv() {
                match msg {
                    Msg::Done(d) => {
                        pool.finished(&d.job);
                        back.push(*d);
                    }
                    // A prompt met here still means: read afresh.
                    Msg::Wake => quiet.clear(),
                    Msg::Notified => {
                        self.notified();
                        quiet.clear();
                    }
                }
            }
            let mut progressed = false;
            if !back.is_empty() {
                let outcomes = back.len();
                // What is not decided (and everything, on an error) stays
                // in `back` for the next try.
                let decided = self.decide_done_many(back, flight)?;
                progressed |= back.len() < outcomes;
                steps.extend(decided);
            }
            while let Some((instance, node)) = self.wakes.pop() {
                if let Some(s) = self.poison_wake(&instance, node)? {
                    steps.push(s);
                }
            }
            let mut next_due = None;
            if !*stopping {
                let now = system_now_ms();
                let (ids, next) = self.store.due_instances(Some(&self.owner), now, ROUND)?;
                next_due = next;
                // The hint is what `due_instances` gives (an id and its
                // version); whether the instance's work may start now is
                // read once, under its claim, by the look itself.
                let mut group = Vec::new();
                let mut lane_waiters: BTreeMap<String, usize> = BTreeMap::new();
                let mut waiters = 0;
                for (id, version) in ids {
                    match quiet.get(&id) {
                        Some(Quiet::Until { version: v, due })
                            if *v == version && due.is_none_or(|d| d > system_now_ms()) =>
                        {
                            continue;
                        }
                        // What waits for a full dependency is looked at
                        // again only as far as its lanes have room now.
                        Some(Quiet::Lane {
                            version: v,
                            dependency,
                        }) if *v == version => {
                            let here = lane_waiters.entry(dependency.clone()).or_default();
                            if !pool.free_beside(dependency, waiters, *here) {
                                continue;
                            }
                            *here += 1;
                            waiters += 1;
                        }
                        _ => {}
                    }
                    quiet.remove(&id);
                    group.push(id);
                }
                // Every due instance once, in one group: one decision or
                // hand-off each. What is still due after it (a second due
                // timer, the next branch) is picked up by the next round,
                // which follows at once.
                if !group.is_empty() {
                    let (decided, handed, idle) = self.look_many(&group, pool, flight)?;
                    progressed |= handed > 0;
                    steps.extend(decided);
                    quiet.extend(idle);
                }
            }
            self.store_answered();
            *n += steps.len() as u64;
            progressed |= !steps.is_empty();
            if !*stopping && !between(self, &steps) {
                *stopping = true;
            }
            if *stopping && pool.in_flight() == 0 && back.is_empty() {
                return Ok(*n);
            }
            if progressed && !*stopping {
                continue;
            }
            // Wait for a lane's outcome, a wake-up, the next due instant or
            // the safety poll, whichever comes first.
            let mut wait = idle;
            if let Some(due) = next_due {
                let ms = (due - system_now_ms()).max(0) as u64;
                wait = wait.min(Duration::from_millis(ms));
            }
            if !back.is_empty() {
                wait = wait.min(Duration::from_millis(5));
            }
            if !self.handlers.breakers().is_empty() {
                wait = wait.min(BREAKER_TICK);
            }
            match rx.recv_timeout(wait) {
                Ok(Msg::Done(d)) => {
                    pool.finished(&d.job);
                    back.push(*d);
                }
                // A wake-up or the safety poll: what another party wrote
                // (a pause lifted, say) is read afresh.
                Ok(Msg::Wake) | Err(mpsc::RecvTimeoutError::Timeout) => quiet.clear(),
                Ok(Msg::Notified) => {
                    self.notified();
                    quiet.clear();
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(*n),
            }
        }
    }

    /// A poison wake of `node` (its request was poisoned by a decision of
    /// this process): decided at once under the instance's claim, from the
    /// outbox as it is now. `None` when the instance finished meanwhile or
    /// was claimed elsewhere (the call's timeout recovers the same).
    fn poison_wake(&mut self, instance: &str, node: String) -> Result<Option<Step>, EngineError> {
        let Engine {
            store,
            time,
            owner,
            graphs,
            ..
        } = self;
        let time = *time;
        let taken = shell::take(
            store,
            owner,
            instance,
            |store, facts| graph_of(graphs, store, facts.deployment_id),
            |store, _graph, facts| {
                if facts.status.is_terminal() {
                    return Ok(None);
                }
                let poisoned = store.has_poisoned_request(instance, &node)?;
                let at = match clock_of(time, facts.started_ms) {
                    Time::Virtual => store
                        .last_decision_ms(instance)?
                        .unwrap_or(facts.started_ms),
                    Time::System => system_now_ms(),
                };
                Ok(Some(Choice::event(
                    Event::PoisonWake { node, poisoned },
                    at,
                )))
            },
        );
        let taken = taken?;
        self.store.release(instance, &self.owner)?;
        Ok(match taken {
            Taken::Decided(d) => {
                for n in d.poisoned_nodes() {
                    self.wakes.push((instance.to_string(), n.to_string()));
                }
                Some(Step {
                    instance: instance.to_string(),
                    decision: d,
                })
            }
            Taken::Idle | Taken::Lost { .. } => None,
        })
    }

    /// A look at many instances at once, under their claims, with group commit
    /// ([`shell::take_many`]): at most one decision or hand-off each. The
    /// in-flight records of the jobs chosen are committed together, then
    /// the decisions, and only then do the jobs go to their lanes: a round
    /// of N due instances costs three commits, not 3 N. Returns the
    /// decisions and how many jobs went to lanes.
    ///
    /// Also returns the instances found with nothing to do now, with what
    /// they wait for (read under the claim, from the same facts): the
    /// serving loop does not read them again until that changes.
    #[allow(clippy::type_complexity)]
    fn look_many(
        &mut self,
        ids: &[String],
        pool: &mut Pool,
        flight: &mut InFlight,
    ) -> Result<(Vec<Step>, usize, Vec<(String, Quiet)>), EngineError> {
        let Engine {
            store,
            handlers,
            time,
            owner,
            graphs,
            ..
        } = self;
        let time = *time;
        let mut due_of: std::collections::HashMap<String, (i64, &'static str, Option<String>)> =
            Default::default();
        let mut handed: Vec<(String, Option<String>, &'static str, i64)> = Vec::new();
        let mut jobs: Vec<Job> = Vec::new();
        let mut waits: std::collections::HashMap<String, Quiet> = Default::default();
        let taken = shell::take_many(
            store,
            owner,
            ids,
            |store, facts| graph_of(graphs, store, facts.deployment_id),
            |store, instance, graph, facts| {
                if facts.status.is_terminal() {
                    return Ok(None);
                }
                let full: std::cell::RefCell<Option<String>> = Default::default();
                let (next, due, at) = {
                    let empty = BTreeSet::new();
                    let free = |d: &str| {
                        let here = jobs.iter().filter(|j: &&Job| j.dependency() == d).count();
                        let f = pool.free_beside(d, jobs.len(), here);
                        if !f && full.borrow().is_none() {
                            *full.borrow_mut() = Some(d.to_string());
                        }
                        f
                    };
                    let view = LaneView {
                        nodes: flight.nodes.get(instance).unwrap_or(&empty),
                        rows: &flight.rows,
                        free: &free,
                    };
                    next_of(store, handlers, time, instance, owner, graph, facts, &view)?
                };
                Ok(match next {
                    Next::Idle => {
                        let wait = match full.into_inner() {
                            Some(dependency) => Quiet::Lane {
                                version: facts.version,
                                dependency,
                            },
                            None => Quiet::Until {
                                version: facts.version,
                                due,
                            },
                        };
                        waits.insert(instance.to_string(), wait);
                        None
                    }
                    Next::Dispatch(j) => {
                        if let Job::Attempt { timer: Some(_), .. } | Job::Delivery { .. } = &j {
                            let kind = if matches!(j, Job::Attempt { .. }) {
                                "attempt"
                            } else {
                                "delivery"
                            };
                            handed.push((
                                instance.to_string(),
                                Some(j.node().to_string()),
                                kind,
                                j.due_ms(),
                            ));
                        }
                        // Handed over once its record is committed.
                        jobs.push(j);
                        None
                    }
                    Next::Event(ev) => {
                        if let Event::TimerDue { timer } = &ev {
                            if let Some(t) = facts.timers.iter().find(|t| t.id == *timer) {
                                due_of.insert(
                                    instance.to_string(),
                                    (t.due_ms, "timer", Some(t.node.clone())),
                                );
                            }
                        }
                        Some((ev, at))
                    }
                })
            },
        )?;
        let handed_over = jobs.len();
        for j in jobs {
            flight.add(&j);
            pool.submit(j);
        }
        let wall = system_now_ms();
        let late_after = self.late_after.as_millis() as i64;
        for (instance, node, kind, due) in handed {
            self.measure(&instance, node, kind, due, wall, late_after)?;
        }
        let mut steps = Vec::new();
        let mut idle = Vec::new();
        for (instance, taken) in taken {
            if let Taken::Idle = taken {
                if let Some(w) = waits.remove(&instance) {
                    idle.push((instance.clone(), w));
                }
            }
            if let Taken::Decided(d) = taken {
                if let Some((due, kind, node)) = due_of.remove(&instance) {
                    self.measure(&instance, node, kind, due, wall, late_after)?;
                }
                for n in d.poisoned_nodes() {
                    self.wakes.push((instance.clone(), n.to_string()));
                }
                steps.push(Step {
                    instance,
                    decision: d,
                });
            }
        }
        Ok((steps, handed_over, idle))
    }

    /// Count one timed decision's lateness; record it when late.
    fn measure(
        &mut self,
        instance: &str,
        node: Option<String>,
        kind: &'static str,
        due_ms: i64,
        decided_ms: i64,
        late_after: i64,
    ) -> Result<(), EngineError> {
        // Instances on virtual time have no wall-clock lateness.
        if due_ms < super::engine::VIRTUAL_EPOCH_LIMIT_MS {
            return Ok(());
        }
        let late = (decided_ms - due_ms).max(0);
        let l = &mut self.lateness;
        l.decisions += 1;
        if l.samples.len() >= Lateness::KEEP {
            l.samples.remove(0);
        }
        l.samples.push(late);
        if late > late_after {
            l.late += 1;
            self.store
                .record_late(instance, node.as_deref(), kind, due_ms, decided_ms)?;
        }
        Ok(())
    }

    /// Decide what the lanes brought back, each under a fresh claim, from
    /// the facts as they are now, with group commit
    /// ([`shell::take_many`]): one outcome per instance per group. Returns
    /// the decisions; `back` keeps the outcomes to decide in a later round
    /// (their instance was claimed elsewhere for a moment, a second outcome
    /// of the same instance waits for the first) and, on an error (the
    /// database out of reach), every outcome not applied.
    fn decide_done_many(
        &mut self,
        back: &mut Vec<Done>,
        flight: &mut InFlight,
    ) -> Result<Vec<Step>, EngineError> {
        let done = std::mem::take(back);
        let mut group: BTreeMap<String, Done> = BTreeMap::new();
        let mut later = Vec::new();
        for d in done {
            let instance = d.job.instance().to_string();
            match group.entry(instance) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(d);
                }
                std::collections::btree_map::Entry::Occupied(_) => later.push(d),
            }
        }
        let ids: Vec<String> = group.keys().cloned().collect();
        let Engine {
            store,
            time,
            owner,
            graphs,
            ..
        } = self;
        let time = *time;
        let taken = shell::take_many(
            store,
            owner,
            &ids,
            |store, facts| graph_of(graphs, store, facts.deployment_id),
            |store, instance, _graph, facts| {
                if facts.status.is_terminal() {
                    return Ok(None);
                }
                let at = match clock_of(time, facts.started_ms) {
                    Time::Virtual => store
                        .last_decision_ms(instance)?
                        .unwrap_or(facts.started_ms),
                    Time::System => system_now_ms(),
                };
                Ok(event_of_done(store, instance, &group[instance])?.map(|ev| (ev, at)))
            },
        );
        let taken = match taken {
            Ok(t) => t,
            Err(e) => {
                // Nothing of the group was applied: every outcome waits.
                later.extend(group.into_values());
                *back = later;
                return Err(e.into());
            }
        };
        let mut steps = Vec::new();
        let mut observed = Vec::new();
        for (instance, taken) in taken {
            let Some(d) = group.remove(&instance) else {
                continue;
            };
            match taken {
                Taken::Decided(decision) => {
                    if let (Job::Attempt { task, timer, .. }, Outcome::Attempt(o)) =
                        (&d.job, &d.outcome)
                    {
                        observed.push((task.clone(), *timer, o.clone()));
                    }
                    flight.remove(&d.job);
                    for n in decision.poisoned_nodes() {
                        self.wakes.push((instance.clone(), n.to_string()));
                    }
                    steps.push(Step { instance, decision });
                }
                Taken::Idle => {
                    if let Job::Attempt { node, .. } = &d.job {
                        // Nothing waits for it (the instance finished): no
                        // longer in flight all the same. (Not closed — the
                        // database out of reach — it is tried next round.)
                        if let Err(e) =
                            self.store
                                .close_in_flight_of(&instance, node, system_now_ms())
                        {
                            later.push(d);
                            if e.is_unavailable() {
                                continue;
                            }
                            later.extend(group.into_values());
                            *back = later;
                            return Err(e.into());
                        }
                    }
                    flight.remove(&d.job);
                }
                Taken::Lost { .. } => later.push(d),
            }
        }
        // Claimed elsewhere at the claim: tried again next round.
        later.extend(group.into_values());
        *back = later;
        // The outcomes decided feed their breakers (each its own
        // transaction, after the attempt's decision committed); a move
        // makes the loop read what it holds afresh.
        if self.breakers_step(observed, false)? {
            let _ = self.signal.0.send(Msg::Wake);
        }
        Ok(steps)
    }
}

/// The serving loop's listener of new work on PostgreSQL: a thread with a
/// connection of its own that waits for `NOTIFY qflow_work` and turns
/// each (from another owner) into [`Msg::Notified`] on the loop's channel.
/// A lost connection is tried again on a capped backoff (the store
/// connects again and sends `LISTEN` again on its next use), and once it
/// answers the loop is prompted anyway: what was notified meanwhile was
/// lost. Stops within a second of being dropped.
struct Listener {
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Listener {
    /// `None` on SQLite (no notifications: the safety poll stays), or when
    /// no second connection could be opened now (the same).
    fn start(
        store: &crate::store::Store,
        owner: &str,
        wake: mpsc::Sender<Msg>,
    ) -> Option<Listener> {
        let mut store = store.another_connection().ok()??;
        if !store.listen_for_work().ok()? {
            return None;
        }
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (halt, owner) = (stop.clone(), owner.to_string());
        let spawned = std::thread::Builder::new()
            .name("qflow-listen".into())
            .spawn(move || {
                use std::sync::atomic::Ordering::SeqCst;
                let mut failures = 0u32;
                while !halt.load(SeqCst) {
                    match store.wait_for_work(&owner, Duration::from_secs(1)) {
                        Ok(woken) => {
                            if (woken || failures > 0) && wake.send(Msg::Notified).is_err() {
                                return;
                            }
                            failures = 0;
                        }
                        Err(_) => {
                            failures += 1;
                            let ms = (250u64 << failures.min(5)).min(5_000);
                            std::thread::sleep(Duration::from_millis(ms));
                        }
                    }
                }
            });
        spawned.ok().map(|_| Listener { stop })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How often a serving loop lets time move its breakers (an open one
/// half-opens once its open time is over): the delay a breaker's
/// half-open may take past its `open_for`, at most.
pub(super) const BREAKER_TICK: Duration = Duration::from_millis(250);

/// Why a looked-at instance had nothing to do now, at the version read.
enum Quiet {
    /// Its next work is due then (`None`: nothing without something from
    /// outside, or held: in flight here, paused, running elsewhere).
    Until { version: i64, due: Option<i64> },
    /// Its next work waits for a lane of `dependency`.
    Lane { version: i64, dependency: String },
}

/// What the serving loop keeps across a database outage (the loop itself
/// is entered again after one): outcomes from the lanes not decided yet,
/// the decisions counted, and whether the caller asked to stop.
#[derive(Default)]
struct LoopState {
    back: Vec<Done>,
    decided: u64,
    stopping: bool,
}

/// The event a lane's outcome is for `instance` now, or `None` when nothing
/// is left to decide (a delivery whose request was withdrawn meanwhile: a
/// timeout parked the call).
fn event_of_done(
    store: &crate::store::Store,
    instance: &str,
    done: &Done,
) -> Result<Option<Event>, RunError> {
    Ok(match (&done.job, &done.outcome) {
        (Job::Attempt { node, timer, .. }, Outcome::Attempt(outcome)) => Some(Event::Attempt {
            node: node.clone(),
            outcome: outcome.clone(),
            timer: *timer,
        }),
        (Job::Delivery { row, .. }, Outcome::Delivery(outcome, counterpart)) => store
            .pending_requests(instance)?
            .into_iter()
            .find(|(r, _)| r.id == row.id)
            .map(|(fresh, _)| Event::Delivery {
                row: fresh,
                outcome: outcome.clone(),
                counterpart: counterpart.clone(),
            }),
        _ => None,
    })
}

/// What `instance` does next from `facts` (read under its claim), on the
/// engine's clock, with this process's lanes as `view` shows them, when
/// what it passed over is due (on virtual time: now, if anything), and the
/// instant to decide at. The chooser of [`Engine::look_many`].
#[allow(clippy::too_many_arguments)]
fn next_of(
    store: &crate::store::Store,
    handlers: &super::Handlers,
    time: Time,
    instance: &str,
    owner: &str,
    graph: &crate::runtime::graph::Graph,
    facts: &crate::store::InstanceFacts,
    view: &LaneView<'_>,
) -> Result<(Next, Option<i64>, i64), RunError> {
    let world: &dyn World = handlers;
    Ok(match clock_of(time, facts.started_ms) {
        Time::Virtual => {
            // (The last decision's instant is virtual time's now: read
            // only on that clock.)
            let last = store
                .last_decision_ms(instance)?
                .unwrap_or(facts.started_ms);
            let clock = VirtualClock::new(last);
            let ctx = Ctx {
                store,
                graph,
                scenario: world,
                clock: &clock,
                instance,
                owner,
                started_ms: facts.started_ms,
                until_ms: None,
                effects: None,
                lanes: Some(view),
            };
            let (next, due) = ctx.next_and_due(facts)?;
            // On virtual time anything due is due now.
            (
                next,
                due.map(|_| i64::MIN),
                crate::runtime::Clock::now_ms(&clock),
            )
        }
        Time::System => {
            let ctx = Ctx {
                store,
                graph,
                scenario: world,
                clock: &SystemClock,
                instance,
                owner,
                started_ms: facts.started_ms,
                until_ms: None,
                effects: None,
                lanes: Some(view),
            };
            let (next, due) = ctx.next_and_due(facts)?;
            (next, due, system_now_ms())
        }
    })
}

fn graph_of(
    graphs: &mut BTreeMap<i64, Arc<crate::runtime::graph::Graph>>,
    store: &crate::store::Store,
    deployment: i64,
) -> Result<Arc<crate::runtime::graph::Graph>, RunError> {
    match graphs.get(&deployment) {
        Some(g) => Ok(g.clone()),
        None => {
            let g = Arc::new(deployed_graph(store, deployment)?);
            graphs.insert(deployment, g.clone());
            Ok(g)
        }
    }
}
