//! The local run loop over the shell ([`crate::shell::take`]).
//!
//! One [`LocalRun::step`] takes exactly one decision: claim the instance, read
//! its durable facts, pick the next event (a ready token, else the earliest of
//! the due timers and the scenario's external events, skipping virtual time to
//! it), run the handler if the event is an attempt, decide, and apply the
//! transition in one transaction. Nothing in a step sleeps: with the system
//! clock a timer that is not due yet ends the step, and the caller's poller
//! looks again at [`LocalRun::next_due_ms`].
//!
//! The console steps an instance with the same API, one decision at a time,
//! and reads its panels from [`LocalRun::store`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::clock::Clock;
use crate::decide;
use crate::graph::{Graph, GraphError, Kind};
use crate::lanes::{Job, LaneView};
use crate::scenario::{ExternalEvent, Scenario};
use crate::shell::{self, deployed_graph, Choice};
use crate::snapshot::TokenState;
use crate::world::{AttemptCall, DeliveryCall, World};
use qflow_instance::history::{Delivered, HistoryEvent, Verdict as Said};
use qflow_instance::{Event, OutboxRow, Purpose, TimerRow};
use qflow_model::model::Definitions;
use qflow_store::{local_owner, InstanceFacts, Store, StoreError};

pub use crate::shell::Decision;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the model cannot run: {0}")]
    Graph(#[from] GraphError),
    #[error(transparent)]
    Migrate(crate::migrate::MigrateError),
    #[error("effects log: {0}")]
    Io(#[from] std::io::Error),
    #[error(
        "instance {instance} took {decisions} decisions at virtual time +{at_s}s without time moving (last at `{node}`): \
         a loop that never waits? Give the loop an exit the world can reach, or a wait (a timer, a call) inside it; \
         the instance is kept as it is in the store"
    )]
    Livelock {
        instance: String,
        decisions: u32,
        at_s: i64,
        node: String,
    },
}

/// How many decisions one instance may take at one virtual instant before the
/// run stops as a livelock: a loop with no wait inside it never lets time
/// move, and would otherwise spin the run (and the console) forever.
pub const MAX_DECISIONS_PER_INSTANT: u32 = 1_000;

/// How far past where it began a run on the virtual clock decides before it
/// stops, unless told otherwise (`qflow run --until`): 30 days of virtual
/// time. Long enough for any retry schedule a sample or a policy within the
/// rules' advice spells out (DBG-08's six attempts take 13 hours); short
/// enough that a process that never ends (a loop the world never lets out,
/// waiting a day each round) stops in moments, parked, so a later run of the
/// same database continues it.
pub const DEFAULT_HORIZON: Duration = Duration::from_secs(30 * 24 * 3600);

/// How many times a run lets an instance come back to a state it was in
/// (the same snapshot bytes after a decision that changed them) before it
/// stops: the rounds of a loop that make no progress. A loop whose scripted
/// world answers the same every time would otherwise run to the horizon,
/// round after identical round.
pub const MAX_RETURNS_TO_A_STATE: u32 = 100;

/// Why a run stopped deciding although the instance has more to do. The
/// instance is left as it is, parked: a later run of the same database (or
/// `qflow resume`) continues it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The next thing due lies past the run's horizon ([`LocalRun::stop_after`]):
    /// `horizon_ms` and `due_ms` are virtual time since the instance started.
    Horizon { horizon_ms: i64, due_ms: i64 },
    /// The instance came back to the same state `returns` times
    /// ([`LocalRun::bound_rounds`]); `node` is where the last round's
    /// decision was taken, `at_ms` when (since the instance started).
    NoProgress {
        returns: u32,
        node: String,
        at_ms: i64,
    },
    /// Nothing is due because a pause holds the instance's retry park: it
    /// waits for `qflow unpause`, not for time, so running it again does
    /// nothing until then. `node`'s park falls due at `due_ms` (virtual
    /// time since the instance started, kept through the pause); the pause
    /// is `kind` `value` (`class transient`, `dependency payments.charge`).
    Held {
        node: String,
        due_ms: i64,
        kind: qflow_store::contain::PauseKind,
        value: String,
    },
}

/// A local run of one instance.
pub struct LocalRun<C: Clock> {
    store: Store,
    graph: Graph,
    /// The world the outcomes come from: a scenario, or real handlers.
    world: Box<dyn World>,
    clock: C,
    instance: String,
    owner: String,
    started_ms: i64,
    resumed: bool,
    /// Virtual time (since the start) past which the run stops deciding.
    until_ms: Option<i64>,
    first: Option<Decision>,
    effects: Option<std::path::PathBuf>,
    /// Best-effort in-process poison wakes (lost on a crash: the timeout
    /// boundary recovers the same condition).
    wakes: Vec<String>,
    /// The virtual instant of the last decision and how many were taken at it.
    instant: (i64, u32),
    /// The rounds without progress a run allows (`None`: unbounded, as the
    /// console steps by hand), the states seen (a hash of the snapshot
    /// bytes: how often the instance came back to it, and when it was first
    /// there), the last one,
    /// and the stop once the bound is reached.
    rounds: Option<u32>,
    states: std::collections::HashMap<u64, (u32, i64)>,
    last_state: Option<u64>,
    no_progress: Option<Stop>,
}

