//! The imperative shell: the one function that takes a decision durably.
//!
//! [`take`] claims the instance, reads its durable facts under the claim,
//! lets the caller choose what happens from those facts (reading more under
//! the same claim when the choice needs it: the outbox for a poison wake, the
//! history for which scenario entry comes next), decides, and applies the
//! transition under the claim and the snapshot version the facts were read
//! at. The local driver, the replicas, the operator's actions, responses by
//! correlation and migrations all go through it.
//!
//! One policy for a lost race: a claim held by another process (at the claim
//! or at the apply) and facts gone stale before the apply are never applied
//! and never retried here. The shell returns [`Taken::Lost`], with where the
//! race was lost; the caller decides whether that is an error (a local run:
//! another process is running this instance) or routine (a replica: someone
//! else took that work).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::clock::system_now_ms;
use crate::decide;
use crate::graph::Graph;
use crate::migrate;
use crate::RunError;
use qflow_instance::history::Line;
use qflow_instance::{Event, Status, Transition};
use qflow_store::{Destination, InstanceFacts, Store, StoreError};

/// One applied decision: its lines, as `qflow run --format json` prints them.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The transition's sequence number in the store.
    pub seq: i64,
    pub at_ms: i64,
    /// The history lines as JSON objects (what `qflow run` prints).
    pub lines: Vec<Value>,
    /// The same lines, typed.
    pub events: Vec<Line>,
    pub status: Status,
    /// For a migration: the plan it carried out.
    pub plan: Option<migrate::Plan>,
}

impl Decision {
    /// The decision a transition applied as `seq` at `at_ms` records.
    pub fn of(seq: i64, at_ms: i64, t: &Transition) -> Decision {
        Decision {
            seq,
            at_ms,
            lines: t.history.iter().map(|e| e.detail()).collect(),
            events: t.history.iter().map(|e| e.line.clone()).collect(),
            status: t.status,
            plan: None,
        }
    }

    /// Nodes whose request this decision poisoned: each is owed a poison
    /// wake (a prompt to re-read the outbox under the claim).
    pub fn poisoned_nodes(&self) -> impl Iterator<Item = &str> {
        self.events.iter().filter_map(|l| match &l.event {
            qflow_instance::HistoryEvent::Delivery {
                poisoned: Some(true),
                ..
            } => l.node.as_deref(),
            _ => None,
        })
    }
}

/// What the caller chose to decide from the facts it was shown.
#[derive(Debug, Clone)]
pub enum What {
    /// An event, decided by [`decide::decide`].
    Event(Event),
    /// A move to another deployment, decided by [`migrate::migrate`] and
    /// applied with the deployment change in the same transaction.
    Migrate {
        destination: Destination,
        graph: Box<Graph>,
        /// The instance's outbox rows and correlations, read under the claim.
        holdings: migrate::Holdings,
        mapping: BTreeMap<String, String>,
        reset_budget: bool,
        /// Hold the migrated instance for a ramped release, as this actor:
        /// its next task attempts parked at the migration instant
        /// ([`migrate::park_next_attempts`]) and the instance quarantined,
        /// both in the migration's own transaction. Nothing is held when
        /// nothing was parked.
        hold: Option<qflow_store::contain::Actor>,
    },
}

/// A choice and the instant it is decided at (virtual time).
#[derive(Debug, Clone)]
pub struct Choice {
    pub what: What,
    pub at_ms: i64,
}

impl Choice {
    pub fn event(event: Event, at_ms: i64) -> Choice {
        Choice {
            what: What::Event(event),
            at_ms,
        }
    }
}

/// Where a race was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Another process held the claim: nothing was read.
    Claim,
    /// The facts moved (or the claim lapsed) between the read and the apply:
    /// the decision was refused, nothing was written.
    Apply,
}

/// What [`take`] did.
#[derive(Debug)]
pub enum Taken {
    Decided(Decision),
    /// Nothing to decide from these facts.
    Idle,
    /// Another party won the race; nothing was written.
    Lost {
        stage: Stage,
        error: StoreError,
    },
}

