//! The world around instances: who runs a registered task's attempt, and
//! what becomes of a channel call's request when the outbox delivers it.
//!
//! The drivers ([`crate::LocalRun`], [`crate::replica::Replica`]
//! and the embedding API [`crate::embed::Engine`]) ask a [`World`] for these
//! outcomes and nothing else; every decision made on them is the runtime's.
//! A [`crate::Scenario`] is one world (scripted outcomes, consumed one
//! entry per run or delivery); [`crate::embed::Handlers`] (plain Rust
//! closures) is another, and the `qflow` binary's handlers file (commands and
//! HTTP endpoints) a third.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::scenario::{Scenario, ScheduledEvent};
use qflow_instance::event::{ChannelOutcome, DeliveryOutcome, TaskOutcome};

/// One attempt of a registered task, as its handler sees it.
#[derive(Debug, Clone, Copy)]
pub struct AttemptCall<'a> {
    pub instance: &'a str,
    /// The BPMN id of the task's node.
    pub node: &'a str,
    /// The `q:task` name the handler is registered under.
    pub task: &'a str,
    /// The 1-based number of this attempt of the node (what the history's
    /// `attempt` line will say).
    pub attempt: u32,
    /// The attempt's idempotency key, `instance/node/N`: the same for no two
    /// attempts of the node, even where `attempt` restarts (a loop, a reset
    /// budget), since `N` comes from the store's key ledger.
    pub key: &'a str,
    /// How many times this task's handler already ran for this instance
    /// (what a scenario's list is indexed by).
    pub runs: usize,
    /// The instance's variables, as persisted.
    pub variables: &'a BTreeMap<String, Value>,
}

/// One delivery of a channel call's request by the outbox relay.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryCall<'a> {
    pub instance: &'a str,
    pub node: &'a str,
    pub channel: &'a str,
    /// The request's idempotency key: the same on every delivery of this
    /// request, a fresh one for every attempt of the call.
    pub idempotency_key: &'a str,
    /// The correlation a counterpart answers on (`instance/node`).
    pub correlation: &'a str,
    /// The call's attempt this request belongs to.
    pub attempt: u32,
    /// Deliveries of requests on this channel already tried for this
    /// instance, and how many of them got through (what a scenario's
    /// `deliveries` and `channels` lists are indexed by).
    pub tried: usize,
    pub delivered: usize,
    /// The request's body: the instance's variables when the attempt
    /// emitted it, as the outbox keeps them.
    pub body: &'a Value,
}

/// Where the outcomes of attempts and deliveries come from.
pub trait World {
    /// Run one attempt of a registered task and say how it went. Never
    /// panics: a handler's panic is the world's to turn into a failure.
    fn attempt(&self, call: &AttemptCall<'_>) -> TaskOutcome;

    /// Deliver one request; for a delivered one, what the counterpart will
    /// do when it is known now (a scripted counterpart), or `None` when it
    /// answers later on its own (through [`crate::driver::respond`]).
    fn deliver(&self, call: &DeliveryCall<'_>) -> (DeliveryOutcome, Option<ChannelOutcome>);

    /// Events scripted to arrive from outside (a scenario's `events`).
    fn events(&self) -> &[ScheduledEvent] {
        &[]
    }

    /// How long an attempt of `task` may take at most (a handler's
    /// timeout): the driver keeps the instance's claim at least that long
    /// so the attempt's outcome is never refused for a lapsed claim.
    fn attempt_lease(&self, _task: &str) -> Option<Duration> {
        None
    }

    /// Whether an attempt is recorded as started before the handler runs
    /// (real handlers: their effects happen outside the store). A process
    /// that dies mid-attempt then leaves a record, and the next one decides
    /// that attempt as an unknown outcome rather than running it again. A
    /// scripted world has no effects to double, and records nothing.
    fn records_in_flight(&self) -> bool {
        false
    }

    /// Whether a delivery's outcome may script the counterpart's answer
    /// (a scenario's `channels`): the chooser then looks in the history for
    /// answers due. Real counterparts answer on their own: `false` spares
    /// every look that read.
    fn scripts_answers(&self) -> bool {
        true
    }
}

impl World for Scenario {
    fn attempt(&self, call: &AttemptCall<'_>) -> TaskOutcome {
        self.task_outcome(call.task, call.runs)
    }

    fn deliver(&self, call: &DeliveryCall<'_>) -> (DeliveryOutcome, Option<ChannelOutcome>) {
        let outcome = self.delivery_outcome(call.channel, call.tried);
        let counterpart = (outcome == DeliveryOutcome::Ok)
            .then(|| self.channel_outcome(call.channel, call.delivered));
        (outcome, counterpart)
    }

    fn events(&self) -> &[ScheduledEvent] {
        &self.events
    }
}

impl<W: World + ?Sized> World for Box<W> {
    fn attempt(&self, call: &AttemptCall<'_>) -> TaskOutcome {
        (**self).attempt(call)
    }
    fn deliver(&self, call: &DeliveryCall<'_>) -> (DeliveryOutcome, Option<ChannelOutcome>) {
        (**self).deliver(call)
    }
    fn events(&self) -> &[ScheduledEvent] {
        (**self).events()
    }
    fn attempt_lease(&self, task: &str) -> Option<Duration> {
        (**self).attempt_lease(task)
    }
    fn records_in_flight(&self) -> bool {
        (**self).records_in_flight()
    }
    fn scripts_answers(&self) -> bool {
        (**self).scripts_answers()
    }
}