enum Cand {
    Ready(String),
    Delivery(OutboxRow),
    Timer(TimerRow),
    Response(String, String, Value),
    Scenario(usize),
}

/// What the chooser found for one instance: an event to decide, a job for a
/// lane, or nothing now.
pub enum Next {
    Event(Event),
    /// An attempt or a delivery for a lane (only with a [`LaneView`]).
    Dispatch(Job),
    Idle,
}

impl<C: Clock> LocalRun<C> {
    /// Deploy the model and start an instance, or resume the unfinished
    /// instance of the same deployment (same source hash) if the store has one.
    pub fn open(
        store: Store,
        source: &str,
        defs: &Definitions,
        scenario: Scenario,
        clock: C,
    ) -> Result<LocalRun<C>, RunError> {
        let variables = scenario.variables.clone();
        LocalRun::open_in(store, source, defs, &variables, Box::new(scenario), clock)
    }

    /// [`LocalRun::open`] in any world (real handlers, say): a new
    /// instance starts with `variables`.
    pub fn open_in(
        mut store: Store,
        source: &str,
        defs: &Definitions,
        variables: &BTreeMap<String, Value>,
        world: Box<dyn World>,
        clock: C,
    ) -> Result<LocalRun<C>, RunError> {
        let graph = Graph::compile(defs)?;
        let now = clock.now_ms();
        // A deployment's time is a wall-clock fact, whatever clock the run has.
        let dep = store.deploy(&graph.process_id, source, crate::clock::system_now_ms())?;
        let start = decide::start(&graph, variables, now);
        let (instance, created) = store.create_instance(&dep, &start, now)?;
        let row = store
            .instance(&instance)?
            .ok_or_else(|| StoreError::NoInstance(instance.clone()))?;
        if !created {
            // Time on a resumed instance continues from its last decision.
            let last = store
                .transitions(&instance)?
                .last()
                .map_or(row.started_ms, |t| t.at_ms);
            clock.observe(last);
        }
        let first = created.then(|| Decision::of(0, now, &start));
        Ok(LocalRun {
            store,
            graph,
            world,
            clock,
            instance,
            owner: local_owner(),
            started_ms: row.started_ms,
            resumed: !created,
            until_ms: None,
            first,
            effects: None,
            wakes: Vec::new(),
            instant: (i64::MIN, 0),
            rounds: None,
            states: Default::default(),
            last_state: None,
            no_progress: None,
        })
    }

    /// Continue an existing instance by id, on the deployment it is pinned
    /// to (a repaired or parked instance: `qflow resume`). Virtual time
    /// continues from its last decision.
    pub fn attach(
        store: Store,
        instance: &str,
        scenario: Scenario,
        clock: C,
    ) -> Result<LocalRun<C>, RunError> {
        LocalRun::attach_in(store, instance, Box::new(scenario), clock)
    }

    /// [`LocalRun::attach`] in any world.
    pub fn attach_in(
        store: Store,
        instance: &str,
        world: Box<dyn World>,
        clock: C,
    ) -> Result<LocalRun<C>, RunError> {
        let row = store
            .instance(instance)?
            .ok_or_else(|| StoreError::NoInstance(instance.into()))?;
        let graph = deployed_graph(&store, row.deployment_id)?;
        let last = store.last_decision_ms(instance)?.unwrap_or(row.started_ms);
        clock.observe(last);
        Ok(LocalRun {
            store,
            graph,
            world,
            clock,
            instance: instance.to_string(),
            owner: local_owner(),
            started_ms: row.started_ms,
            resumed: true,
            until_ms: None,
            first: None,
            effects: None,
            wakes: Vec::new(),
            instant: (i64::MIN, 0),
            rounds: None,
            states: Default::default(),
            last_state: None,
            no_progress: None,
        })
    }

    /// Stop deciding past this much virtual time since the instance started.
    pub fn stop_after(&mut self, d: Duration) {
        self.until_ms = Some(d.as_millis().min(i64::MAX as u128) as i64);
    }

    /// Stop deciding `d` past where this run begins (the instance's start,
    /// or its last decision when resumed): the horizon of a virtual-clock
    /// run ([`DEFAULT_HORIZON`]), so a resumed run goes as far again.
    pub fn stop_after_from_now(&mut self, d: Duration) {
        let begun = (self.clock.now_ms() - self.started_ms).max(0) as u128;
        self.until_ms = Some((begun + d.as_millis()).min(i64::MAX as u128) as i64);
    }

    /// Whether the run stopped on its bound of rounds without progress: it
    /// decides nothing more, whatever is due.
    pub fn stalled(&self) -> bool {
        self.no_progress.is_some()
    }

    /// Whether an event due at `due_ms` (on the run's clock) lies past the
    /// run's horizon: the run stops before it.
    pub fn stops_before(&self, due_ms: i64) -> bool {
        self.until_ms.is_some_and(|u| due_ms - self.started_ms > u)
    }

    /// Stop once the instance has come back to one state `returns` times
    /// ([`MAX_RETURNS_TO_A_STATE`] for `qflow run`).
    pub fn bound_rounds(&mut self, returns: u32) {
        self.rounds = Some(returns);
    }