/// Take one decision durably (see the module docs). `graph` resolves the
/// instance's deployment from what was read under the claim; `choose` picks
/// what to decide from the facts, or `None` for nothing.
pub fn take<G: std::ops::Deref<Target = Graph>>(
    store: &mut Store,
    owner: &str,
    instance: &str,
    graph: impl FnOnce(&Store, &InstanceFacts) -> Result<G, RunError>,
    choose: impl FnOnce(&Store, &Graph, &InstanceFacts) -> Result<Option<Choice>, RunError>,
) -> Result<Taken, RunError> {
    match store.claim(instance, owner, system_now_ms()) {
        Ok(()) => {}
        Err(error @ (StoreError::Claimed { .. } | StoreError::Quarantined(_))) => {
            return Ok(Taken::Lost {
                stage: Stage::Claim,
                error,
            })
        }
        Err(e) => return Err(e.into()),
    }
    let facts = store.facts(instance)?;
    let graph = graph(store, &facts)?;
    // A snapshot nothing can be decided on fails its instance whatever the
    // caller came for, at the instant of its last decision (time does not
    // move for it): never a wedge, never a success.
    if !facts.status.is_terminal() {
        let f = facts.as_facts(instance);
        if let Some(why) = decide::damage::unreadable(&graph, &f) {
            let at = store
                .last_decision_ms(instance)?
                .unwrap_or(facts.started_ms);
            let t = decide::damage::fail(&graph, &f, &why, at);
            let applied = store.apply(instance, owner, facts.version, &t, at, system_now_ms());
            return match applied {
                Ok(seq) => Ok(Taken::Decided(Decision::of(seq, at, &t))),
                Err(error) if error.is_lost_race() => Ok(Taken::Lost {
                    stage: Stage::Apply,
                    error,
                }),
                Err(e) => Err(e.into()),
            };
        }
    }
    let Some(choice) = choose(store, &graph, &facts)? else {
        return Ok(Taken::Idle);
    };
    let f = facts.as_facts(instance);
    let at = choice.at_ms;
    let wall = system_now_ms();
    let (applied, t, plan) = match choice.what {
        What::Event(event) => {
            let t = decide::decide(&graph, &f, &event, at);
            (
                store.apply(instance, owner, facts.version, &t, at, wall),
                t,
                None,
            )
        }
        What::Migrate {
            destination,
            graph: new_graph,
            holdings,
            mapping,
            reset_budget,
            hold,
        } => {
            let (plan, mut t) = migrate::migrate(
                &graph,
                &new_graph,
                &f,
                &holdings,
                &mapping,
                reset_budget,
                at,
            )
            .map_err(RunError::Migrate)?;
            let hold = hold.filter(|_| migrate::park_next_attempts(&new_graph, &mut t, at) > 0);
            let mut plan = plan;
            plan.status_after = t.status;
            let applied = store
                .migrate_instance(
                    instance,
                    owner,
                    facts.version,
                    &destination,
                    &t,
                    at,
                    wall,
                    hold.as_ref(),
                )
                .map(|(seq, _)| seq);
            (applied, t, Some(plan))
        }
    };
    match applied {
        Ok(seq) => Ok(Taken::Decided(Decision {
            plan,
            ..Decision::of(seq, at, &t)
        })),
        Err(error) if error.is_lost_race() => Ok(Taken::Lost {
            stage: Stage::Apply,
            error,
        }),
        Err(e) => Err(e.into()),
    }
}

/// [`take`] for many instances at once, with group commit: every instance
/// of `instances` not held elsewhere is claimed in one transaction, each is
/// decided from its own facts read under its claim (`choose` sees them as
/// in [`take`], and may pick an event or nothing), and every decision is
/// applied in one more transaction, each under its own claim and version
/// check ([`Store::apply_many`]): a refused one is [`Taken::Lost`] alone.
/// What `choose` writes (an in-flight record) is committed together, before
/// the decisions, in one more transaction ([`Store::begin_group`]); its
/// caller starts what those records announce only after this returns.
/// Instances claimed elsewhere are left out of the answer. Two commits
/// carry the whole group, where [`take`] costs three per decision.
pub fn take_many<G: std::ops::Deref<Target = Graph>>(
    store: &mut Store,
    owner: &str,
    instances: &[String],
    mut graph: impl FnMut(&Store, &InstanceFacts) -> Result<G, RunError>,
    mut choose: impl FnMut(
        &Store,
        &str,
        &Graph,
        &InstanceFacts,
    ) -> Result<Option<(Event, i64)>, RunError>,
) -> Result<Vec<(String, Taken)>, RunError> {
    // On SQLite the whole group is one write transaction (claims, reads,
    // in-flight records, decisions, releases): one commit, one sync of the
    // log per group, as the fleet driver pays per batch. The claims and
    // version checks inside it are as they are alone (each write a
    // savepoint of it); nothing of a group that failed is kept. On
    // PostgreSQL each step commits on its own, as before.
    store.begin_group()?;
    let out = take_group(store, owner, instances, &mut graph, &mut choose);
    let ended = store.end_group(out.is_ok());
    let out = out?;
    ended?;
    Ok(out)
}

