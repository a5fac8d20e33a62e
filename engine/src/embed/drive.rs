//! Driving instances: one decision at a time ([`Engine::step`]), until
//! idle on virtual time, or serving on the wall clock ([`Engine::serve`]).

use std::sync::Arc;

use crate::instance::Event;
use crate::runtime::clock::{system_now_ms, SystemClock, VirtualClock};
use crate::runtime::driver::{self, next_event, Decision, RunError};
use crate::runtime::shell::{self, deployed_graph, Choice, Taken};
use crate::runtime::world::World;

use super::engine::{Engine, EngineError, Step, Time, ROUND, VIRTUAL_EPOCH_LIMIT_MS};

impl Engine {
    /// Take one decision for some instance that has something to decide now;
    /// `None` when none has (all finished, or waiting: on a timer not yet
    /// due on the wall clock, a response, a reconciliation).
    pub fn step(&mut self) -> Result<Option<Step>, EngineError> {
        while let Some((instance, node)) = self.wakes.pop() {
            if let Some(d) = self.take(&instance, Some(node))? {
                return Ok(Some(Step {
                    instance,
                    decision: d,
                }));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for id in self.store.candidates(ROUND)? {
            if !seen.insert(id.clone()) {
                continue;
            }
            // On the wall clock, most looks find nothing due: read that
            // without taking the claim (a write) for every look.
            if self.time == Time::System && !self.due_now(&id)? {
                continue;
            }
            if let Some(d) = self.take(&id, None)? {
                return Ok(Some(Step {
                    instance: id,
                    decision: d,
                }));
            }
        }
        Ok(None)
    }

    /// Whether `instance` may have something to decide on the wall clock
    /// now: a ready token, a due timer, a due delivery. A read without the
    /// claim, so only a hint: the decision re-reads under the claim.
    fn due_now(&self, instance: &str) -> Result<bool, EngineError> {
        let Some(row) = self.store.instance(instance)? else {
            return Ok(false);
        };
        if row.status == crate::instance::Status::Running
            || clock_of(self.time, row.started_ms) == Time::Virtual
        {
            return Ok(true);
        }
        let now = system_now_ms();
        if self
            .store
            .next_timer(instance)?
            .is_some_and(|t| t.due_ms <= now)
        {
            return Ok(true);
        }
        Ok(self
            .store
            .pending_requests(instance)?
            .first()
            .is_some_and(|(_, next)| *next <= now))
    }

    /// Step until nothing can be decided now; the number of decisions.
    pub fn run_until_idle(&mut self) -> Result<u64, EngineError> {
        let mut n = 0;
        while self.step()?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    /// One decision for `instance` if it has one now (its claim released
    /// after). A claim another process holds, or facts that moved under
    /// us, are not ours to decide: `None`.
    fn take(
        &mut self,
        instance: &str,
        wake: Option<String>,
    ) -> Result<Option<Decision>, EngineError> {
        let Engine {
            store,
            handlers,
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
            |store, facts| match graphs.get(&facts.deployment_id) {
                Some(g) => Ok(g.clone()),
                None => {
                    let g = Arc::new(deployed_graph(store, facts.deployment_id)?);
                    graphs.insert(facts.deployment_id, g.clone());
                    Ok(g)
                }
            },
            |store, graph, facts| {
                if facts.status.is_terminal() {
                    return Ok(None);
                }
                let last = store
                    .last_decision_ms(instance)?
                    .unwrap_or(facts.started_ms);
                let world: &dyn World = handlers;
                if let Some(node) = wake {
                    let poisoned = store.has_poisoned_request(instance, &node)?;
                    let ev = Event::PoisonWake { node, poisoned };
                    let at = match clock_of(time, facts.started_ms) {
                        Time::Virtual => last,
                        Time::System => system_now_ms(),
                    };
                    return Ok(Some(Choice::event(ev, at)));
                }
                match clock_of(time, facts.started_ms) {
                    Time::Virtual => {
                        let clock = VirtualClock::new(last);
                        next_event(store, graph, world, &clock, instance, owner, facts)
                    }
                    Time::System => {
                        next_event(store, graph, world, &SystemClock, instance, owner, facts)
                    }
                }
            },
        );
        let (result, ran) = match taken? {
            Taken::Decided(d) => {
                let ran = d.events.iter().any(|l| l.event.kind() == "attempt");
                (Some(d), ran)
            }
            // A decision refused at the apply may have run a handler whose
            // outcome is now unrecorded: its in-flight record stays, and if
            // the instance is still at that version (a pause committed in
            // between), the next look decides it as an unknown outcome.
            Taken::Idle | Taken::Lost { .. } => (None, false),
        };
        if let (true, Some(d)) = (ran, &result) {
            // The attempt's outcome is applied: no longer in flight.
            self.store.close_in_flight(instance, d.at_ms)?;
        }
        self.store.release(instance, &self.owner)?;
        if let Some(d) = &result {
            for n in d.poisoned_nodes() {
                self.wakes.push((instance.to_string(), n.to_string()));
            }
            let entry = self
                .instants
                .entry(instance.to_string())
                .or_insert((i64::MIN, 0));
            *entry = if entry.0 == d.at_ms {
                (d.at_ms, entry.1 + 1)
            } else {
                (d.at_ms, 1)
            };
            if entry.1 > driver::MAX_DECISIONS_PER_INSTANT {
                let started = self.store.instance(instance)?.map_or(0, |r| r.started_ms);
                return Err(RunError::Livelock {
                    instance: instance.to_string(),
                    decisions: entry.1 - 1,
                    at_s: (d.at_ms - started) / 1000,
                    node: d
                        .events
                        .iter()
                        .find_map(|l| l.node.clone())
                        .unwrap_or_else(|| "?".into()),
                }
                .into());
            }
        }
        Ok(result)
    }

    /// The instant "now" is for `instance`: its last decision on virtual
    /// time, the wall clock otherwise.
    pub(super) fn now_for(&self, instance: &str) -> Result<i64, EngineError> {
        let row = self
            .store
            .instance(instance)?
            .ok_or_else(|| EngineError::NoInstance(instance.into()))?;
        // An instance started on a virtual clock (at its epoch, 0) keeps its
        // own time whatever this engine's clock: a wall-clock instant would
        // put its next decision half a century after its last.
        Ok(match clock_of(self.time, row.started_ms) {
            Time::System => system_now_ms(),
            Time::Virtual => self
                .store
                .last_decision_ms(instance)?
                .unwrap_or(row.started_ms),
        })
    }
}

/// The clock an instance is decided on: an instance started on a virtual
/// clock (at its epoch, 0) keeps virtual time under a wall-clock engine, so
/// its decisions stay on its own time line rather than jumping decades.
pub(super) fn clock_of(engine: Time, started_ms: i64) -> Time {
    if started_ms < VIRTUAL_EPOCH_LIMIT_MS {
        Time::Virtual
    } else {
        engine
    }
}