    /// Why the run stopped with more to do, if it did: the bound on rounds
    /// without progress, or the next thing due past the horizon.
    pub fn stopped(&self) -> Result<Option<Stop>, RunError> {
        if let Some(stop) = &self.no_progress {
            return Ok(Some(stop.clone()));
        }
        let due = self.next_due_ms()?;
        if let (Some(horizon_ms), Some(due)) = (self.until_ms, due) {
            let due_ms = due - self.started_ms;
            if due_ms > horizon_ms {
                return Ok(Some(Stop::Horizon { horizon_ms, due_ms }));
            }
        }
        if due.is_some() {
            return Ok(None);
        }
        // Nothing due: a held retry park is why, if there is one.
        let held = self.store.containment(&self.instance)?.held;
        Ok(held.into_iter().next().map(|h| Stop::Held {
            node: h.node,
            due_ms: h.due_ms - self.started_ms,
            kind: h.kind,
            value: h.value,
        }))
    }

    /// Count a state the instance reached (its snapshot bytes after a
    /// decision): a state it comes back to is one round without progress.
    fn count_round(&mut self, d: &Decision) -> Result<(), RunError> {
        let Some(bound) = self.rounds else {
            return Ok(());
        };
        let Some(row) = self.store.instance(&self.instance)? else {
            return Ok(());
        };
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        row.snapshot.hash(&mut h);
        row.status.as_str().hash(&mut h);
        let state = h.finish();
        if self.last_state == Some(state) {
            return Ok(());
        }
        self.last_state = Some(state);
        let (seen, first_ms) = self.states.entry(state).or_insert((0, d.at_ms));
        *seen += 1;
        // The first visit is not a return. Rounds at one instant are the
        // livelock guard's (time never moves: an error, not a parked stop).
        if *seen > bound && d.at_ms > *first_ms {
            let node = d
                .events
                .iter()
                .find_map(|l| l.node.clone())
                .unwrap_or_else(|| "?".into());
            self.no_progress = Some(Stop::NoProgress {
                returns: *seen - 1,
                node,
                at_ms: d.at_ms - self.started_ms,
            });
        }
        Ok(())
    }

    pub fn instance_id(&self) -> &str {
        &self.instance
    }

    /// Whether an unfinished instance was resumed rather than started.
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    pub fn started_ms(&self) -> i64 {
        self.started_ms
    }

    /// The start decision, once, if this run created the instance.
    pub fn take_start(&mut self) -> Option<Decision> {
        self.first.take()
    }

    /// Deliver an event from outside now (e.g. `--resolve`).
    pub fn deliver(&mut self, event: ExternalEvent) -> Result<Decision, RunError> {
        let clock = &self.clock;
        let taken = shell::take(
            &mut self.store,
            &self.owner,
            &self.instance,
            |_, _| Ok(&self.graph),
            |_, _, _| {
                let ev = Event::External { event, index: None };
                Ok(Some(Choice::event(ev, clock.now_ms())))
            },
        )?;
        Ok(taken
            .or_lost()?
            .expect("an external event is always decided"))
    }

    /// Take one decision; `None` when nothing can be decided now (finished,
    /// waiting on something outside, a timer not yet due on the system clock,
    /// or the `stop_after` limit).
    pub fn step(&mut self) -> Result<Option<Decision>, RunError> {
        if let Some(d) = self.first.take() {
            return Ok(Some(d));
        }
        if self.no_progress.is_some() {
            return Ok(None);
        }
        let wake = self.wakes.pop();
        let mut woken = false;
        let (scenario, clock, instance) = (&*self.world, &self.clock, self.instance.as_str());
        let owner = self.owner.as_str();
        let (started_ms, until_ms, effects) =
            (self.started_ms, self.until_ms, self.effects.as_deref());
        let taken = shell::take(
            &mut self.store,
            &self.owner,
            &self.instance,
            |_, _| Ok(&self.graph),
            |store, graph, facts| {
                // A poison wake is a prompt: re-read the outbox under the
                // claim and let the decision act only on what is there.
                if let Some(node) = wake {
                    if !facts.status.is_terminal() {
                        woken = true;
                        let poisoned = store.has_poisoned_request(instance, &node)?;
                        let ev = Event::PoisonWake { node, poisoned };
                        return Ok(Some(Choice::event(ev, clock.now_ms())));
                    }
                }
                let ctx = Ctx {
                    store,
                    graph,
                    scenario,
                    clock,
                    instance,
                    owner,
                    started_ms,
                    until_ms,
                    effects,
                    lanes: None,
                };
                Ok(match ctx.next_event(facts)? {
                    Next::Idle | Next::Dispatch(_) => None,
                    Next::Event(ev) => Some(Choice::event(ev, clock.now_ms())),
                })
            },
        )?;
        // A decision refused at the apply keeps its in-flight record (its
        // handler's outcome is unrecorded); an applied attempt closes it.
        let records = self.world.records_in_flight();
        let Some(d) = taken.or_lost()? else {
            return Ok(None);
        };
        if records && d.events.iter().any(|l| l.event.kind() == "attempt") {
            self.store.close_in_flight(&self.instance, d.at_ms)?;
        }
        if woken {
            return Ok(Some(d));
        }
        self.instant = match self.instant {
            (at, n) if at == d.at_ms => (at, n + 1),
            _ => (d.at_ms, 1),
        };
        if self.instant.1 > MAX_DECISIONS_PER_INSTANT {
            let node = d
                .events
                .iter()
                .find_map(|l| l.node.clone())
                .unwrap_or_else(|| "?".into());
            return Err(RunError::Livelock {
                instance: self.instance.clone(),
                decisions: self.instant.1 - 1,
                at_s: (d.at_ms - self.started_ms) / 1000,
                node,
            });
        }
        self.wakes
            .extend(d.poisoned_nodes().map(str::to_string).collect::<Vec<_>>());
        self.count_round(&d)?;
        Ok(Some(d))
    }

