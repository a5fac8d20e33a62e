//! A replica: one of several processes serving every unfinished instance of
//! one database, polling ready instances and due timers across all of them.
//!
//! Replicas race for the same work on purpose. The claim arbitrates: a
//! replica decides only for an instance whose claim it holds, from facts it
//! read under that claim, and the store refuses a transition computed from
//! stale facts (the version) or for a timer another replica already consumed.
//! So exactly one decision is taken for each event, and a handler never runs
//! twice for one timer.
//!
//! Time is virtual and per instance: a decision for a due timer is taken at
//! the timer's instant, whichever replica takes it and whenever, so a
//! schedule is the same with one replica or four.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

use crate::clock::{Clock, VirtualClock};
use crate::driver::{Ctx, Decision, Next, RunError};
use crate::graph::Graph;
use crate::scenario::Scenario;
use crate::shell::{self, deployed_graph, Choice, Stage, Taken};
use crate::world::World;
use qflow_instance::Event;
use qflow_store::Store;

/// What one replica did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaStats {
    pub decisions: u64,
    /// Work another replica held the claim on.
    pub claimed_elsewhere: u64,
    /// Decisions refused because another replica moved the instance first.
    pub stale: u64,
    /// Work that was gone when the claim was taken.
    pub nothing_to_do: u64,
}

pub struct Replica {
    store: Store,
    /// The world the outcomes come from: a scenario, or real handlers.
    world: Box<dyn World>,
    owner: String,
    graphs: BTreeMap<i64, Rc<Graph>>,
    effects: Option<PathBuf>,
    races: Option<std::fs::File>,
    rng: u64,
    /// In-process poison wakes (instance, node): best effort, lost with the
    /// process; the timeout recovers the same condition.
    wakes: Vec<(String, String)>,
    /// Poison wakes other processes sent through the store (PostgreSQL's
    /// notifications): prompts, acted on only if the request is still
    /// poisoned when this replica holds the claim.
    remote_wakes: Vec<(String, String)>,
    /// Stop serving after this many decisions (a benchmark's window).
    limit: Option<u64>,
}

enum Poll {
    Decided((String, Decision)),
    Raced,
    Done,
}

impl Replica {
    /// `owner` names this replica in claims (host:pid for a process).
    pub fn new(store: Store, scenario: Scenario, owner: String) -> Replica {
        Replica::in_world(store, Box::new(scenario), owner)
    }

