//! qflow as a library: open a store, deploy a model, register a handler for
//! each `q:task` name, start instances, drive them, answer their channel
//! calls.
//!
//! ```
//! use qflow_engine::embed::{Engine, TaskError};
//! use serde_json::json;
//!
//! # let source = qflow_engine::embed::EXAMPLE_MODEL;
//! let mut engine = Engine::in_memory()?;
//! engine.register("payments.charge", |task| {
//!     let amount = task.var("amount").and_then(|a| a.as_i64()).unwrap_or(0);
//!     if amount <= 0 {
//!         return Err(TaskError::permanent("INVALID_AMOUNT"));
//!     }
//!     Ok(json!({ "chargeId": format!("ch_{amount}") }))
//! });
//! let deployment = engine.deploy(source)?;
//! let instance = engine.start(&deployment, json!({ "amount": 42 }))?;
//! engine.run_until_idle()?;
//! assert_eq!(engine.status(&instance)?["status"], "completed");
//! assert_eq!(engine.variables(&instance)?["chargeId"], "ch_42");
//! # Ok::<(), qflow_engine::embed::EngineError>(())
//! ```
//!
//! Everything the engine decides is decided exactly as for `qflow run`:
//! every attempt, retry park, timeout and failure is a durable transition
//! in the store, taken under the instance's claim. A handler is a plain
//! closure: it returns the variables to merge, a BPMN error (routed to an
//! error boundary), or a failure with a code and a class (and, for
//! rate-limited, the provider's delay). A handler that panics does not
//! crash the engine: the attempt fails with the code `q.handler.panic`
//! and the class `unknown-outcome`, because the panic may have come after
//! the handler's effect; the node then waits for a reconciliation
//! ([`Engine::resolve`]) and is never retried blindly.
//!
//! Time: [`Time::Virtual`] (the default) gives every instance its own
//! time-skipping clock, as `qflow run` does, so a thirteen-hour backoff
//! runs at once; [`Time::System`] waits for the wall clock, which is what
//! [`Engine::serve`] is for.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::inspect::Inspection;
use crate::instance::event::{ChannelOutcome, DeliveryOutcome, ExternalEvent, TaskOutcome};
use crate::instance::Event;
use crate::runtime::clock::{system_now_ms, Clock, SystemClock, VirtualClock};
use crate::runtime::decide;
use crate::runtime::driver::{self, Ctx, Decision, Next, RunError, Verdict};
use crate::runtime::graph::Graph;
use crate::runtime::shell::{self, deployed_graph, Choice, Taken};
use crate::runtime::world::{AttemptCall, DeliveryCall, World};
use crate::store::{local_owner, Deployment, Store, StoreError};

pub use crate::instance::event::{FailureClass, Resolution};
pub use crate::runtime::driver::Verdict as ResponseVerdict;

/// An instance's variables.
pub type Variables = BTreeMap<String, Value>;

/// The code of a handler that panicked (class `unknown-outcome`).
pub const PANIC: &str = "q.handler.panic";
/// The code of an attempt of a task no handler is registered for (class
/// `permanent`: a configuration problem, which no retry repairs).
pub const MISSING: &str = "q.handler.missing";

/// One attempt of a registered task, as its handler sees it.
#[derive(Debug, Clone, Copy)]
pub struct Task<'a> {
    /// The instance's id.
    pub instance: &'a str,
    /// The BPMN id of the task's node.
    pub node: &'a str,
    /// The `q:task` name.
    pub name: &'a str,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// The instance's variables, as persisted.
    pub variables: &'a Variables,
}

impl Task<'_> {
    /// One variable, if set.
    pub fn var(&self, name: &str) -> Option<&Value> {
        self.variables.get(name)
    }

    /// A key that names this attempt and no other (`instance/node/attempt`):
    /// what a handler sends to a provider that deduplicates.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}/{}", self.instance, self.node, self.attempt)
    }
}

/// Why an attempt did not succeed.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskError {
    /// A BPMN error: routes to the task's error boundary for `code` (or a
    /// catch-all one); without one, the instance fails.
    Bpmn { code: String },
    /// The attempt failed; the task's `<q:retry>` decides what follows
    /// from the class.
    Failure {
        code: String,
        class: FailureClass,
        /// The provider's delay before the next attempt (rate-limited only;
        /// capped by the policy's `maxDelay`).
        retry_after: Option<Duration>,
        message: Option<String>,
    },
}