    /// Step until nothing more can be decided, reporting each decision.
    pub fn run(&mut self, mut on_decision: impl FnMut(&Decision)) -> Result<(), RunError> {
        while let Some(d) = self.step()? {
            on_decision(&d);
        }
        Ok(())
    }

    /// Give the claim up; call when the run ends.
    pub fn release(&mut self) -> Result<(), RunError> {
        Ok(self.store.release(&self.instance, &self.owner)?)
    }

    /// Append one line per handler run to this file (`instance node attempt
    /// timer`): the effects a real handler would have had, to compare with
    /// the attempts the history recorded.
    pub fn log_effects(&mut self, path: &std::path::Path) {
        self.effects = Some(path.to_path_buf());
    }

    /// When the instance is next due to decide something (on the run's
    /// clock): a ready token or a poison wake (now), a delivery on the
    /// channel's curve, a timer, a counterpart's response, a scenario event.
    /// `None`: nothing will be due without something from outside. A
    /// real-clock poller sleeps until this instant; it is the same answer
    /// the step takes its event from, so both clocks decide alike.
    pub fn next_due_ms(&self) -> Result<Option<i64>, RunError> {
        if self.first.is_some() || !self.wakes.is_empty() {
            return Ok(Some(self.clock.now_ms()));
        }
        let facts = self.store.facts(&self.instance)?;
        let ctx = Ctx {
            store: &self.store,
            graph: &self.graph,
            scenario: &*self.world,
            clock: &self.clock,
            instance: &self.instance,
            owner: &self.owner,
            started_ms: self.started_ms,
            until_ms: self.until_ms,
            effects: None,
            lanes: None,
        };
        Ok(ctx.earliest(&facts)?.map(|(due, _)| due))
    }

    /// The store, the graph, the instance and the clock at once, for an
    /// operator's action taken through the shell (`qflow_engine::operate`).
    pub fn parts_mut(&mut self) -> (&mut Store, &Graph, &str, &C) {
        (&mut self.store, &self.graph, &self.instance, &self.clock)
    }
}

/// What choosing the next event of one instance reads.
/// (Read by the serving loop of `qflow_engine::embed` too.)
pub struct Ctx<'a, C: Clock> {
    pub store: &'a Store,
    pub graph: &'a Graph,
    /// The world the outcomes come from (a scenario, or real handlers).
    pub scenario: &'a dyn World,
    pub clock: &'a C,
    pub instance: &'a str,
    /// Who decides (an engine's owner name): an attempt in flight under
    /// another live owner is running, under this one only on its lanes.
    pub owner: &'a str,
    pub started_ms: i64,
    pub until_ms: Option<i64>,
    pub effects: Option<&'a std::path::Path>,
    /// A serving process's lanes: attempts and deliveries are handed back
    /// as [`Next::Dispatch`] instead of run here, and what its lanes hold
    /// is not due again.
    pub lanes: Option<&'a LaneView<'a>>,
}

