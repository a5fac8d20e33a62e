//! The services a local run offers its faces (the console, `qflow run`, the
//! tests): an operator's actions, the inspection and the final line, and a
//! migration. They live here, above the runtime, so that the runtime's local
//! driver names no service: [`LocalRun`] only takes decisions.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::inspect::{FinalState, Inspection};
use crate::instance::TaskOutcome;
use crate::model::Definitions;
use crate::operate::{self, NoAttempt};
use crate::runtime::clock::Clock;
use crate::runtime::driver::{Decision, LocalRun, RunError};
use crate::runtime::graph::Graph;
use crate::runtime::shell::deployed_graph;
use crate::store::{Store, StoreError};

/// What a face asks of a local run beyond its next decision.
pub trait LocalRunExt {
    /// Run the next attempt with an outcome an operator picked
    /// ([`operate::attempt_now`]).
    fn attempt_now(
        &mut self,
        outcome: TaskOutcome,
    ) -> Result<Result<Decision, NoAttempt>, RunError>;
    /// Answer the call's attempt `attempt` (or the latest) with `body`
    /// ([`operate::respond_now`]).
    fn respond_now(
        &mut self,
        attempt: Option<u32>,
        body: Value,
    ) -> Result<Result<Decision, NoAttempt>, RunError>;
    /// Poison the pending request ([`operate::poison_now`]).
    fn poison_now(&mut self) -> Result<Result<Vec<Decision>, NoAttempt>, RunError>;
    /// The instance as plain data, read back from the store.
    fn inspect(&self) -> Result<Inspection, RunError>;
    /// The instance's state as the last line of `qflow run` says it
    /// (docs/run.md), typed; [`FinalState::to_json`] is its JSON form.
    fn final_state(&self) -> Result<FinalState, RunError>;
}

impl<C: Clock> LocalRunExt for LocalRun<C> {
    fn attempt_now(
        &mut self,
        outcome: TaskOutcome,
    ) -> Result<Result<Decision, NoAttempt>, RunError> {
        let (store, graph, instance, clock) = self.parts_mut();
        operate::attempt_now(store, graph, instance, clock, outcome)
    }

    fn respond_now(
        &mut self,
        attempt: Option<u32>,
        body: Value,
    ) -> Result<Result<Decision, NoAttempt>, RunError> {
        let (store, graph, instance, clock) = self.parts_mut();
        operate::respond_now(store, graph, instance, clock, attempt, body)
    }

    fn poison_now(&mut self) -> Result<Result<Vec<Decision>, NoAttempt>, RunError> {
        let (store, graph, instance, clock) = self.parts_mut();
        operate::poison_now(store, graph, instance, clock)
    }

    fn inspect(&self) -> Result<Inspection, RunError> {
        Ok(Inspection::read(
            self.store(),
            self.graph(),
            self.instance_id(),
        )?)
    }

    fn final_state(&self) -> Result<FinalState, RunError> {
        Ok(self.inspect()?.final_state())
    }
}

/// Migrate an instance (unfinished, or FAILED: the repair) onto the model
/// `source`, renaming node-scoped state by `mapping`; with `reset_budget` the
/// attempt counters start over. One transaction under the claim; the time of
/// the decision is the instance's last decision (virtual time does not move).
/// A later [`LocalRun::open`] of the same source resumes the instance.
/// ([`crate::repair`] is the operator's form, with a plan shown first.)
pub fn migrate_instance(
    store: &mut Store,
    source: &str,
    defs: &Definitions,
    instance: &str,
    mapping: &BTreeMap<String, String>,
    reset_budget: bool,
) -> Result<Decision, RunError> {
    let target = crate::repair::Target::Model {
        source: source.to_string(),
        origin: None,
        graph: Box::new(Graph::compile(defs)?),
    };
    match crate::repair::apply(store, instance, &target, mapping, reset_budget, None) {
        Ok((d, _)) => Ok(d),
        Err(crate::repair::RepairError::Run(e)) => Err(e),
        Err(crate::repair::RepairError::Refused(e)) => Err(RunError::Migrate(e)),
        Err(e) => Err(RunError::Migrate(crate::runtime::migrate::MigrateError(
            e.to_string(),
        ))),
    }
}

/// The last line of `qflow run` for `instance`: what its inspection says
/// ([`Inspection::final_state`]).
pub fn final_state(store: &Store, instance: &str) -> Result<FinalState, RunError> {
    let row = store
        .instance(instance)?
        .ok_or_else(|| StoreError::NoInstance(instance.into()))?;
    let graph = deployed_graph(store, row.deployment_id)?;
    Ok(Inspection::read(store, &graph, instance)?.final_state())
}