    /// A replica in any world (real handlers, say).
    pub fn in_world(store: Store, world: Box<dyn World>, owner: String) -> Replica {
        let rng = 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id());
        Replica {
            store,
            world,
            owner,
            graphs: BTreeMap::new(),
            effects: None,
            races: None,
            rng: rng | 1,
            wakes: Vec::new(),
            remote_wakes: Vec::new(),
            limit: None,
        }
    }

    /// Stop [`Replica::serve`] after `decisions` decisions, work left or not
    /// (what a benchmark measuring a window of a long run needs).
    pub fn stop_after(&mut self, decisions: u64) {
        self.limit = Some(decisions);
    }

    /// One line per handler run, as [`crate::LocalRun::log_effects`].
    pub fn log_effects(&mut self, path: PathBuf) {
        self.effects = Some(path);
    }

    /// Append one line per lost race (`instance version why`) to this file:
    /// the event (an instance at a version) this replica tried to decide and
    /// another party decided or held. The distinct `instance version` pairs
    /// over every party's log are the contended events of a run.
    pub fn log_races(&mut self, path: &std::path::Path) -> std::io::Result<()> {
        self.races = Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?,
        );
        Ok(())
    }

    /// Record a lost race on `instance` (best effort: the log is for tests).
    fn lost(&mut self, instance: &str, why: &str) {
        let Some(f) = self.races.as_mut() else { return };
        let version = self
            .store
            .instance(instance)
            .ok()
            .flatten()
            .map_or(-1, |r| r.version);
        use std::io::Write;
        // One write per line: O_APPEND keeps lines from several processes whole.
        let _ = f.write_all(format!("{instance} {version} {why}\n").as_bytes());
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Serve until no unfinished instance has anything left to decide.
    pub fn serve(
        &mut self,
        mut on_decision: impl FnMut(&str, &Decision),
    ) -> Result<ReplicaStats, RunError> {
        let mut stats = ReplicaStats::default();
        let mut idle_rounds = 0;
        self.store.listen_for_wakes()?;
        loop {
            match self.poll(&mut stats)? {
                Poll::Decided((instance, d)) => {
                    stats.decisions += 1;
                    idle_rounds = 0;
                    on_decision(&instance, &d);
                    if self.limit.is_some_and(|l| stats.decisions >= l) {
                        return Ok(stats);
                    }
                }
                Poll::Raced => {
                    idle_rounds = 0;
                    std::thread::yield_now();
                }
                Poll::Done => {
                    // Another replica may still be mid-decision on an
                    // instance this one skipped: look twice before leaving.
                    idle_rounds += 1;
                    if idle_rounds > 2 {
                        return Ok(stats);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        }
    }

    fn next_rand(&mut self, n: usize) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % n as u64) as usize
    }

    fn poll(&mut self, stats: &mut ReplicaStats) -> Result<Poll, RunError> {
        for w in self.store.wakes(&self.owner)? {
            if !self.remote_wakes.contains(&w) {
                self.remote_wakes.push(w);
            }
        }
        let (wake, remote) = match self.wakes.pop() {
            Some(w) => (Some(w), false),
            None => (self.remote_wakes.pop(), true),
        };
        let instance = match &wake {
            Some((instance, _)) => instance.clone(),
            None => {
                // Those with a ready token, else those with the earliest
                // armed timers; two at a time, one picked at random, so
                // replicas both race and spread.
                let candidates = self.store.candidates(2)?;
                if candidates.is_empty() {
                    return Ok(Poll::Done);
                }
                candidates[self.next_rand(candidates.len())].clone()
            }
        };
        let woke = wake.as_ref().map(|w| w.1.clone());
        let graphs = &mut self.graphs;
        let (scenario, effects) = (&*self.world, self.effects.as_deref());
        let owner = self.owner.as_str();
        let mut idle = false;
        let taken = shell::take(
            &mut self.store,
            &self.owner,
            &instance,
            |store, facts| match graphs.get(&facts.deployment_id) {
                Some(g) => Ok(g.clone()),
                None => {
                    let g = Rc::new(deployed_graph(store, facts.deployment_id)?);
                    graphs.insert(facts.deployment_id, g.clone());
                    Ok(g)
                }
            },
            |store, graph, facts| {
                if facts.status.is_terminal() {
                    idle = true;
                    return Ok(None);
                }
                // Time is virtual and per instance: the decision is taken
                // at the instance's own clock, from its last decision.
                let last = store
                    .last_decision_ms(&instance)?
                    .unwrap_or(facts.started_ms);
                let clock = VirtualClock::new(last);
                let ev = match woke {
                    // A prompt: re-read the outbox under the claim.
                    Some(node) => {
                        let poisoned = store.has_poisoned_request(&instance, &node)?;
                        if remote && !poisoned {
                            // Another process's prompt, already answered.
                            idle = true;
                            return Ok(None);
                        }
                        Event::PoisonWake { node, poisoned }
                    }
                    None => {
                        let ctx = Ctx {
                            store,
                            graph,
                            scenario,
                            clock: &clock,
                            instance: &instance,
                            owner,
                            started_ms: facts.started_ms,
                            until_ms: None,
                            effects,
                            lanes: None,
                        };
                        match ctx.next_event(facts)? {
                            Next::Idle | Next::Dispatch(_) => {
                                idle = true;
                                return Ok(None);
                            }
                            Next::Event(ev) => ev,
                        }
                    }
                };
                Ok(Some(Choice::event(ev, clock.now_ms())))
            },
        );
        let result = match taken {
            Ok(Taken::Decided(d)) => {
                for n in d.poisoned_nodes() {
                    self.wakes.push((instance.clone(), n.to_string()));
                }
                Ok(Poll::Decided((instance.clone(), d)))
            }
            Ok(Taken::Lost {
                stage: Stage::Claim,
                ..
            }) => {
                stats.claimed_elsewhere += 1;
                self.lost(&instance, "claimed");
                if let Some(w) = wake {
                    // The wake is still owed its look once the claim is free.
                    if remote {
                        self.remote_wakes.push(w);
                    } else {
                        self.wakes.push(w);
                    }
                }
                return Ok(Poll::Raced);
            }
            Ok(Taken::Lost {
                stage: Stage::Apply,
                ..
            }) => {
                stats.stale += 1;
                Ok(Poll::Raced)
            }
            Ok(Taken::Idle) => {
                if idle {
                    stats.nothing_to_do += 1;
                }
                Ok(Poll::Raced)
            }
            Err(e) => Err(e),
        };
        if let Ok(Poll::Raced) = &result {
            self.lost(&instance, "gone");
        }
        self.store.release(&instance, &self.owner)?;
        result
    }
}

#[cfg(test)]
mod plans;