impl<C: Clock> Ctx<'_, C> {
    /// Scenario events not yet delivered, with their due time (`None`: idle).
    fn pending_event(&self) -> Result<Option<(usize, Option<i64>)>, RunError> {
        let events = self.scenario.events();
        if events.is_empty() {
            return Ok(None);
        }
        let done = self.store.delivered_events(self.instance)?;
        Ok(events
            .iter()
            .enumerate()
            .find(|(i, _)| !done.contains(i))
            .map(|(i, e)| (i, e.at.map(|a| self.started_ms + a.as_millis() as i64))))
    }

    /// An attempt of the registered task at `node` is due (its token ready,
    /// or `timer`, its retry timer, due at `due`): the event deciding its
    /// outcome (the handler run here), the interrupted attempt a dead
    /// process left, or with lanes the job to hand to one.
    fn attempt(
        &self,
        facts: &InstanceFacts,
        node: &str,
        timer: Option<i64>,
        due: i64,
    ) -> Result<Next, RunError> {
        let task = match self.graph.node(node).map(|n| &n.kind) {
            Some(Kind::Task { task, .. }) => task.clone(),
            _ => String::new(),
        };
        let runs = self.store.handler_runs(self.instance, &task)?;
        let attempt = facts.snapshot.attempts(node) + 1;
        let wall = crate::clock::system_now_ms();
        if self.scenario.records_in_flight() {
            // An attempt recorded as started whose process can no longer
            // report it never had its outcome applied: it died mid-attempt.
            if let Some(f) = self.store.in_flight(self.instance, node)? {
                let here = self.lanes.is_some_and(|l| l.nodes.contains(node));
                if f.orphaned(self.owner, facts.version, here, wall) {
                    return Ok(Next::Event(Event::Attempt {
                        node: node.to_string(),
                        outcome: qflow_instance::codes::handler::interrupted(&task, f.attempt),
                        timer,
                    }));
                }
            }
        }
        let lease = self.scenario.attempt_lease(&task).map(|lease| {
            wall + lease.as_millis().min(i64::MAX as u128 / 2) as i64 + qflow_store::CLAIM_TTL_MS
        });
        if self.lanes.is_none() {
            if let Some(until) = lease {
                // The attempt's outcome must find the claim still held.
                self.store.extend_claim(self.instance, until)?;
            }
        }
        if let Some(path) = self.effects {
            use std::io::Write;
            let line = format!(
                "{} {node} {} {}\n",
                self.instance,
                runs + 1,
                timer.unwrap_or(0)
            );
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            f.write_all(line.as_bytes())?;
        }
        // The attempt's idempotency key: from the store's key ledger when
        // the attempt is recorded (never given twice), else its number.
        let mut key = attempt;
        if self.scenario.records_in_flight() {
            key = match (self.lanes, lease) {
                (Some(_), Some(until)) => self.store.open_in_flight_by(
                    self.owner,
                    self.instance,
                    node,
                    attempt,
                    facts.version,
                    self.clock.now_ms(),
                    wall,
                    until,
                )?,
                _ => self.store.open_in_flight(
                    self.instance,
                    node,
                    attempt,
                    facts.version,
                    self.clock.now_ms(),
                    wall,
                )?,
            };
        }
        let key = format!("{}/{node}/{key}", self.instance);
        let variables = facts.snapshot.variables();
        if self.lanes.is_some() {
            return Ok(Next::Dispatch(Job::Attempt {
                instance: self.instance.to_string(),
                node: node.to_string(),
                task,
                attempt,
                key,
                runs,
                variables,
                timer,
                due_ms: due,
            }));
        }
        let call = AttemptCall {
            instance: self.instance,
            node,
            task: &task,
            attempt,
            key: &key,
            runs,
            variables: &variables,
        };
        Ok(Next::Event(Event::Attempt {
            node: node.to_string(),
            outcome: self.scenario.attempt(&call),
            timer,
        }))
    }

    /// Whether no new attempt of the registered task at `node` may start
    /// now: one runs already (on a lane of this process, or of a live
    /// process elsewhere, by its open in-flight record), its dependency is
    /// paused, or the dependency's lanes are all taken.
    fn task_held(
        &self,
        facts: &InstanceFacts,
        node: &str,
        paused: &std::collections::BTreeSet<String>,
    ) -> Result<bool, RunError> {
        let Some(Kind::Task {
            task, call: None, ..
        }) = self.graph.node(node).map(|n| &n.kind)
        else {
            return Ok(false);
        };
        if paused.contains(task) {
            return Ok(true);
        }
        if let Some(l) = self.lanes {
            if l.nodes.contains(node) {
                return Ok(true);
            }
        }
        if self.scenario.records_in_flight() {
            if let Some(f) = self.store.in_flight(self.instance, node)? {
                let wall = crate::clock::system_now_ms();
                if f.running(self.owner, false, wall) {
                    return Ok(true);
                }
                // An orphan is decided at once (no lane needed).
                if f.orphaned(self.owner, facts.version, false, wall) {
                    return Ok(false);
                }
            }
        }
        Ok(self.lanes.is_some_and(|l| !(l.free)(task)))
    }

    /// Whether the outbox row may not be delivered now: a lane of this
    /// process delivers it already, its channel is paused, or the
    /// channel's lanes are all taken.
    fn row_held(&self, row: &OutboxRow, paused: &std::collections::BTreeSet<String>) -> bool {
        paused.contains(&row.channel)
            || self
                .lanes
                .is_some_and(|l| l.rows.contains(&row.id) || !(l.free)(&row.channel))
    }

    /// What the instance is due to decide next, and when: a ready token
    /// (now); else the earliest of a due delivery, a timer, a counterpart's
    /// response and a scenario event (ties in that order). A finished
    /// instance still hears late responses and scenario events. `None`:
    /// nothing will ever be due without something from outside.
    ///
    /// Both [`Ctx::next_event`] (which takes it when time reaches it) and a
    /// real-clock poller ([`LocalRun::next_due_ms`], which sleeps until it)
    /// read this one answer, so both clocks decide the same things in the
    /// same order. What may not start now is passed over: an attempt or a
    /// delivery already running, or to a paused dependency (its first
    /// attempts, its retries and its deliveries wait for the unpause), or
    /// with lanes to a dependency whose lanes are all taken.
    fn earliest(&self, facts: &InstanceFacts) -> Result<Option<(i64, Cand)>, RunError> {
        let pending = self.pending_event()?;
        let now = self.clock.now_ms();
        if facts.status.is_terminal() {
            // Late events still arrive, and are recorded as having no effect;
            // a late response gets the honest verdict.
            if let Some((due, node, request, body)) = self.pending_response()? {
                if pending.is_none_or(|(_, at)| at.is_some_and(|a| due <= a)) {
                    return Ok(Some((due, Cand::Response(node, request, body))));
                }
            }
            return Ok(pending.map(|(i, at)| (at.unwrap_or(now), Cand::Scenario(i))));
        }
        let paused = self.store.paused_dependencies()?;
        for t in facts.snapshot.frontier() {
            if t.state == TokenState::Ready && !self.task_held(facts, &t.node, &paused)? {
                return Ok(Some((now, Cand::Ready(t.node))));
            }
        }
        let mut best: Option<(i64, u8, Cand)> = None;
        let mut offer = |due: i64, rank: u8, c: Cand| {
            if best.as_ref().is_none_or(|(d, r, _)| (due, rank) < (*d, *r)) {
                best = Some((due, rank, c));
            }
        };
        if let Some((row, next)) = self
            .store
            .pending_requests(self.instance)?
            .into_iter()
            .find(|(row, _)| !self.row_held(row, &paused))
        {
            offer(next, 0, Cand::Delivery(row));
        }
        // A paused park keeps its timer and its due time, but is not re-driven.
        let unpaused = std::collections::BTreeSet::new();
        for t in facts.timers.iter().filter(|t| !facts.held.contains(&t.id)) {
            // A breaker's canary goes through its dependency's pause.
            let paused = if facts.canaries.contains(&t.id) {
                &unpaused
            } else {
                &paused
            };
            if t.purpose == Purpose::Retry && self.task_held(facts, &t.node, paused)? {
                continue;
            }
            offer(t.due_ms, 1, Cand::Timer(t.clone()));
            break;
        }
        if let Some((due, node, key, body)) = self.pending_response()? {
            offer(due, 2, Cand::Response(node, key, body));
        }
        if let Some((i, at)) = pending {
            offer(at.unwrap_or(now), 3, Cand::Scenario(i));
        }
        Ok(best.map(|(due, _, c)| (due, c)))
    }

    /// When the next thing [`Ctx::next_event`] would take is due (a ready
    /// token: now), reading only.
    pub fn due_at(&self, facts: &InstanceFacts) -> Result<Option<i64>, RunError> {
        Ok(self.earliest(facts)?.map(|(due, _)| due))
    }

    pub fn next_event(&self, facts: &InstanceFacts) -> Result<Next, RunError> {
        Ok(self.next_and_due(facts)?.0)
    }

    /// [`Ctx::next_event`], and when what it passed over for now is due
    /// ([`Ctx::due_at`] from the same reads): a serving loop that finds
    /// nothing to do yet knows when to look again without reading twice.
    pub fn next_and_due(&self, facts: &InstanceFacts) -> Result<(Next, Option<i64>), RunError> {
        let Some((due, cand)) = self.earliest(facts)? else {
            return Ok((Next::Idle, None));
        };
        // A ready token runs now; anything else when time reaches it.
        if !matches!(cand, Cand::Ready(_)) && !self.reach(due) {
            return Ok((Next::Idle, Some(due)));
        }
        Ok((self.take(facts, due, cand)?, Some(due)))
    }

    fn take(&self, facts: &InstanceFacts, due: i64, cand: Cand) -> Result<Next, RunError> {
        Ok(Next::Event(match cand {
            Cand::Ready(node) if self.is_registered_task(&node) => {
                let since = self.ready_since(facts);
                return self.attempt(facts, &node, None, since);
            }
            Cand::Ready(node) => Event::Advance { node },
            Cand::Delivery(row) => return self.delivery(facts, row, due),
            Cand::Timer(t) if t.purpose == Purpose::Retry && self.is_registered_task(&t.node) => {
                return self.attempt(facts, &t.node, Some(t.id), t.due_ms)
            }
            Cand::Timer(t) => Event::TimerDue { timer: t.id },
            Cand::Response(node, request, body) => Event::Response {
                node,
                request,
                body,
            },
            Cand::Scenario(i) => Event::External {
                event: self.scenario.events()[i].event.clone(),
                index: Some(i),
            },
        }))
    }

    /// Since when a ready token has waited: the instance's last decision.
    fn ready_since(&self, facts: &InstanceFacts) -> i64 {
        self.store
            .last_decision_ms(self.instance)
            .ok()
            .flatten()
            .unwrap_or(facts.started_ms)
    }

    fn is_registered_task(&self, node: &str) -> bool {
        matches!(
            self.graph.node(node).map(|n| &n.kind),
            Some(Kind::Task { call: None, .. })
        )
    }

    /// The dispatcher's next delivery of a request, with the scenario's
    /// outcome for it (`deliveries.<channel>`, one entry per delivery) and, if
    /// it gets through, the counterpart's (`channels.<channel>`, one entry per
    /// delivered request); both counted from the durable history. With
    /// lanes, the job that delivers it.
    fn delivery(&self, facts: &InstanceFacts, row: OutboxRow, due: i64) -> Result<Next, RunError> {
        let (mut tried, mut delivered) = (0, 0);
        for h in self.store.history(self.instance)? {
            if let Some(HistoryEvent::Delivery {
                channel, outcome, ..
            }) = h.line().map(|l| l.event)
            {
                if channel == row.channel {
                    tried += 1;
                    if outcome == Delivered::Delivered {
                        delivered += 1;
                    }
                }
            }
        }
        let body = self
            .store
            .request_payload(row.id)?
            .unwrap_or_else(|| Value::Object(facts.snapshot.variables().into_iter().collect()));
        let correlation = format!("{}/{}", self.instance, row.node);
        if self.lanes.is_some() {
            return Ok(Next::Dispatch(Job::Delivery {
                instance: self.instance.to_string(),
                row,
                correlation,
                tried,
                delivered,
                body,
                due_ms: due,
            }));
        }
        let (outcome, counterpart) = self.scenario.deliver(&DeliveryCall {
            instance: self.instance,
            node: &row.node,
            channel: &row.channel,
            idempotency_key: &row.idempotency_key,
            correlation: &correlation,
            attempt: row.attempt,
            tried,
            delivered,
            body: &body,
        });
        Ok(Next::Event(Event::Delivery {
            row,
            outcome,
            counterpart,
        }))
    }

    /// The earliest counterpart response scheduled by a delivery and not yet
    /// delivered to the instance: (due, node, request key, body).
    fn pending_response(&self) -> Result<Option<(i64, String, String, Value)>, RunError> {
        if !self.scenario.scripts_answers() {
            return Ok(None);
        }
        let lines: Vec<_> = self
            .store
            .history(self.instance)?
            .iter()
            .filter_map(|h| h.line())
            .collect();
        let answered: std::collections::BTreeSet<&str> = lines
            .iter()
            .filter_map(|l| match &l.event {
                HistoryEvent::Response {
                    idempotency_key, ..
                } => Some(idempotency_key.as_str()),
                _ => None,
            })
            .collect();
        let mut best: Option<(i64, String, String, Value)> = None;
        for l in &lines {
            let HistoryEvent::Delivery {
                respond_at_s: Some(at),
                idempotency_key: key,
                response,
                ..
            } = &l.event
            else {
                continue;
            };
            if answered.contains(key.as_str()) {
                continue;
            }
            let due = self.started_ms + at.ms();
            if best.as_ref().is_none_or(|b| due < b.0) {
                let node = l.node.clone().unwrap_or_default();
                let body = response.clone().unwrap_or(Value::Null);
                best = Some((due, node, key.clone(), body));
            }
        }
        Ok(best)
    }

    /// Whether time is (or may be moved) at `due`, within `stop_after`.
    fn reach(&self, due: i64) -> bool {
        if self.until_ms.is_some_and(|u| due - self.started_ms > u) {
            return false;
        }
        due <= self.clock.now_ms() || self.clock.skip_to(due)
    }
}

