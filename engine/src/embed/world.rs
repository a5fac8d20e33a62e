//! The handlers an [`Engine`](super::Engine) runs: a closure per `q:task`
//! name and a relay per channel, as the runtime's [`World`].

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::instance::event::{ChannelOutcome, DeliveryOutcome, FailureClass, TaskOutcome};
use crate::runtime::graph::Graph;
use crate::runtime::world::{AttemptCall, DeliveryCall, World};

use super::task::{run_handler, Task, TaskFn, TaskResult, MISSING};

/// One delivery of a channel call's request, as a relay sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub instance: &'a str,
    pub node: &'a str,
    pub channel: &'a str,
    /// The same on every delivery of this request, fresh for every attempt
    /// of the call (send it as the `Idempotency-Key`).
    pub idempotency_key: &'a str,
    /// What the counterpart answers on ([`Engine::respond`]).
    pub correlation: &'a str,
    /// The call's attempt the request belongs to.
    pub attempt: u32,
    /// The request's body: the instance's variables when it was emitted.
    pub body: &'a Value,
}

/// How one delivery went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The counterpart has the request; it answers later through
    /// [`Engine::respond`].
    Delivered,
    /// Not delivered: the outbox tries again on the channel's own curve
    /// (`<q:channelConfig>`) until its `maxDeliveries` poisons the request.
    Failed(String),
    /// The counterpart refused the request (an HTTP 4xx other than 408 and
    /// 429): poisoned at once, the reason kept (status, body summary).
    Rejected(String),
    /// Not delivered; the counterpart asked to be tried again after this
    /// long (`Retry-After` on a 429 or 503).
    RetryAfter(String, Duration),
}