impl TaskError {
    /// A BPMN error with this code.
    pub fn bpmn(code: impl Into<String>) -> TaskError {
        TaskError::Bpmn { code: code.into() }
    }

    fn failure(code: impl Into<String>, class: FailureClass) -> TaskError {
        TaskError::Failure {
            code: code.into(),
            class,
            retry_after: None,
            message: None,
        }
    }

    /// Worth another attempt later (a provider outage): retried per policy.
    pub fn transient(code: impl Into<String>) -> TaskError {
        TaskError::failure(code, FailureClass::Transient)
    }

    /// No retry can repair it (invalid input, configuration): terminal at once.
    pub fn permanent(code: impl Into<String>) -> TaskError {
        TaskError::failure(code, FailureClass::Permanent)
    }

    /// The provider said when to come back: that delay is the next one
    /// (capped by the policy's `maxDelay`).
    pub fn rate_limited(code: impl Into<String>, retry_after: Option<Duration>) -> TaskError {
        TaskError::Failure {
            code: code.into(),
            class: FailureClass::RateLimited,
            retry_after,
            message: None,
        }
    }

    /// The effect may have happened: never retried blindly; the node waits
    /// for a reconciliation ([`Engine::resolve`]).
    pub fn unknown_outcome(code: impl Into<String>) -> TaskError {
        TaskError::failure(code, FailureClass::UnknownOutcome)
    }

    /// The same failure, with a message for the history and the operator.
    pub fn with_message(mut self, text: impl Into<String>) -> TaskError {
        if let TaskError::Failure { message, .. } = &mut self {
            *message = Some(text.into());
        }
        self
    }
}

/// What a handler returns: a JSON object of variables to merge into the
/// instance's (`Value::Null` merges nothing), or why it did not succeed.
pub type TaskResult = Result<Value, TaskError>;

type TaskFn = dyn Fn(&Task<'_>) -> TaskResult + Send + Sync;

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
}