/// What a counterpart hears back when its response is delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The node was waiting on a live attempt: the flow resumed.
    Accepted,
    /// The node is in a backoff window: "that attempt is gone, a retry is
    /// pending". The correlation stays live for the retry's response.
    RetryPending,
    /// The response names an earlier attempt's request, which a re-drive
    /// replaced by attempt `live`: refused, the flow untouched, the
    /// correlation live for the live attempt's answer.
    Superseded { live: u32 },
    /// The response names a request no attempt of the call was sent with.
    UnknownRequest,
    /// The instance is FAILED (the honest answer, not a 404).
    Failed,
    /// The instance completed, or the node is not waiting for a response.
    NotWaiting(String),
    /// No instance of that name (an existing one whose node has no live
    /// correlation is [`Verdict::NotWaiting`], or [`Verdict::Failed`]).
    NoSuchInstance,
    /// The instance is quarantined: nothing is decided for it, an answer
    /// neither, until an operator releases it. Nothing changed; the
    /// correlation stays live, so the same answer sent after the release
    /// is decided then.
    Quarantined,
}

/// The honest verdict for an answer with no live correlation: an instance
/// that exists is not "no such instance" (as a FAILED one is `failed`):
/// its node is not waiting, because it was answered already, is not
/// reached yet, or is not in the model (a typo, with the closest id).
/// Only a key naming no instance at all is [`Verdict::NoSuchInstance`].
pub fn no_live_correlation(store: &Store, correlation: &str) -> Result<Verdict, RunError> {
    let Some((instance, node)) = correlation.rsplit_once('/') else {
        // An instance's id alone: the node is missing, not the instance.
        if store.instance(correlation)?.is_none() {
            return Ok(Verdict::NoSuchInstance);
        }
        let waiting: Vec<String> = store
            .correlations(correlation)?
            .into_iter()
            .map(|c| format!("{correlation}/{}", c.node))
            .collect();
        return Ok(Verdict::NotWaiting(if waiting.is_empty() {
            format!("a correlation is INSTANCE/NODE, and no call of instance {correlation} waits for an answer")
        } else {
            format!(
                "a correlation is INSTANCE/NODE: {} waits for an answer",
                waiting.join(", ")
            )
        }));
    };
    let Some(row) = store.instance(instance)? else {
        return Ok(Verdict::NoSuchInstance);
    };
    if row.status == crate::Status::Failed {
        return Ok(Verdict::Failed);
    }
    let graph = shell::deployed_graph(store, row.deployment_id)?;
    if graph.node(node).is_none() {
        let hint = qflow_model::suggest::closest(node, graph.nodes.keys().map(String::as_str))
            .map(|s| format!(" (did you mean {instance}/{s}?)"))
            .unwrap_or_default();
        return Ok(Verdict::NotWaiting(format!(
            "instance {instance} has no node {node}{hint}"
        )));
    }
    Ok(Verdict::NotWaiting(
        if row.status == crate::Status::Completed {
            format!("instance {instance} completed")
        } else {
            format!("no call of {node} waits for an answer: it was answered already, or is not reached yet")
        },
    ))
}