type RelayFn = dyn Fn(&Request<'_>) -> Delivery + Send + Sync;

/// The handlers of registered tasks and the relays of channels: the world
/// an [`Engine`] runs in. A channel without a relay has its requests
/// delivered in-process at once: the embedding program answers them with
/// [`Engine::respond`].
#[derive(Clone)]
pub struct Handlers {
    tasks: BTreeMap<String, Arc<TaskFn>>,
    relays: BTreeMap<String, Arc<RelayFn>>,
    leases: BTreeMap<String, Duration>,
    lease: Duration,
    bounds: BTreeMap<String, usize>,
    breakers: BTreeMap<String, crate::runtime::breaker::BreakerConfig>,
}

impl Default for Handlers {
    fn default() -> Self {
        Handlers {
            tasks: BTreeMap::new(),
            relays: BTreeMap::new(),
            leases: BTreeMap::new(),
            bounds: BTreeMap::new(),
            breakers: BTreeMap::new(),
            lease: DEFAULT_LEASE,
        }
    }
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("tasks", &self.tasks.keys().collect::<Vec<_>>())
            .field("relays", &self.relays.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// How long a handler may run before its outcome could find the instance's
/// claim lapsed, unless its registration says otherwise
/// ([`Handlers::task_with_lease`]).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(300);

impl Handlers {
    pub fn new() -> Handlers {
        Handlers::default()
    }

    /// Run `handler` for every attempt of the `q:task` named `name`
    /// (replacing an earlier registration).
    pub fn task<F>(&mut self, name: &str, handler: F) -> &mut Handlers
    where
        F: Fn(&Task<'_>) -> TaskResult + Send + Sync + 'static,
    {
        self.tasks.insert(name.to_string(), Arc::new(handler));
        self
    }

    /// [`Handlers::task`] for a handler that may run up to `lease` (its own
    /// timeout): the instance's claim is held at least that long.
    pub fn task_with_lease<F>(&mut self, name: &str, lease: Duration, handler: F) -> &mut Handlers
    where
        F: Fn(&Task<'_>) -> TaskResult + Send + Sync + 'static,
    {
        self.leases.insert(name.to_string(), lease);
        self.task(name, handler)
    }

    /// Deliver every request of `channel` with `relay`.
    pub fn relay<F>(&mut self, channel: &str, relay: F) -> &mut Handlers
    where
        F: Fn(&Request<'_>) -> Delivery + Send + Sync + 'static,
    {
        self.relays.insert(channel.to_string(), Arc::new(relay));
        self
    }

    /// Run at most `n` attempts of the task (or deliveries of the channel)
    /// `dependency` at once under [`super::Engine::serve`]: a bulkhead, so
    /// one slow dependency cannot take every lane.
    pub fn concurrency(&mut self, dependency: &str, n: usize) -> &mut Handlers {
        self.bounds.insert(dependency.to_string(), n.max(1));
        self
    }

    /// Give the task `dependency` a circuit breaker under
    /// [`super::Engine::serve`]: its attempts' outcomes feed the breaker's
    /// machine ([`crate::runtime::breaker`]), which pauses the dependency
    /// when it opens, lets canaries through and releases on a ramp when
    /// they succeed (docs/outage.md, "Circuit breaker").
    pub fn breaker(
        &mut self,
        dependency: &str,
        config: crate::runtime::breaker::BreakerConfig,
    ) -> &mut Handlers {
        self.breakers.insert(dependency.to_string(), config);
        self
    }

    /// The breakers declared ([`Handlers::breaker`]), by dependency.
    pub fn breakers(&self) -> &BTreeMap<String, crate::runtime::breaker::BreakerConfig> {
        &self.breakers
    }

    /// The per-dependency bounds ([`Handlers::concurrency`]).
    pub fn bounds(&self) -> &BTreeMap<String, usize> {
        &self.bounds
    }

    /// Whether a handler is registered for the task `name`.
    pub fn has_task(&self, name: &str) -> bool {
        self.tasks.contains_key(name)
    }

    /// The `q:task` names of `graph` no handler is registered for.
    pub fn missing(&self, graph: &Graph) -> Vec<String> {
        task_names(graph)
            .into_iter()
            .filter(|n| !self.tasks.contains_key(n))
            .collect()
    }
}

/// The `q:task` names of a process's registered tasks, sorted, once each.
pub fn task_names(graph: &Graph) -> Vec<String> {
    let names: std::collections::BTreeSet<String> = graph
        .nodes
        .values()
        .filter_map(|n| match &n.kind {
            crate::runtime::graph::Kind::Task {
                task, call: None, ..
            } => Some(task.clone()),
            _ => None,
        })
        .collect();
    names.into_iter().collect()
}

/// The channels a process's calls use, sorted, once each.
pub fn channel_names(graph: &Graph) -> Vec<String> {
    let names: std::collections::BTreeSet<String> = graph
        .nodes
        .values()
        .filter_map(|n| n.call().map(|c| c.channel.clone()))
        .collect();
    names.into_iter().collect()
}

impl World for Handlers {
    fn attempt(&self, call: &AttemptCall<'_>) -> TaskOutcome {
        let task = Task {
            instance: call.instance,
            node: call.node,
            name: call.task,
            attempt: call.attempt,
            key: call.key,
            variables: call.variables,
        };
        match self.tasks.get(call.task) {
            Some(h) => run_handler(h.as_ref(), &task),
            None => TaskOutcome::Fail {
                code: MISSING.into(),
                class: FailureClass::Permanent,
                retry_after: None,
                message: Some(format!(
                    "no handler is registered for the task `{}`: register one before starting instances",
                    call.task
                )),
            },
        }
    }

    fn deliver(&self, call: &DeliveryCall<'_>) -> (DeliveryOutcome, Option<ChannelOutcome>) {
        let Some(relay) = self.relays.get(call.channel) else {
            return (DeliveryOutcome::Ok, None);
        };
        let request = Request {
            instance: call.instance,
            node: call.node,
            channel: call.channel,
            idempotency_key: call.idempotency_key,
            correlation: call.correlation,
            attempt: call.attempt,
            body: call.body,
        };
        let outcome = match catch_unwind(AssertUnwindSafe(|| relay(&request))) {
            Ok(Delivery::Delivered) => DeliveryOutcome::Ok,
            Ok(Delivery::Failed(why)) => DeliveryOutcome::Fail(why),
            Ok(Delivery::Rejected(why)) => DeliveryOutcome::Rejected(why),
            Ok(Delivery::RetryAfter(why, after)) => DeliveryOutcome::Later(why, after),
            Err(_) => DeliveryOutcome::Fail(format!("the relay of `{}` panicked", call.channel)),
        };
        (outcome, None)
    }

    fn attempt_lease(&self, task: &str) -> Option<Duration> {
        Some(self.leases.get(task).copied().unwrap_or(self.lease))
    }

    fn records_in_flight(&self) -> bool {
        true
    }

    fn scripts_answers(&self) -> bool {
        false
    }
}
