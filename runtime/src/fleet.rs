//! A fleet driver: many instances of one database served in batches, with
//! group commit.
//!
//! Each [`Fleet::step`] picks up to a batch of instances with work (a ready
//! token first, else the earliest armed timers), claims them in one
//! transaction, decides each from facts read under its claim — the same
//! choice of the next event as a local run or a replica makes — and applies
//! every decision in one more transaction, each under its own claim and
//! version check ([`Store::apply_many`]). A refused decision (another
//! replica moved the instance, its claim lapsed) is dropped alone, exactly
//! as a replica drops a lost race. Nothing per instance is kept between
//! steps: memory is one batch, whatever the number of parked instances.
//!
//! Time is virtual and per instance, as for a replica: a decision for a due
//! timer is taken at the timer's instant. Because batches are picked in due
//! order, the fleet as a whole moves forward in time.
//!
//! What a task's attempt returns comes from the scenario, or from a
//! [`World`] that answers by the virtual instant (a dependency down during an
//! outage and up after it). A delivery that poisons a call's request wakes
//! its instance, as a local run and a serving process do: the next step
//! decides the poison wake (re-reading the outbox under the claim) at the
//! instant of the poisoning, so a simulated attempt fails when the outbox
//! gives up, not only at its timeout. The wakes are kept in memory, one
//! per poisoned request; one lost (the fleet stopped) is recovered by the
//! call's timeout, as after a crash.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

use crate::clock::{Clock, VirtualClock};
use crate::driver::{Ctx, Decision, Next, RunError};
use crate::graph::{Graph, Kind};
use crate::scenario::Scenario;
use crate::shell::{self, deployed_graph, Taken};
use qflow_instance::event::{ChannelOutcome, DeliveryOutcome, TaskOutcome};
use qflow_instance::Event;
use qflow_store::Store;

/// What an attempt of a registered task returns at a virtual instant, when
/// the world rather than the scenario's list decides (a simulation).
pub trait World {
    /// The outcome of an attempt of handler `task` for `instance` at
    /// `at_ms`, its `run`-th run (0-based) for this instance. The instance
    /// is given so that a world drawing at random (a partial outage) draws
    /// per instance, the same whatever order the driver decides in.
    fn attempt(&self, instance: &str, task: &str, run: usize, at_ms: i64) -> TaskOutcome;

    /// What becomes of the outbox row `row`'s request delivered at `at_ms`
    /// (its channel, its idempotency key, the deliveries tried before):
    /// the delivery's luck and, when it gets through, what the counterpart
    /// does. `None` (the default): as the scenario says.
    fn deliver(
        &self,
        _instance: &str,
        _row: &qflow_instance::rows::OutboxRow,
        _at_ms: i64,
    ) -> Option<(DeliveryOutcome, Option<ChannelOutcome>)> {
        None
    }
}

/// What a fleet did so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetStats {
    pub decisions: u64,
    /// Batches applied (one group of the shell's [`shell::take_many`] each).
    pub batches: u64,
    /// Decisions refused at the apply (another party moved the instance).
    pub lost: u64,
    /// Where the time went, in nanoseconds of wall time (a profile without
    /// a profiler): picking work; choosing each instance's event (the
    /// driver's rules, the scenario or the world, and what they read);
    /// and the rest of the shell's group: claims, the facts read under
    /// them, the pure decisions, the apply and its commit.
    pub pick_ns: u64,
    pub choose_ns: u64,
    pub group_ns: u64,
}

/// How many instances one step claims and applies together by default.
pub const DEFAULT_BATCH: usize = 256;

pub struct Fleet {
    store: Store,
    scenario: Scenario,
    world: Option<Box<dyn World>>,
    owner: String,
    graphs: BTreeMap<i64, Rc<Graph>>,
    batch: usize,
    stats: FleetStats,
    /// Poison wakes not yet decided: instance → the nodes whose request the
    /// outbox poisoned.
    wakes: BTreeMap<String, Vec<String>>,
    /// The last step picked instances with a ready token and decided
    /// nothing: their first attempts are held (a paused dependency), so
    /// the next step picks from the armed timers instead, or a held
    /// first attempt would stand in front of every due timer (a breaker's
    /// canary, say) for ever.
    ready_stalled: bool,
    /// No decision is taken before this instant of virtual time (see
    /// [`Fleet::floor`]).
    floor_ms: i64,
}