/// Deliver a counterpart's response by correlation key (`instance/node`):
/// decided under the instance claim from durable facts and applied in one
/// transaction; the verdict says what happened. `request` is the idempotency
/// key of the request it answers, or empty when the counterpart sent none
/// (then the correlation alone decides, as in docs/runtime.md's table).
pub fn respond(
    store: &mut Store,
    correlation: &str,
    request: &str,
    body: serde_json::Value,
    now_ms: i64,
) -> Result<(Verdict, Option<Decision>), RunError> {
    respond_as(store, &local_owner(), correlation, request, body, now_ms)
}

/// [`respond`] under the claim of `owner` (a server's endpoint thread is
/// an owner of its own, so the claim arbitrates it against the thread
/// that drives the instances).
pub fn respond_as(
    store: &mut Store,
    owner: &str,
    correlation: &str,
    request: &str,
    body: serde_json::Value,
    now_ms: i64,
) -> Result<(Verdict, Option<Decision>), RunError> {
    let Some((instance, node)) = store.correlation(correlation)? else {
        return Ok((no_live_correlation(store, correlation)?, None));
    };
    // An answer that arrives after a timer of the instance was due (the
    // call's timeout above all) is decided after that timer, whether or not
    // the loop that decides timers has reached it yet: the timeout wins.
    if decide_due_timers(store, owner, &instance, now_ms)?
        && store.correlation(correlation)?.is_none()
    {
        return Ok((no_live_correlation(store, correlation)?, None));
    }
    let ev = Event::Response {
        node,
        request: request.to_string(),
        body,
    };
    let taken = shell::take(
        store,
        owner,
        &instance,
        |store, facts| deployed_graph(store, facts.deployment_id).map(Box::new),
        |_, _, _| Ok(Some(Choice::event(ev, now_ms))),
    )?;
    store.release(&instance, owner)?;
    let d = taken.or_lost()?.expect("a response is always decided");
    let verdict = match d.events.first().map(|l| &l.event) {
        Some(HistoryEvent::Response {
            verdict,
            live_attempt,
            ..
        }) => match verdict {
            Said::Accepted => Verdict::Accepted,
            Said::RetryPending => Verdict::RetryPending,
            Said::Superseded => Verdict::Superseded {
                live: live_attempt.unwrap_or(0),
            },
            Said::UnknownRequest => Verdict::UnknownRequest,
            Said::Failed => Verdict::Failed,
            other => Verdict::NotWaiting(other.as_str().to_string()),
        },
        _ => Verdict::NotWaiting("ignored".into()),
    };
    Ok((verdict, Some(d)))
}