impl Default for Handlers {
    fn default() -> Self {
        Handlers {
            tasks: BTreeMap::new(),
            relays: BTreeMap::new(),
            leases: BTreeMap::new(),
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

/// A handler's result as the runtime's outcome; a panic is `q.handler.panic`.
fn run_handler(handler: &TaskFn, task: &Task<'_>) -> TaskOutcome {
    match catch_unwind(AssertUnwindSafe(|| handler(task))) {
        Ok(Ok(Value::Null)) => TaskOutcome::Ok(BTreeMap::new()),
        Ok(Ok(Value::Object(vars))) => TaskOutcome::Ok(vars.into_iter().collect()),
        Ok(Ok(other)) => TaskOutcome::Fail {
            code: "q.handler.output".into(),
            class: FailureClass::Permanent,
            retry_after: None,
            message: Some(format!(
                "the handler of `{}` returned {other}, not a JSON object of variables",
                task.name
            )),
        },
        Ok(Err(TaskError::Bpmn { code })) => TaskOutcome::BpmnError { code },
        Ok(Err(TaskError::Failure {
            code,
            class,
            retry_after,
            message,
        })) => TaskOutcome::Fail {
            code,
            class,
            retry_after,
            message,
        },
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic payload".into());
            TaskOutcome::Fail {
                code: PANIC.into(),
                class: FailureClass::UnknownOutcome,
                retry_after: None,
                message: Some(format!("the handler of `{}` panicked: {what}", task.name)),
            }
        }
    }
}

impl World for Handlers {
    fn attempt(&self, call: &AttemptCall<'_>) -> TaskOutcome {
        let task = Task {
            instance: call.instance,
            node: call.node,
            name: call.task,
            attempt: call.attempt,
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
}

/// How an [`Engine`] tells time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Time {
    /// Every instance on its own time-skipping clock, starting at 0: a due
    /// timer is taken at once, at its own instant (tests, simulations).
    #[default]
    Virtual,
    /// The wall clock: a timer is taken when it is due.
    System,
}

/// Why the engine could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the model is refused: {}", .0.iter().map(|d| format!("{} {}", d.code.as_str(), d.message)).collect::<Vec<_>>().join("; "))]
    Refused(Vec<Diagnostic>),
    #[error("variables must be a JSON object, not {0}")]
    NotAnObject(String),
    #[error("no instance `{0}` in this store")]
    NoInstance(String),
    #[error("no deployment of a process `{0}` that may start instances (deploy it first: qflow deploy MODEL --db DB)")]
    NoProcess(String),
    #[error("no handler for the task{} {}: add them to the handlers", if .0.len() == 1 { "" } else { "s" }, .0.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", "))]
    MissingHandlers(Vec<String>),
    #[error("another process holds the claim on instance `{0}`; try again when it lets go")]
    Busy(String),
}

/// One decision an [`Engine`] took, and the instance it was for.
#[derive(Debug, Clone)]
pub struct Step {
    pub instance: String,
    pub decision: Decision,
}

/// The engine, embedded: a store, the handlers, and a driver.
pub struct Engine {
    store: Store,
    handlers: Handlers,
    time: Time,
    owner: String,
    graphs: BTreeMap<i64, Arc<Graph>>,
    /// Best-effort poison wakes (instance, node): prompts, never facts.
    wakes: Vec<(String, String)>,
    /// Per instance: the instant of its last decision and how many were
    /// taken at it (a loop that never waits is stopped, not spun).
    instants: BTreeMap<String, (i64, u32)>,
}

/// Instances started before this instant (2000-01-01, wall clock) were
/// started on a virtual clock, whose epoch is 0.
const VIRTUAL_EPOCH_LIMIT_MS: i64 = 946_684_800_000;

/// How many instances one round of [`Engine::step`] looks at.
const ROUND: usize = 256;

impl Engine {
    /// Open (or create) the SQLite store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Engine, EngineError> {
        Ok(Engine::with_store(Store::open(path.as_ref())?))
    }

    /// Open (or create) the store a `--db` value names: a SQLite file or a
    /// PostgreSQL database by URL (`Location::parse`).
    pub fn connect(location: &crate::store::Location) -> Result<Engine, EngineError> {
        Ok(Engine::with_store(Store::connect(location)?))
    }

    /// A store in memory, gone when the engine is dropped (tests, examples).
    pub fn in_memory() -> Result<Engine, EngineError> {
        Ok(Engine::with_store(Store::open(Path::new(":memory:"))?))
    }

    /// An engine over an open store.
    pub fn with_store(store: Store) -> Engine {
        Engine {
            store,
            handlers: Handlers::new(),
            time: Time::Virtual,
            owner: local_owner(),
            graphs: BTreeMap::new(),
            wakes: Vec::new(),
            instants: BTreeMap::new(),
        }
    }

    /// Take claims as `owner` (by default this process, `host:pid`): a
    /// second engine in the same process, such as a server's endpoint
    /// thread, needs a name of its own for the claims to arbitrate.
    pub fn set_owner(&mut self, owner: impl Into<String>) -> &mut Engine {
        self.owner = owner.into();
        self
    }

    /// Tell time this way from now on ([`Time::Virtual`] by default).
    pub fn set_time(&mut self, time: Time) -> &mut Engine {
        self.time = time;
        self
    }

    /// Run `handler` for every attempt of the `q:task` named `name`.
    pub fn register<F>(&mut self, name: &str, handler: F) -> &mut Engine
    where
        F: Fn(&Task<'_>) -> TaskResult + Send + Sync + 'static,
    {
        self.handlers.task(name, handler);
        self
    }

    /// The handlers and relays, to register more ([`Handlers::relay`],
    /// [`Handlers::task_with_lease`]).
    pub fn handlers_mut(&mut self) -> &mut Handlers {
        &mut self.handlers
    }

    /// Replace every handler and relay at once.
    pub fn set_handlers(&mut self, handlers: Handlers) -> &mut Engine {
        self.handlers = handlers;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Load `source` (refused with its diagnostics if any rule refuses it),
    /// compile it and record it as a deployment (the same source is the
    /// same deployment).
    pub fn deploy(&mut self, source: &str) -> Result<Deployment, EngineError> {
        let defs = crate::load(source).map_err(|d| {
            EngineError::Refused(
                d.into_iter()
                    .filter(|d| d.severity == crate::Severity::Error)
                    .collect(),
            )
        })?;
        let graph = Graph::compile(&defs).map_err(RunError::from)?;
        let dep = self
            .store
            .deploy(&graph.process_id, source, system_now_ms())?;
        self.graphs.insert(dep.id, Arc::new(graph));
        Ok(dep)
    }

    /// The `q:task` names of a deployment no handler is registered for
    /// (each would fail its first attempt with [`MISSING`]).
    pub fn missing_handlers(
        &mut self,
        deployment: &Deployment,
    ) -> Result<Vec<String>, EngineError> {
        let graph = self.graph(deployment.id)?;
        Ok(self.handlers.missing(&graph))
    }

    fn graph(&mut self, deployment: i64) -> Result<Arc<Graph>, EngineError> {
        if let Some(g) = self.graphs.get(&deployment) {
            return Ok(g.clone());
        }
        let g = Arc::new(deployed_graph(&self.store, deployment)?);
        self.graphs.insert(deployment, g.clone());
        Ok(g)
    }

    fn start_ms(&self) -> i64 {
        match self.time {
            Time::Virtual => 0,
            Time::System => system_now_ms(),
        }
    }

    /// Start an instance of `deployment` with `variables` (a JSON object,
    /// or `Value::Null` for none); its id.
    pub fn start(
        &mut self,
        deployment: &Deployment,
        variables: Value,
    ) -> Result<String, EngineError> {
        let vars: Variables = match variables {
            Value::Null => Variables::new(),
            Value::Object(m) => m.into_iter().collect(),
            other => return Err(EngineError::NotAnObject(other.to_string())),
        };
        let graph = self.graph(deployment.id)?;
        let now = self.start_ms();
        let start = decide::start(&graph, &vars, now);
        Ok(self.store.start_instance(deployment, &start, now)?)
    }

    /// Start an instance of the newest deployment of `process_id` that is
    /// not retired; its id. Refused when a task of that deployment has no
    /// handler ([`EngineError::MissingHandlers`]).
    pub fn start_process(
        &mut self,
        process_id: &str,
        variables: Value,
    ) -> Result<String, EngineError> {
        let row = self
            .store
            .deployments()?
            .into_iter()
            .filter(|d| d.process_id == process_id && d.retired_ms.is_none())
            .max_by_key(|d| d.id)
            .ok_or_else(|| EngineError::NoProcess(process_id.into()))?;
        let dep = Deployment {
            id: row.id,
            process_id: row.process_id,
            hash: row.hash,
        };
        let missing = self.missing_handlers(&dep)?;
        if !missing.is_empty() {
            return Err(EngineError::MissingHandlers(missing));
        }
        self.start(&dep, variables)
    }

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

    /// Serve with the wall clock until `between` says stop: take every
    /// decision due, then call `between` (which may answer calls with
    /// [`Engine::respond`], start instances, …) and look again, pausing
    /// `idle` when nothing was due. Switches the engine to [`Time::System`].
    pub fn serve(
        &mut self,
        idle: Duration,
        mut between: impl FnMut(&mut Engine) -> bool,
    ) -> Result<u64, EngineError> {
        self.time = Time::System;
        let mut n = 0;
        loop {
            let mut busy = false;
            while self.step()?.is_some() {
                n += 1;
                busy = true;
            }
            if !between(self) {
                return Ok(n);
            }
            if !busy {
                std::thread::sleep(idle);
            }
        }
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
                        next_event(store, graph, world, &clock, instance, facts)
                    }
                    Time::System => next_event(store, graph, world, &SystemClock, instance, facts),
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
    fn now_for(&self, instance: &str) -> Result<i64, EngineError> {
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

    /// A counterpart's answer on `correlation` (`instance/node`, what a
    /// relay's [`Request::correlation`] says) to the request with
    /// `idempotency_key` (`None`: whichever attempt is live). The verdict
    /// is the runtime's: accepted, a retry pending, superseded, failed, or
    /// no such instance.
    pub fn respond(
        &mut self,
        correlation: &str,
        idempotency_key: Option<&str>,
        body: Value,
    ) -> Result<Verdict, EngineError> {
        let Some((instance, _)) = self.store.correlation(correlation)? else {
            return Ok(Verdict::NoSuchInstance);
        };
        let now = self.now_for(&instance)?;
        match driver::respond_as(
            &mut self.store,
            &self.owner,
            correlation,
            idempotency_key.unwrap_or(""),
            body,
            now,
        ) {
            Ok((verdict, _)) => Ok(verdict),
            Err(RunError::Store(StoreError::Claimed { .. } | StoreError::Conflict(_))) => {
                Err(EngineError::Busy(instance))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Reconcile an unknown outcome at `node`: the effect happened
    /// (`Succeeded`, merging `variables`), did not and must not be retried
    /// (`Failed`), or did not and may be (`Retry`: the next attempt now,
    /// within the policy's budget). The decision taken, or `None` when the
    /// instance was not waiting for that (the history says why).
    pub fn resolve(
        &mut self,
        instance: &str,
        node: &str,
        resolution: Resolution,
        variables: Value,
    ) -> Result<Decision, EngineError> {
        let variables: Variables = match variables {
            Value::Null => Variables::new(),
            Value::Object(m) => m.into_iter().collect(),
            other => return Err(EngineError::NotAnObject(other.to_string())),
        };
        let now = self.now_for(instance)?;
        let ev = Event::External {
            event: ExternalEvent::Resolve {
                node: node.to_string(),
                resolution,
                variables,
            },
            index: None,
        };
        let owner = self.owner.clone();
        let taken = shell::take(
            &mut self.store,
            &owner,
            instance,
            |store, facts| deployed_graph(store, facts.deployment_id).map(Box::new),
            |_, _, _| Ok(Some(Choice::event(ev, now))),
        );
        self.store.release(instance, &owner)?;
        match taken? {
            Taken::Decided(d) => Ok(d),
            Taken::Idle => Err(EngineError::NoInstance(instance.into())),
            Taken::Lost { .. } => Err(EngineError::Busy(instance.into())),
        }
    }

    /// The instance's state as `qflow run`'s last line says it:
    /// `{"status": "completed"}`, `{"status": "failed", "code": …}`, or
    /// `{"status": "waiting", …}` with what it waits for.
    pub fn status(&self, instance: &str) -> Result<Value, EngineError> {
        if self.store.instance(instance)?.is_none() {
            return Err(EngineError::NoInstance(instance.into()));
        }
        Ok(driver::final_state(&self.store, instance)?)
    }

    /// The instance's variables, as persisted.
    pub fn variables(&self, instance: &str) -> Result<Value, EngineError> {
        let facts = match self.store.facts(instance) {
            Err(StoreError::NoInstance(_)) => return Err(EngineError::NoInstance(instance.into())),
            other => other?,
        };
        Ok(Value::Object(
            facts
                .snapshot
                .variables()
                .into_iter()
                .collect::<Map<_, _>>(),
        ))
    }

    /// The instance as plain data (nodes, timers, outbox, history, …).
    pub fn inspect(&mut self, instance: &str) -> Result<Inspection, EngineError> {
        let row = self
            .store
            .instance(instance)?
            .ok_or_else(|| EngineError::NoInstance(instance.into()))?;
        let graph = self.graph(row.deployment_id)?;
        Ok(Inspection::read(&self.store, &graph, instance)?)
    }
}

/// The clock an instance is decided on: an instance started on a virtual
/// clock (at its epoch, 0) keeps virtual time under a wall-clock engine, so
/// its decisions stay on its own time line rather than jumping decades.
fn clock_of(engine: Time, started_ms: i64) -> Time {
    if started_ms < VIRTUAL_EPOCH_LIMIT_MS {
        Time::Virtual
    } else {
        engine
    }
}

fn next_event<C: Clock>(
    store: &Store,
    graph: &Graph,
    world: &dyn World,
    clock: &C,
    instance: &str,
    facts: &crate::store::InstanceFacts,
) -> Result<Option<Choice>, RunError> {
    let next = Ctx {
        store,
        graph,
        scenario: world,
        clock,
        instance,
        started_ms: facts.started_ms,
        until_ms: None,
        effects: None,
    }
    .next_event(facts)?;
    Ok(match next {
        Next::Event(ev) => Some(Choice::event(ev, clock.now_ms())),
        Next::Idle => None,
    })
}

/// The model the crate's examples run: `payments.charge` between a start
/// and an end, with a retry policy.
pub const EXAMPLE_MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:example">
  <process id="charge" isExecutable="true">
    <startEvent id="start" name="Order placed"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" name="Charge card" q:task="payments.charge">
      <extensionElements>
        <q:retry maxAttempts="4" backoff="PT1M PT5M PT25M" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="done"/>
    <endEvent id="done" name="Charged"/>
  </process>
</definitions>
"#;

#[cfg(test)]
mod tests;