#[allow(clippy::type_complexity)]
fn take_group<G: std::ops::Deref<Target = Graph>>(
    store: &mut Store,
    owner: &str,
    instances: &[String],
    graph: &mut impl FnMut(&Store, &InstanceFacts) -> Result<G, RunError>,
    choose: &mut impl FnMut(
        &Store,
        &str,
        &Graph,
        &InstanceFacts,
    ) -> Result<Option<(Event, i64)>, RunError>,
) -> Result<Vec<(String, Taken)>, RunError> {
    let claimed = store.claim_many(instances, owner, system_now_ms())?;
    let mut decided: Vec<(String, i64, Transition, i64)> = Vec::new();
    let mut idle: Vec<String> = Vec::new();
    let mut read = || -> Result<(), RunError> {
        // The group's facts, and what choosing reads, in a few statements
        // for the whole group (`qflow_store::group`), not a dozen each.
        let mut all = store.facts_many(&claimed)?;
        store.begin_group_reads(&claimed)?;
        for instance in &claimed {
            let facts = all
                .remove(instance)
                .ok_or_else(|| qflow_store::StoreError::NoInstance(instance.clone()))?;
            let graph = graph(store, &facts)?;
            let f = facts.as_facts(instance);
            if !facts.status.is_terminal() {
                if let Some(why) = decide::damage::unreadable(&graph, &f) {
                    let at = store
                        .last_decision_ms(instance)?
                        .unwrap_or(facts.started_ms);
                    let t = decide::damage::fail(&graph, &f, &why, at);
                    decided.push((instance.clone(), facts.version, t, at));
                    continue;
                }
            }
            match choose(store, instance, &graph, &facts)? {
                None => idle.push(instance.clone()),
                Some((event, at)) => {
                    let t = decide::decide(&graph, &f, &event, at);
                    decided.push((instance.clone(), facts.version, t, at));
                }
            }
        }
        Ok(())
    };
    let read = read();
    store.end_group_reads();
    if let Err(e) = read {
        // Nothing of the group is applied; its claims are given back now
        // rather than left to lapse (on SQLite the group's rollback does).
        let _ = store.apply_many(owner, &[], &claimed, system_now_ms());
        return Err(e);
    }
    let pending: Vec<qflow_store::batch::Pending<'_>> = decided
        .iter()
        .map(|(id, version, t, at)| qflow_store::batch::Pending {
            instance: id,
            version: *version,
            transition: t,
            at_ms: *at,
        })
        .collect();
    let results = store.apply_many(owner, &pending, &idle, system_now_ms())?;
    let mut out = Vec::with_capacity(claimed.len());
    for ((id, _, t, at), result) in decided.iter().zip(results) {
        let taken = match result {
            Ok(seq) => Taken::Decided(Decision::of(seq, *at, t)),
            Err(error) if error.is_lost_race() => Taken::Lost {
                stage: Stage::Apply,
                error,
            },
            Err(e) => return Err(e.into()),
        };
        out.push((id.clone(), taken));
    }
    out.extend(idle.into_iter().map(|id| (id, Taken::Idle)));
    Ok(out)
}

impl Taken {
    /// For callers to whom a lost race is an error (one process expected to
    /// own the instance): the decision, `None` when idle, the store's refusal
    /// otherwise.
    pub fn or_lost(self) -> Result<Option<Decision>, RunError> {
        match self {
            Taken::Decided(d) => Ok(Some(d)),
            Taken::Idle => Ok(None),
            Taken::Lost { error, .. } => Err(error.into()),
        }
    }
}

/// Load and compile the model a deployment pins (by its stored source).
pub fn deployed_graph(store: &Store, deployment: i64) -> Result<Graph, RunError> {
    let source = store.deployment_source(deployment)?.unwrap_or_default();
    let defs = qflow_model::load(&source).map_err(|d| {
        RunError::Graph(crate::graph::GraphError {
            node: "deployment".into(),
            message: format!(
                "the pinned source no longer loads ({} diagnostics)",
                d.len()
            ),
        })
    })?;
    // A document with several executable processes was deployed for one of
    // them (`run --process`): the deployment row names which.
    if defs.executable_processes().nth(1).is_some() {
        let process = store.deployment(deployment)?.map(|d| d.process_id);
        return Ok(Graph::compile_named(&defs, process.as_deref())?);
    }
    Ok(Graph::compile(&defs)?)
}