/// Decide, one at a time and each under the claim, the timers of
/// `instance` due at `now_ms` or before (not a registered task's retry: that
/// is an attempt, run on a lane). The decisions are the ones the serving
/// loop would take; taking them first orders an answer after them.
fn decide_due_timers(
    store: &mut Store,
    owner: &str,
    instance: &str,
    now_ms: i64,
) -> Result<bool, RunError> {
    let mut decided = false;
    for _ in 0..16 {
        let taken = shell::take(
            store,
            owner,
            instance,
            |store, facts| deployed_graph(store, facts.deployment_id).map(Box::new),
            |store, graph, facts| {
                if facts.status.is_terminal() {
                    return Ok(None);
                }
                let last = store
                    .last_decision_ms(instance)?
                    .unwrap_or(facts.started_ms);
                let due = facts.timers.iter().find(|t| {
                    t.due_ms <= now_ms
                        && !facts.held.contains(&t.id)
                        && !(t.purpose == Purpose::Retry
                            && matches!(
                                graph.node(&t.node).map(|n| &n.kind),
                                Some(Kind::Task { call: None, .. })
                            ))
                });
                Ok(due.map(|t| Choice::event(Event::TimerDue { timer: t.id }, now_ms.max(last))))
            },
        )?;
        store.release(instance, owner)?;
        match taken.or_lost()? {
            Some(_) => decided = true,
            None => return Ok(decided),
        }
    }
    Ok(decided)
}

/// The next event of `instance` as a choice for the shell (`None`: nothing
/// to decide now): what a serving loop asks of the driver's rules.
pub fn next_event<C: Clock>(
    store: &Store,
    graph: &Graph,
    world: &dyn World,
    clock: &C,
    instance: &str,
    owner: &str,
    facts: &qflow_store::InstanceFacts,
) -> Result<Option<Choice>, RunError> {
    let next = Ctx {
        store,
        graph,
        scenario: world,
        clock,
        instance,
        owner,
        started_ms: facts.started_ms,
        until_ms: None,
        effects: None,
        lanes: None,
    }
    .next_event(facts)?;
    Ok(match next {
        Next::Event(ev) => Some(Choice::event(ev, clock.now_ms())),
        Next::Idle | Next::Dispatch(_) => None,
    })
}