impl Fleet {
    /// `owner` names this driver in claims (host:pid for a process).
    pub fn new(store: Store, scenario: Scenario, owner: String) -> Fleet {
        Fleet {
            store,
            scenario,
            world: None,
            owner,
            graphs: BTreeMap::new(),
            batch: DEFAULT_BATCH,
            stats: FleetStats::default(),
            wakes: BTreeMap::new(),
            ready_stalled: false,
            floor_ms: i64::MIN,
        }
    }

    /// Take no decision before `ms` of virtual time from now on: what a
    /// simulation sets when something outside the instances happened then
    /// (a breaker let canaries go, or released what its pause held), so
    /// the work it let go runs then and not at the instant each instance
    /// last decided (an instance keeps its own virtual time). Never moves
    /// back.
    pub fn floor(&mut self, ms: i64) {
        self.floor_ms = self.floor_ms.max(ms);
    }

    /// Claim and apply up to `n` instances per step (at least one).
    pub fn batch(&mut self, n: usize) {
        self.batch = n.max(1);
    }

    /// Let `world` decide what attempts of registered tasks return.
    pub fn world(&mut self, world: Box<dyn World>) {
        self.world = Some(world);
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store, to start more instances between steps (a simulation's
    /// arrivals).
    pub fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// The store back, when the fleet is done with it.
    pub fn into_store(self) -> Store {
        self.store
    }

    pub fn stats(&self) -> &FleetStats {
        &self.stats
    }

    /// Serve until no unfinished instance has anything left to decide.
    pub fn serve(
        &mut self,
        mut on_decision: impl FnMut(&str, &Decision),
    ) -> Result<FleetStats, RunError> {
        while self.step(&mut on_decision)? > 0 {}
        Ok(self.stats.clone())
    }

    /// One batch: pick, claim, decide, apply. Returns how many instances it
    /// looked at (0: nothing left to do).
    pub fn step(
        &mut self,
        mut on_decision: impl FnMut(&str, &Decision),
    ) -> Result<usize, RunError> {
        let t0 = Instant::now();
        // Woken instances first: their wake is due now, at the instant of
        // the poisoning.
        let mut ids: Vec<String> = self.wakes.keys().take(self.batch).cloned().collect();
        let room = self.batch.saturating_sub(ids.len());
        if room > 0 {
            let stalled = std::mem::take(&mut self.ready_stalled);
            if stalled {
                ids.extend(self.store.timer_candidates(room)?);
            } else {
                ids.extend(self.store.candidates(room)?);
            }
            // Nothing decided from the ready ones: the timers next time.
            self.ready_stalled = !stalled;
        }
        // An instance with two due timers is picked once.
        let mut seen = std::collections::BTreeSet::new();
        ids.retain(|id| seen.insert(id.clone()));
        if ids.is_empty() {
            return Ok(0);
        }
        let t1 = Instant::now();
        // Through the shell's batch form, as every other decision: the
        // claims, each instance's facts read under its claim, the
        // damaged-snapshot guard, the lost-race policy and the group
        // commit are the shell's; the fleet only chooses each event.
        let Fleet {
            store,
            scenario,
            world,
            owner,
            graphs,
            stats,
            wakes,
            floor_ms,
            ..
        } = self;
        let mut choose_ns = 0u64;
        let taken = shell::take_many(
            store,
            owner,
            &ids,
            |store, facts| -> Result<Rc<Graph>, RunError> {
                if let Some(g) = graphs.get(&facts.deployment_id) {
                    return Ok(g.clone());
                }
                let g = Rc::new(deployed_graph(store, facts.deployment_id)?);
                graphs.insert(facts.deployment_id, g.clone());
                Ok(g)
            },
            |store, id, graph, facts| {
                let t = Instant::now();
                let chosen = Chooser {
                    store,
                    scenario,
                    world: world.as_deref(),
                    owner,
                    floor_ms: *floor_ms,
                }
                .choose(id, graph, facts, wakes);
                choose_ns += t.elapsed().as_nanos() as u64;
                chosen
            },
        )?;
        let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
        let t2 = Instant::now();
        stats.pick_ns += ns(t0, t1);
        stats.choose_ns += choose_ns;
        // The rest of the group's time: claims, reads of the facts, the
        // pure decisions and the apply, one group in the shell.
        stats.group_ns += ns(t1, t2).saturating_sub(choose_ns);
        stats.batches += 1;
        let mut decided_any = false;
        for (id, t) in taken {
            match t {
                Taken::Decided(d) => {
                    decided_any = true;
                    stats.decisions += 1;
                    let poisoned: Vec<String> = d.poisoned_nodes().map(str::to_string).collect();
                    if !poisoned.is_empty() {
                        wakes.entry(id.clone()).or_default().extend(poisoned);
                    }
                    on_decision(&id, &d);
                }
                Taken::Lost { .. } => stats.lost += 1,
                Taken::Idle => {}
            }
        }
        if decided_any {
            self.ready_stalled = false;
        }
        // Instances picked but claimed elsewhere count as looked at: another
        // party is working, so the caller keeps stepping.
        Ok(ids.len())
    }
}

/// What the fleet chooses for one claimed instance, from its facts: a
/// poison wake owed to it, else the next event by the driver's rules (the
/// scenario's, or the world's outcome for an attempt or a delivery), at
/// the instance's own virtual instant (never before the fleet's floor).
struct Chooser<'a> {
    store: &'a Store,
    scenario: &'a Scenario,
    world: Option<&'a dyn World>,
    owner: &'a str,
    floor_ms: i64,
}

impl Chooser<'_> {
    fn choose(
        &self,
        id: &str,
        graph: &Graph,
        facts: &qflow_store::InstanceFacts,
        wakes: &mut BTreeMap<String, Vec<String>>,
    ) -> Result<Option<(Event, i64)>, RunError> {
        // A wake is decided once: taken whatever the facts say.
        let wake = take_wake(wakes, id);
        if facts.status.is_terminal() {
            return Ok(None);
        }
        let last = self.store.last_decision_ms(id)?.unwrap_or(facts.started_ms);
        let clock = VirtualClock::new(last.max(self.floor_ms));
        let ctx = Ctx {
            store: self.store,
            graph,
            scenario: self.scenario,
            clock: &clock,
            instance: id,
            owner: self.owner,
            started_ms: facts.started_ms,
            until_ms: None,
            effects: None,
            lanes: None,
        };
        // A poison wake is a prompt: the decision acts only on a poisoned
        // row of this node that the outbox still holds.
        let mut event = match wake {
            Some(node) => {
                let poisoned = self.store.has_poisoned_request(id, &node)?;
                Event::PoisonWake { node, poisoned }
            }
            None => match ctx.next_event(facts)? {
                Next::Idle | Next::Dispatch(_) => return Ok(None),
                Next::Event(ev) => ev,
            },
        };
        let at = clock.now_ms();
        if let (Some(world), Event::Attempt { node, outcome, .. }) = (self.world, &mut event) {
            if let Some(Kind::Task {
                task, call: None, ..
            }) = graph.node(node).map(|n| &n.kind)
            {
                let run = self.store.handler_runs(id, task)?;
                *outcome = world.attempt(id, task, run, at);
            }
        }
        if let (
            Some(world),
            Event::Delivery {
                row,
                outcome,
                counterpart,
            },
        ) = (self.world, &mut event)
        {
            if let Some((o, c)) = world.deliver(id, row, at) {
                *outcome = o;
                *counterpart = c;
            }
        }
        Ok(Some((event, at)))
    }
}

/// The next poison wake of `id`, if any (removed: a wake is decided once).
fn take_wake(wakes: &mut BTreeMap<String, Vec<String>>, id: &str) -> Option<String> {
    let nodes = wakes.get_mut(id)?;
    let node = nodes.pop();
    if nodes.is_empty() {
        wakes.remove(id);
    }
    node
}

#[cfg(test)]
mod tests;
