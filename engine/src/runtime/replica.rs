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

use rusqlite::params;

use crate::runtime::clock::{system_now_ms, Clock, VirtualClock};
use crate::runtime::decide;
use crate::runtime::driver::{Ctx, Decision, Next, RunError};
use crate::runtime::graph::Graph;
use crate::runtime::scenario::Scenario;
use crate::store::{Store, StoreError};

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
    scenario: Scenario,
    owner: String,
    graphs: BTreeMap<i64, Graph>,
    effects: Option<PathBuf>,
    races: Option<std::fs::File>,
    rng: u64,
    /// In-process poison wakes (instance, node): best effort, lost with the
    /// process; the timeout recovers the same condition.
    wakes: Vec<(String, String)>,
}

enum Poll {
    Decided((String, Decision)),
    Raced,
    Done,
}

impl Replica {
    /// `owner` names this replica in claims (host:pid for a process).
    pub fn new(store: Store, scenario: Scenario, owner: String) -> Replica {
        let rng = 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id());
        Replica {
            store,
            scenario,
            owner,
            graphs: BTreeMap::new(),
            effects: None,
            races: None,
            rng: rng | 1,
            wakes: Vec::new(),
        }
    }

    /// One line per handler run, as [`crate::runtime::LocalRun::log_effects`].
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
        loop {
            match self.poll(&mut stats)? {
                Poll::Decided((instance, d)) => {
                    stats.decisions += 1;
                    idle_rounds = 0;
                    on_decision(&instance, &d);
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

    /// Candidate instances: those with a ready token, else those with the
    /// earliest armed timers. Two at a time, one picked at random, so
    /// replicas both race and spread.
    fn candidates(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.store.conn();
        let mut st = conn
            .prepare("SELECT id FROM instances WHERE status = 'running' ORDER BY rowid LIMIT 2")?;
        let ready: Vec<String> = st.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        if !ready.is_empty() {
            return Ok(ready);
        }
        let mut st = conn.prepare(
            "SELECT t.instance_id FROM timers t JOIN instances i ON i.id = t.instance_id
             WHERE t.state = 'armed' AND i.status IN ('running','waiting') ORDER BY t.due_ms, t.id LIMIT 2",
        )?;
        let due: Vec<String> = st
            .query_map(params![], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(due)
    }

    fn graph(&mut self, deployment: i64) -> Result<&Graph, RunError> {
        if !self.graphs.contains_key(&deployment) {
            let source = self
                .store
                .deployment_source(deployment)?
                .unwrap_or_default();
            let defs = crate::load(&source).map_err(|d| {
                RunError::Graph(crate::runtime::graph::GraphError {
                    node: "deployment".into(),
                    message: format!(
                        "the pinned source no longer loads ({} diagnostics)",
                        d.len()
                    ),
                })
            })?;
            self.graphs.insert(deployment, Graph::compile(&defs)?);
        }
        Ok(&self.graphs[&deployment])
    }

    fn poll(&mut self, stats: &mut ReplicaStats) -> Result<Poll, RunError> {
        let wake = self.wakes.pop();
        let instance = match &wake {
            Some((instance, _)) => instance.clone(),
            None => {
                let candidates = self.candidates()?;
                if candidates.is_empty() {
                    return Ok(Poll::Done);
                }
                candidates[self.next_rand(candidates.len())].clone()
            }
        };
        match self.store.claim(&instance, &self.owner, system_now_ms()) {
            Ok(()) => {}
            Err(StoreError::Claimed { .. }) => {
                stats.claimed_elsewhere += 1;
                self.lost(&instance, "claimed");
                if let Some(w) = wake {
                    // The wake is still owed its look once the claim is free.
                    self.wakes.push(w);
                }
                return Ok(Poll::Raced);
            }
            Err(e) => return Err(e.into()),
        }
        let result = self.decide_claimed(&instance, wake.map(|w| w.1), stats);
        if let Ok(Poll::Raced) = &result {
            self.lost(&instance, "gone");
        }
        self.store.release(&instance, &self.owner)?;
        if let Ok(Poll::Decided((i, d))) = &result {
            for line in &d.lines {
                if line["kind"] == "delivery" && line["poisoned"] == true {
                    if let Some(n) = line["node"].as_str() {
                        self.wakes.push((i.clone(), n.to_string()));
                    }
                }
            }
        }
        result
    }

    fn decide_claimed(
        &mut self,
        instance: &str,
        wake: Option<String>,
        stats: &mut ReplicaStats,
    ) -> Result<Poll, RunError> {
        let row = self
            .store
            .instance(instance)?
            .ok_or_else(|| StoreError::NoInstance(instance.into()))?;
        let facts = self.store.facts(instance)?;
        if facts.status.is_terminal() {
            stats.nothing_to_do += 1;
            return Ok(Poll::Raced);
        }
        self.graph(row.deployment_id)?;
        let graph = &self.graphs[&row.deployment_id];
        let last = self
            .store
            .transitions(instance)?
            .last()
            .map_or(facts.started_ms, |t| t.at_ms);
        let clock = VirtualClock::new(last);
        let ctx = Ctx {
            store: &self.store,
            graph,
            scenario: &self.scenario,
            clock: &clock,
            instance,
            started_ms: facts.started_ms,
            until_ms: None,
            effects: self.effects.as_deref(),
        };
        let ev = match wake {
            // A prompt: re-read the outbox under the claim.
            Some(node) => {
                let poisoned = self.store.has_poisoned_request(instance, &node)?;
                crate::runtime::decide::Event::PoisonWake { node, poisoned }
            }
            None => match ctx.next_event(&facts)? {
                Next::Idle => {
                    stats.nothing_to_do += 1;
                    return Ok(Poll::Raced);
                }
                Next::Event(ev) => ev,
            },
        };
        let now = clock.now_ms();
        let f = facts.as_facts(instance);
        let t = decide::decide(graph, &f, &ev, now);
        match self.store.apply(
            instance,
            &self.owner,
            facts.version,
            &t,
            now,
            system_now_ms(),
        ) {
            Ok(seq) => Ok(Poll::Decided((
                instance.to_string(),
                Decision {
                    seq,
                    at_ms: now,
                    lines: t.history.iter().map(|e| e.detail.clone()).collect(),
                    status: t.status,
                },
            ))),
            Err(StoreError::Conflict(_)) | Err(StoreError::Claimed { .. }) => {
                stats.stale += 1;
                Ok(Poll::Raced)
            }
            Err(e) => Err(e.into()),
        }
    }
}
